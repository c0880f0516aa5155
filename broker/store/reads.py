"""The store's read paths as functions of the files they read: a pull's scan of consume-queue
units, the end of what consumers may read (controller mode), the binary search of an offset by
store time, and a query by key checked record by record."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from pyrocketmq.remoting.message import KEY_SEPARATOR, MessageDecodeError, Prop, decode_message

from .commit_log import CommitLog
from .consume_queue import FILLER_SIZE, UNIT
from .index_service import IndexService
from .settings import StoreSettings
from .values import GetMessageStatus, QueryMessageResult

log = logging.getLogger("pyrocketmq.broker.store")


@dataclass(slots=True)
class _Scan:
    status: GetMessageStatus
    scanned: int
    buffers: list[memoryview] = field(default_factory=list)
    count: int = 0
    total: int = 0
    max_phy_pulling: int = 0


def scan_units(
    units: memoryview | bytes,
    commit_log: CommitLog,
    settings: StoreSettings,
    window: int,
    max_msgs: int,
    max_bytes: int | None,
    tag_filter: Callable[[int], bool] | None,
    record_filter: Callable[[memoryview], bool] | None = None,
) -> _Scan:
    """Collect the records ``units`` (consume-queue units from the pull's offset on) point at, by
    RocketMQ's ``getMessage`` rules: 256 KiB / 32 messages while the data is within ``window``
    bytes of the commitlog head, 64 KiB / 8 beyond (``max_bytes`` replaces the byte limit); the
    first message always goes; ``tag_filter(tagsCode)`` False skips a message (still scanned), and so
    does ``record_filter(record)`` False (RocketMQ's ``isMatchedByCommitLog``: SQL92 selectors)."""
    S = GetMessageStatus
    st = settings
    max_phys = commit_log.max_offset
    status = S.NO_MATCHED_MESSAGE
    buffers: list[memoryview] = []
    total = 0
    count = 0
    scanned = 0
    max_phy_pulling = 0
    next_phy_file_start = -1
    max_scan = max(800, max_msgs)  # RocketMQ: max(16000 bytes, maxMsgNums units) of index
    n = min(len(units) // 20, max_scan)
    for phys, size, tags in UNIT.iter_unpack(units[: n * 20]):
        if size == FILLER_SIZE:  # a hole in the queue: nothing to read there
            scanned += 1
            continue
        max_phy_pulling = phys
        if phys < next_phy_file_start:
            scanned += 1
            continue
        if count:  # RocketMQ's isTheBatchFull; the first message always goes
            if count >= max_msgs:
                break
            if max_phys - phys > window:
                limit_bytes, limit_count = (
                    st.max_transfer_bytes_on_message_in_disk,
                    st.max_transfer_count_on_message_in_disk,
                )
            else:
                limit_bytes, limit_count = (
                    st.max_transfer_bytes_on_message_in_memory,
                    st.max_transfer_count_on_message_in_memory,
                )
            if max_bytes is not None:
                limit_bytes = max_bytes
            if total + size > limit_bytes or count >= limit_count:
                break
        scanned += 1
        if tag_filter is not None and not tag_filter(tags):
            continue
        data = commit_log.get_data(phys, size)
        if data is None:
            if not total:
                status = S.MESSAGE_WAS_REMOVING
            next_phy_file_start = commit_log.roll_next_file(phys)
            continue
        if record_filter is not None and not record_filter(data):
            continue
        buffers.append(data)
        total += size
        count += 1
        status = S.FOUND
        next_phy_file_start = -1
    return _Scan(status, scanned, buffers, count, total, max_phy_pulling)


def readable_end(unit_at: Callable[[int], tuple[int, int, int] | None], lo: int, hi: int, limit: int) -> int:
    """The first logical offset in ``[lo, hi)`` whose record ends past commitlog offset ``limit``
    (``hi`` when none does): a queue's records end in increasing commitlog order, so a binary
    search over ``unit_at(offset)`` (commitlog offset, size, tags code) finds it. A filler or a
    missing unit counts as readable."""
    while lo < hi:
        mid = (lo + hi) // 2
        unit = unit_at(mid)
        if unit is None or unit[1] == FILLER_SIZE or unit[0] + unit[1] <= limit:
            lo = mid + 1
        else:
            hi = mid
    return lo


def offset_by_time(min_off: int, max_off: int, time_at: Callable[[int], int], ts_ms: int) -> int:
    """Logical offset whose store time is ``ts_ms`` (the first such), else the closer neighbour
    (the earlier one on a tie); ``time_at(offset)`` is -1 for an unreadable unit."""
    lo, hi = min_off, max_off  # find the first offset whose time is >= ts_ms
    while lo < hi:
        mid = (lo + hi) // 2
        if time_at(mid) < ts_ms:  # unreadable units (-1) count as older
            lo = mid + 1
        else:
            hi = mid
    if lo >= max_off:
        return max_off - 1
    right_ts = time_at(lo)
    if right_ts == ts_ms or lo == min_off:
        return lo
    left_ts = time_at(lo - 1)
    if left_ts < 0:
        return lo
    return lo - 1 if ts_ms - left_ts <= right_ts - ts_ms else lo


def query_by_key(
    commit_log: CommitLog, index: IndexService, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int
) -> QueryMessageResult:
    """See :meth:`MessageStore.query_message`."""
    if not key:  # nothing is indexed under an empty key; "" would match any record without KEYS
        return QueryMessageResult([], *index.last_update)
    max_phys = commit_log.max_offset
    found: dict[int, memoryview] = {}

    def accept(phys: int) -> bool:
        if phys >= max_phys:
            return False
        rec = commit_log.get_record(phys)
        if rec is None:
            return False
        try:
            msg, _ = decode_message(rec, read_body=False)
        except MessageDecodeError:
            return False
        if msg.commitlog_offset != phys or msg.topic != topic:
            return False
        if not begin_ts <= msg.store_timestamp <= end_ts:
            return False
        props = msg.properties
        if props.get(Prop.UNIQ_KEY) != key and key not in props.get(Prop.KEYS, "").split(KEY_SEPARATOR):
            return False
        found[phys] = rec
        return True

    offsets, last_ts, last_phy = index.query(topic, key, max_num, begin_ts, end_ts, accept)
    return QueryMessageResult([found[p] for p in offsets], last_ts, last_phy)
