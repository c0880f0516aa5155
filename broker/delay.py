"""Delay levels and consumer send-back decisions: pure functions, no I/O, no clock of their own.

Delay levels (``messageDelayLevel``, default ``1s 5s 10s 30s 1m … 2h``) are numbered from 1; level N
lives in ``SCHEDULE_TOPIC_XXXX`` queue N-1, whose consume-queue ``tagsCode`` is the delivery time
(store time + the level's delay, in ms). A level above the highest clamps to the highest.

Send-back (CONSUMER_SEND_MSG_BACK, RocketMQ 4.9): a message that failed consumption goes to
``%RETRY%<group>`` with ``reconsumeTimes + 1`` through delay level ``3 + reconsumeTimes`` (or the
level the client asked for), or, once ``reconsumeTimes >= maxReconsumeTimes`` or when the client
asks for a negative level, to ``%DLQ%<group>`` (one queue, no delay).

>>> decide_send_back(reconsume_times=0, max_reconsume_times=16, delay_level=0)
SendBackDecision(dead_letter=False, delay_level=3)
>>> decide_send_back(reconsume_times=16, max_reconsume_times=16, delay_level=0)
SendBackDecision(dead_letter=True, delay_level=0)
"""

from __future__ import annotations

from dataclasses import dataclass

from pyrocketmq.remoting.message import MessageExt, Prop

from .restore import restored, restored_in_real_topic
from .store.values import MessageInner

DLQ_QUEUE_NUMS = 1
"""Queues of a ``%DLQ%<group>`` topic (Java's ``DLQ_NUMS_PER_GROUP``)."""


def clamp_level(level: int, levels: list[int]) -> int:
    """``level`` within ``1..len(levels)`` (0 or less stays as is: no delay)."""
    return min(level, len(levels)) if level > 0 else level


def level_to_queue_id(level: int) -> int:
    return level - 1


def queue_id_to_level(queue_id: int) -> int:
    return queue_id + 1


def deliver_timestamp(store_ms: int, level: int, levels: list[int]) -> int:
    """When a message stored at ``store_ms`` with delay ``level`` is due."""
    return store_ms + levels[clamp_level(level, levels) - 1]


def correct_deliver_timestamp(now_ms: int, deliver_ms: int, level_ms: int) -> int:
    """A due time further ahead than the level's whole delay can only come from a clock that went
    back (or a changed ``messageDelayLevel``): deliver it now rather than hold it for too long."""
    return now_ms if deliver_ms > now_ms + level_ms else deliver_ms


def is_due(now_ms: int, deliver_ms: int, level_ms: int) -> bool:
    return correct_deliver_timestamp(now_ms, deliver_ms, level_ms) <= now_ms


def delivered_inner(msg: MessageExt) -> MessageInner | None:
    """The message a due schedule entry becomes: its REAL_TOPIC/REAL_QID, DELAY removed, born and
    store hosts, born time, flag, sys flag and reconsume times kept. None when it names no topic."""
    return restored_in_real_topic(msg, {k: v for k, v in msg.properties.items() if k != Prop.DELAY})


@dataclass(frozen=True, slots=True)
class SendBackDecision:
    dead_letter: bool
    """True: to ``%DLQ%<group>``; False: to ``%RETRY%<group>`` through ``delay_level``."""
    delay_level: int
    """The delay level of the retry (0 for the DLQ)."""


def decide_send_back(*, reconsume_times: int, max_reconsume_times: int, delay_level: int) -> SendBackDecision:
    """Where a failed message goes (see the module docstring)."""
    if reconsume_times >= max_reconsume_times or delay_level < 0:
        return SendBackDecision(True, 0)
    return SendBackDecision(False, delay_level if delay_level > 0 else 3 + reconsume_times)


def send_back_inner(
    msg: MessageExt,
    *,
    topic: str,
    queue_id: int,
    delay_level: int,
    offset_msg_id: str,
) -> MessageInner:
    """The message stored for a send-back of ``msg`` (the original, looked up by commitlog offset).

    ``RETRY_TOPIC`` keeps the topic it was first consumed from and ``ORIGIN_MESSAGE_ID`` its first
    offset id (both only set when absent); ``DELAY`` is the retry's level (none for the DLQ);
    ``reconsumeTimes`` grows by one; body, flag, sys flag, born time and hosts are the original's.
    """
    props = dict(msg.properties)
    props.setdefault(Prop.RETRY_TOPIC, msg.topic)
    if not props.get(Prop.ORIGIN_MESSAGE_ID):
        props[Prop.ORIGIN_MESSAGE_ID] = offset_msg_id
    props.pop(Prop.DELAY, None)
    props.pop(Prop.REAL_TOPIC, None)
    props.pop(Prop.REAL_QID, None)
    if delay_level > 0:
        props[Prop.DELAY] = str(delay_level)
    return restored(msg, topic=topic, queue_id=queue_id, properties=props,
                    reconsume_times=msg.reconsume_times + 1, prepared_transaction_offset=0)
