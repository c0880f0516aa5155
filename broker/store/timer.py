"""Timer messages: delivery at any millisecond (RocketMQ 5's timer), the pure part — no I/O, no clock.

A message asks for a time with one of (first one present wins, as in RocketMQ 5):

* ``TIMER_DELAY_SEC`` / ``TIMER_DELAY_MS`` — that long after the broker stores it;
* ``TIMER_DELIVER_MS`` — at that epoch millisecond (5.x ``setDeliverTimeMs``);
* ``__STARTDELIVERTIME`` — the same, under the name older commercial 4.x clients use.

A delay level (``DELAY``) wins over all of them, and a time already reached is an ordinary message.
Otherwise the broker stores the message in ``rmq_sys_wheel_timer`` queue 0 with ``REAL_TOPIC`` /
``REAL_QID`` / ``TIMER_OUT_MS`` (its due time, also the consume-queue unit's tags code), and the
timer service (:mod:`pyrocketmq.broker.timer_service`) puts it back in its topic when due. Further ahead than
``timerMaxDelaySec`` is refused, as RocketMQ 5 refuses it.

The timer topic's other queues hold records the store stores as they come (the recall markers of
:mod:`pyrocketmq.broker.timer_recall`, whose ``TIMER_OUT_MS`` is their tags code too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pyrocketmq.remoting.message import Prop, SysFlag, encode_properties, set_raw_properties
from pyrocketmq.remoting.names import TIMER_TOPIC

from .dispatch import NO_DISPATCH
from .values import MessageInner

REQUEST_KEYS = (Prop.TIMER_DELAY_SEC, Prop.TIMER_DELAY_MS, Prop.TIMER_DELIVER_MS, Prop.START_DELIVER_TIME)
"""The properties that ask for a time, in the order they are read."""


class TimerRefused(ValueError):
    """The timer the message asks for cannot be kept; the message says why (MESSAGE_ILLEGAL)."""


def deliver_ms(properties: Mapping[str, str], now_ms: int) -> int | None:
    """When the message asks to be delivered (epoch ms), or None when it asks nothing (or a delay
    level does). TimerRefused for a value that is not a whole number."""
    if properties.get(Prop.DELAY) not in (None, "", "0"):
        return None
    for key in REQUEST_KEYS:
        text = properties.get(key)
        if text is None or text == "":
            continue
        try:
            value = int(text)
        except ValueError:
            raise TimerRefused(f"timer message illegal: {key}={text[:40]!r} is not a whole number") from None
        if key == Prop.TIMER_DELAY_SEC:
            return now_ms + value * 1000
        if key == Prop.TIMER_DELAY_MS:
            return now_ms + value
        return value
    return None


def timer_due(properties: Mapping[str, str], now_ms: int, max_delay_s: int) -> int | None:
    """The due time a message must wait for in the timer store, None when it goes straight to its
    topic; TimerRefused when it asks for more than ``max_delay_s`` ahead."""
    due = deliver_ms(properties, now_ms)
    if due is None or due <= now_ms:
        return None
    if due - now_ms > max_delay_s * 1000:
        raise TimerRefused(f"timer message illegal: the delay {due - now_ms} ms is over the max delay "
                           f"{max_delay_s * 1000} ms (timerMaxDelaySec)")
    return due


def names_a_timer(properties: Mapping[str, str]) -> bool:
    """Whether the properties hold any timer request key (every put asks: one C-level test)."""
    return not properties.keys().isdisjoint(REQUEST_KEYS)


def hold_for_timer(msg: MessageInner, now_ms: int, max_delay_s: int) -> MessageInner:
    """``msg`` in the timer store when it asks for a later time, else ``msg``; TimerRefused."""
    if not names_a_timer(msg.properties):
        return msg
    due = timer_due(msg.properties, now_ms, max_delay_s)
    return msg if due is None else to_timer_topic(msg, due, now_ms)


def to_timer_topic(msg: MessageInner, due_ms: int, now_ms: int) -> MessageInner:
    """``msg`` held in the timer store until ``due_ms``; a prepared or rolled-back transaction
    message is left alone (it is delivered, if ever, by its commit)."""
    if (msg.sys_flag & SysFlag.TRANSACTION_MASK) in NO_DISPATCH:
        return msg
    extra = {Prop.REAL_TOPIC: msg.topic, Prop.REAL_QID: str(msg.queue_id), Prop.TIMER_OUT_MS: str(due_ms),
             Prop.TIMER_ENQUEUE_MS: str(now_ms)}
    props = {**{k: v for k, v in msg.properties.items() if k not in extra}, **extra}
    raw = (
        encode_properties(props)
        if msg.properties_bytes is None
        else set_raw_properties(msg.properties_bytes, extra)
    )
    return replace(msg, topic=TIMER_TOPIC, queue_id=0, properties=props, properties_bytes=raw)


def timer_tags_code(properties: Mapping[str, str], store_ms: int) -> int:
    """The consume-queue tags code of a timer-store entry: its due time."""
    try:
        return int(properties.get(Prop.TIMER_OUT_MS) or store_ms)
    except ValueError:
        return store_ms
