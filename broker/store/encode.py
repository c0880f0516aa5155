"""The put path's pure steps: a message's record bytes, its consume-queue tags code, and the
redirection of a delayed message to its level's schedule queue. No state, no I/O."""

from __future__ import annotations

import logging
from dataclasses import replace

from pyrocketmq.remoting.message import (
    MAX_PROPERTIES_BYTES,
    MAX_TOPIC_BYTES,
    Prop,
    SysFlag,
    encode_properties,
    set_raw_properties,
    tags_code,
)
from pyrocketmq.remoting.names import SCHEDULE_TOPIC, TIMER_TOPIC

from .dispatch import NO_DISPATCH
from .native import encode_one
from .timer import timer_tags_code
from .values import MessageInner, PutMessageStatus

log = logging.getLogger("pyrocketmq.broker.store")


def tags_code_of(
    topic: str, props: dict[str, str], store_ts: int, given: int | None, delay_levels: list[int]
) -> int:
    """The consume-queue unit's tags code; for the schedule topic, the time the message is due."""
    if topic == SCHEDULE_TOPIC:
        level_s = props.get(Prop.DELAY)
        if level_s:
            try:
                level = min(int(level_s), len(delay_levels))
            except ValueError:
                level = 0
            if level > 0:
                return store_ts + delay_levels[level - 1]
            return store_ts + 1000
    if topic == TIMER_TOPIC:
        return timer_tags_code(props, store_ts)
    return tags_code(props.get(Prop.TAGS)) if given is None else given


def host_flags(sys_flag: int, born_host: bytes, store_host: bytes) -> int:
    """``sys_flag`` with the BORNHOST_V6 / STOREHOST_V6 bits saying how long the packed hosts are."""
    sys_flag &= ~(SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6)
    if len(born_host) == 20:
        sys_flag |= SysFlag.BORNHOST_V6
    if len(store_host) == 20:
        sys_flag |= SysFlag.STOREHOST_V6
    return sys_flag


def encode_inner(
    msg: MessageInner, now: int, default_store_host: bytes
) -> tuple[bytearray | None, PutMessageStatus]:
    """The record for ``msg`` stored at ``now`` (offsets patched at append), or why it is refused."""
    topic = msg.topic.encode()
    if len(topic) > MAX_TOPIC_BYTES:
        log.warning("put refused: topic of %d bytes", len(topic))
        return None, PutMessageStatus.MESSAGE_ILLEGAL
    props = (
        msg.properties_bytes if msg.properties_bytes is not None else encode_properties(msg.properties)
    )
    if len(props) > MAX_PROPERTIES_BYTES:
        log.warning("put refused: properties of %d bytes", len(props))
        return None, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    store_host = msg.store_host or default_store_host
    sys_flag = host_flags(msg.sys_flag, msg.born_host, store_host)
    try:
        rec = encode_one(msg, topic, props, sys_flag, store_host, now)
    except ValueError as e:
        log.warning("put refused: %s", e)
        return None, PutMessageStatus.MESSAGE_ILLEGAL
    return rec, PutMessageStatus.PUT_OK


def to_schedule_topic(msg: MessageInner, delay_levels: list[int]) -> MessageInner:
    """``msg`` redirected to its delay level's schedule queue, or ``msg`` itself (no delay)."""
    if (msg.sys_flag & SysFlag.TRANSACTION_MASK) in NO_DISPATCH:
        return msg
    try:
        level = int(msg.properties[Prop.DELAY])
    except ValueError:
        return msg
    if level <= 0 or not delay_levels:
        return msg
    level = min(level, len(delay_levels))
    props = dict(msg.properties)
    props.pop(Prop.REAL_TOPIC, None)
    props.pop(Prop.REAL_QID, None)
    props[Prop.DELAY] = str(level)
    props[Prop.REAL_TOPIC] = msg.topic
    props[Prop.REAL_QID] = str(msg.queue_id)
    raw = msg.properties_bytes
    if raw is None:
        raw = encode_properties(props)
    else:
        raw = set_raw_properties(raw, {k: props[k] for k in (Prop.DELAY, Prop.REAL_TOPIC, Prop.REAL_QID)})
    return replace(msg, topic=SCHEDULE_TOPIC, queue_id=level - 1, properties=props, properties_bytes=raw)
