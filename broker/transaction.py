"""Transactional messages: the pure part — names, message rewrites, END_TRANSACTION validation and
the check decisions. No I/O, no clock of its own (Apache RocketMQ 4.9's transactional message
service is the model).

Life of a transactional message:

1. the producer sends it with ``sysFlag`` PREPARED (0x4) and ``TRAN_MSG=true``; the broker stores a
   *half message* in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with ``REAL_TOPIC``/``REAL_QID`` naming its
   destination and the transaction bits cleared (so it is dispatched to the half queue, and no
   consumer of the real topic sees it) — :func:`half_inner`;
2. END_TRANSACTION (37) names it by commitlog offset and is checked against it (:func:`end_problem`:
   ``PGROUP`` = producer group, half queue offset = ``tranStateTableOffset``, commitlog offset =
   ``commitLogOffset``); COMMIT stores the real message (:func:`committed_inner`: sysFlag | 0x8,
   ``preparedTransactionOffset`` = the half's commitlog offset, ``REAL_*`` and ``TRAN_MSG`` gone) and
   an *op record*; ROLLBACK stores the op record only (:func:`op_inner`: ``RMQ_SYS_TRANS_OP_HALF_TOPIC``
   queue 0, tag ``d``, body = the half queue offset in decimal);
3. the check service walks the half queue from its saved offset; a half message with an op record is
   done, one younger than ``transactionTimeOut`` stops the walk (the queue is in store order), one
   checked ``transactionCheckMax`` times goes to ``TRANS_CHECK_MAX_TIME_TOPIC``; any other is stored
   again at the half queue's end with ``TRANSACTION_CHECK_TIMES`` + 1 and the producer group is asked
   (CHECK_TRANSACTION_STATE, 39) — :func:`decide`.

Invariant: the service's progress (consume offsets of the half and op queues under
``CID_RMQ_SYS_TRANS``) only moves over entries that are decided for good, so a restart re-decides
nothing that was decided and loses nothing that was not (:func:`advance_op_offset`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import replace

from pyrocketmq.remoting.message import MessageExt, Prop, SysFlag, encode_properties, tags_code
from pyrocketmq.remoting.names import TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC

from .restore import restored, restored_in_real_topic, restored_topic
from .store.values import MessageInner

HALF_TOPIC = TRANS_HALF_TOPIC
OP_TOPIC = TRANS_OP_HALF_TOPIC
CHECK_MAX_TOPIC = TRANS_CHECK_MAX_TIME_TOPIC
SYS_GROUP = "CID_RMQ_SYS_TRANS"
"""The group under which the check service's half/op queue progress is kept (as Java does)."""
REMOVE_TAG = "d"

COMMIT = SysFlag.TRANSACTION_COMMIT
ROLLBACK = SysFlag.TRANSACTION_ROLLBACK
UNKNOWN = SysFlag.TRANSACTION_NOT_TYPE

_STRIPPED_ON_END = (Prop.REAL_TOPIC, Prop.REAL_QID, Prop.TRAN_MSG)


def is_prepared(sys_flag: int) -> bool:
    return sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_PREPARED


def half_inner(inner: MessageInner) -> MessageInner:
    """The half message stored for a prepared send of ``inner`` (see the module docstring)."""
    props = {k: v for k, v in inner.properties.items() if k != Prop.DELAY}  # a half message is never delayed
    props[Prop.REAL_TOPIC] = inner.topic
    props[Prop.REAL_QID] = str(inner.queue_id)
    raw = encode_properties(props)
    # keep what only the bytes hold (CLUSTER, appended by the send path)
    if inner.properties_bytes:
        for pair in bytes(inner.properties_bytes).split(b"\x02"):
            key = pair.split(b"\x01", 1)[0].decode(errors="replace")
            if pair and key not in props and key != Prop.DELAY:
                raw += (b"\x02" if raw and not raw.endswith(b"\x02") else b"") + pair
    return replace(
        inner,
        topic=HALF_TOPIC,
        queue_id=0,
        sys_flag=inner.sys_flag & ~SysFlag.TRANSACTION_MASK,
        properties=props,
        properties_bytes=raw,
        tags_code=tags_code(props.get(Prop.TAGS)),
    )


def end_problem(
    msg: MessageExt, *, producer_group: str, tran_state_table_offset: int, commit_log_offset: int
) -> str | None:
    """Why an END_TRANSACTION does not match the half message it names (None: it matches)."""
    if msg.topic != HALF_TOPIC:
        return f"the message at commitlog offset {commit_log_offset} is not a half message"
    if msg.properties.get(Prop.PGROUP) != producer_group:
        return f"the producer group differs: {msg.properties.get(Prop.PGROUP)!r} != {producer_group!r}"
    if msg.queue_offset != tran_state_table_offset:
        return f"the transaction state table offset differs: {msg.queue_offset} != {tran_state_table_offset}"
    if msg.commitlog_offset != commit_log_offset:
        return f"the commitlog offset differs: {msg.commitlog_offset} != {commit_log_offset}"
    return None


def committed_inner(msg: MessageExt) -> MessageInner | None:
    """The real message a committed half message ``msg`` becomes (None: it names no topic)."""
    props = {k: v for k, v in msg.properties.items() if k not in _STRIPPED_ON_END}
    sys_flag = (msg.sys_flag & ~SysFlag.TRANSACTION_MASK) | SysFlag.TRANSACTION_COMMIT
    return restored_in_real_topic(
        msg, props, prepared_transaction_offset=msg.commitlog_offset, sys_flag=sys_flag
    )


def op_inner(half_queue_offset: int, *, store_host: bytes, born_timestamp: int) -> MessageInner:
    """The op record that marks half queue offset ``half_queue_offset`` resolved."""
    props = {Prop.TAGS: REMOVE_TAG}
    return MessageInner(
        topic=OP_TOPIC,
        body=str(half_queue_offset).encode(),
        properties=props,
        properties_bytes=encode_properties(props),
        queue_id=0,
        born_timestamp=born_timestamp,
        born_host=store_host,
        store_host=store_host,
        tags_code=tags_code(REMOVE_TAG),
    )


def parse_op_body(body: bytes) -> int | None:
    """The half queue offset an op record names (None: not an op record we understand)."""
    try:
        return int(bytes(body).decode().strip())
    except (UnicodeDecodeError, ValueError):
        return None


def check_times(msg: MessageExt) -> int:
    try:
        return int(msg.properties.get(Prop.TRANSACTION_CHECK_TIMES, "0"))
    except ValueError:
        return 0


def rechecked_inner(msg: MessageExt, times: int) -> MessageInner:
    """``msg`` stored again at the half queue's end with ``TRANSACTION_CHECK_TIMES`` = ``times``."""
    props = dict(msg.properties)
    props[Prop.TRANSACTION_CHECK_TIMES] = str(times)
    return restored(msg, topic=HALF_TOPIC, queue_id=0, properties=props)


def discarded_inner(msg: MessageExt) -> MessageInner:
    """``msg`` moved to ``TRANS_CHECK_MAX_TIME_TOPIC`` queue 0 (kept for an operator to look at)."""
    return restored(msg, topic=CHECK_MAX_TOPIC, queue_id=0, properties=dict(msg.properties))


def check_body_message(msg: MessageExt) -> MessageExt:
    """The message a CHECK_TRANSACTION_STATE carries: the half message under its real topic/queue."""
    where = restored_topic(msg)
    if where is None:
        return msg
    return replace(msg, topic=where[0], queue_id=where[1])


class Verdict(enum.Enum):
    RESOLVED = "resolved"
    """An op record exists: nothing to do."""
    WAIT = "wait"
    """Too young to check: stop the walk here (later entries are younger still)."""
    CHECK = "check"
    """Store again with one more check and ask the producer group."""
    DISCARD = "discard"
    """Checked too often (or kept too long): to ``TRANS_CHECK_MAX_TIME_TOPIC``."""


def decide(
    *,
    resolved: bool,
    times: int,
    born_ms: int,
    now_ms: int,
    timeout_ms: int,
    check_max: int,
    immunity_ms: int | None = None,
    reserved_ms: int | None = None,
) -> Verdict:
    """What to do with one half message (Java's order: resolved, discard, too young, check).

    ``immunity_ms`` is the message's ``CHECK_IMMUNITY_TIME_IN_SECONDS`` (in ms) when it set one;
    ``reserved_ms`` the commitlog's keep time (a half message older than that is discarded).

    >>> decide(resolved=False, times=0, born_ms=0, now_ms=10_000, timeout_ms=6_000, check_max=15)
    <Verdict.CHECK: 'check'>
    >>> decide(resolved=False, times=15, born_ms=0, now_ms=10_000, timeout_ms=6_000, check_max=15)
    <Verdict.DISCARD: 'discard'>
    """
    if resolved:
        return Verdict.RESOLVED
    age = now_ms - born_ms
    if times >= check_max or (reserved_ms is not None and age > reserved_ms):
        return Verdict.DISCARD
    if age < 0:  # a born time ahead of ours (a skewed producer clock): check rather than wait forever
        return Verdict.CHECK
    if age < (timeout_ms if immunity_ms is None else max(immunity_ms, 0)):
        return Verdict.WAIT
    return Verdict.CHECK


def immunity_of(msg: MessageExt) -> int | None:
    raw = msg.properties.get(Prop.CHECK_IMMUNITY_TIME_IN_SECONDS)
    if raw is None:
        return None
    try:
        return int(raw) * 1000
    except ValueError:
        return None


def advance_op_offset(op_offset: int, ops: Iterable[tuple[int, int | None]], half_offset: int) -> int:
    """The op queue offset to save: past the leading op records that name half offsets below
    ``half_offset`` (decided for good) or nothing readable; ``ops`` are ``(op offset, half offset)``
    in op queue order from ``op_offset``.

    >>> advance_op_offset(5, [(5, 1), (6, 9), (7, 2)], half_offset=3)
    6
    """
    for off, named in ops:
        if off != op_offset or (named is not None and named >= half_offset):
            break
        op_offset = off + 1
    return op_offset
