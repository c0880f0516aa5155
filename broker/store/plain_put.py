"""The common single send put in one compiled call: the record written in place in the newest
commitlog segment, numbered, its consume-queue unit beside it (``native.put_record``), then the
rest of the dispatch chain. ``MessageStore.put_message`` asks :func:`plain_enough` and :func:`put_in_place`
first; whatever they decline (a delay level, a timer, a half message, a new queue, a segment or
consume-queue file without room, a field that does not fit) the general put does, and it writes the
same bytes (``tests/unit/broker/store/test_put_plain.py`` holds them to it)."""

from __future__ import annotations

from pyrocketmq.remoting.message import Prop, SysFlag
from pyrocketmq.remoting.names import SCHEDULE_TOPIC, TIMER_TOPIC

from .commit_log import CommitLog
from .consume_queue import ConsumeQueue
from .dispatch import NO_DISPATCH, DispatchChain, DispatchRequest
from .native import put_record
from .settings import CQ_UNIT_SIZE
from .timer import names_a_timer
from .values import MessageInner, PutMessageStatus, PutResult


def plain_enough(msg: MessageInner, timers: bool) -> bool:
    """The message is stored where it is sent, as it is: its properties encoded and its store host
    given already, no delay level, no timer (while ``timers`` are kept), no transaction offset, not a
    prepared or rolled-back transaction, not for the schedule or timer topic."""
    properties = msg.properties
    return not (
        msg.properties_bytes is None
        or not msg.store_host
        or msg.prepared_transaction_offset
        or Prop.DELAY in properties
        or (timers and names_a_timer(properties))
        or (msg.sys_flag & SysFlag.TRANSACTION_MASK) in NO_DISPATCH
        or msg.topic == SCHEDULE_TOPIC
        or msg.topic == TIMER_TOPIC
    )


def put_in_place(commit_log: CommitLog, cq: ConsumeQueue, chain: DispatchChain, now: int, max_size: int,
                 msg: MessageInner) -> PutResult | None:
    """The put of a :func:`plain_enough` message into ``cq`` at store time ``now``; None, with nothing
    written, when it does not fit the newest segment or consume-queue file, or the chain does not start
    with the consume-queue unit."""
    unit_files = cq.queue.files
    segments = commit_log.queue.files
    if not unit_files or not segments or not chain.units_first:
        return None
    uf = unit_files[-1]
    seg = segments[-1]
    unit_pos = uf.wrote_position
    qoff = (uf.file_from_offset + unit_pos) // CQ_UNIT_SIZE
    pos = seg.wrote_position
    done = put_record(
        seg.buffer(), pos, seg.file_from_offset, uf.buffer(), unit_pos, msg, qoff, now, max_size
    )
    if done is None:
        return None
    size, msg_id = done
    phys = seg.file_from_offset + pos
    seg.wrote_position = pos + size
    commit_log.last_store_timestamp = now
    uf.wrote_position = unit_pos + CQ_UNIT_SIZE
    cq.max_physic_offset = phys + size
    chain.dispatch_checked(DispatchRequest(msg.topic, msg.queue_id, qoff, phys, size, msg.tags_code, now,
                                           msg.properties, msg.sys_flag, False, cq))
    return PutResult(PutMessageStatus.PUT_OK, phys, size, msg_id, qoff, 1, now)
