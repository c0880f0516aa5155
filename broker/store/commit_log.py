"""The commitlog: every topic's messages, appended as records (``remoting.message`` layout).

Segments (``MappedFileQueue``) hold whole records only. When a record does not fit with 8 bytes to
spare, the rest of the segment gets a blank record and the record goes to the next segment::

    ... | record | record | int32 remaining | int32 0xCBD43194 | zeros ... |   next segment: | record |

Invariants: a record never spans segments; the PHYSICALOFFSET inside each record is its absolute
offset; every segment but the last is complete (ends with a record flush to its end or a blank);
bytes after the last valid record are zeros (recovery makes them so).

Recovery walks records from a starting segment and stops at the first one that is not valid
(wrong magic, impossible size, fields that do not add up to the size, a PHYSICALOFFSET that is not
where the record sits, a body CRC mismatch); everything from there on is dropped and zeroed.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Callable, Iterator

from pyrocketmq.remoting.message import (
    BLANK_MAGIC,
    HEAD_SIZE,
    MAGIC,
    POS_PHYSICAL_OFFSET,
    POS_SYS_FLAG,
    MessageExt,
    SysFlag,
    decode_message,
    patch_record,
    store_timestamp_pos,
)

from .mapped_file import MappedFile
from .mapped_file_queue import MappedFileQueue, StoreError
from .native import patch_offsets
from .settings import StoreSettings

log = logging.getLogger("pyrocketmq.broker.store")

END_FILE_MIN_BLANK_LENGTH = 8
"""Room always left at a segment's end for the blank record."""

_II = struct.Struct(">iI")
_I = struct.Struct(">i")
_H = struct.Struct(">h")
_Q = struct.Struct(">q")
_BLANK_HEAD = struct.Struct(">iI")

Dispatch = Callable[[MessageExt, int, int], None]
"""Called during recovery with (record decoded without its body, physical offset, size)."""


RecordCheck = tuple[str, int, str]
"""``(kind, size, reason)``; kind is "record", "blank" (end of segment), "end" (zeros: no more
data) or "torn". A plain tuple: recovery makes one per record."""
_END: RecordCheck = ("end", 0, "")


def check_record(buf: memoryview, pos: int, limit: int, expected_phys: int, check_crc: bool) -> RecordCheck:
    """Validate the record at ``pos`` of a segment whose usable bytes end at ``limit``."""
    left = limit - pos
    if left < END_FILE_MIN_BLANK_LENGTH:
        if left <= 0 or not any(buf[pos:limit]):
            return _END
        return ("torn", 0, f"{left} stray bytes at the segment end")
    size, magic = _II.unpack_from(buf, pos)
    if magic == MAGIC:
        if size < HEAD_SIZE or size > left:
            return ("torn", 0, f"size {size} does not fit the {left} bytes left")
        (phys,) = _Q.unpack_from(buf, pos + POS_PHYSICAL_OFFSET)
        if phys != expected_phys:
            return ("torn", 0, f"PHYSICALOFFSET field says {phys}")
        # Field by field without building a message (recovery may walk gigabytes): the lengths
        # must add up to TOTALSIZE exactly.
        end = pos + size
        (sys_flag,) = _I.unpack_from(buf, pos + POS_SYS_FLAG)
        bpos = pos + store_timestamp_pos(sys_flag) + 8 + (20 if sys_flag & SysFlag.STOREHOST_V6 else 8) + 12
        if bpos + 4 > end:
            return ("torn", 0, f"TOTALSIZE {size} is shorter than the header")
        (blen,) = _I.unpack_from(buf, bpos)
        tpos = bpos + 4 + blen
        if blen < 0 or tpos + 1 > end:
            return ("torn", 0, f"body length {blen} runs past TOTALSIZE {size}")
        tlen = buf[tpos]
        ppos = tpos + 1 + tlen
        if ppos + 2 > end:
            return ("torn", 0, f"topic length {tlen} runs past TOTALSIZE {size}")
        (plen,) = _H.unpack_from(buf, ppos)
        if ppos + 2 + plen != end:
            return ("torn", 0, f"TOTALSIZE {size} but its fields take {ppos + 2 + plen - pos}")
        # The CRC covers only the body. A tear that zeroed the record's tail (topic, properties)
        # shows as a NUL in the topic or at the end of the properties, which real ones never have.
        if 0 in buf[tpos + 1 : ppos]:
            return ("torn", 0, "NUL byte in the topic")
        if plen and buf[end - 1] == 0:
            return ("torn", 0, "properties end in a NUL byte")
        if check_crc:
            (crc,) = _I.unpack_from(buf, pos + 8)
            actual = zlib.crc32(buf[bpos + 4 : bpos + 4 + blen]) & 0x7FFFFFFF
            if actual != crc:
                return ("torn", 0, f"body CRC {actual:#x} != stored {crc:#x}")
        return ("record", size, "")
    if magic == BLANK_MAGIC:
        if size == left:
            return ("blank", size, "")
        return ("torn", 0, f"blank record of {size} bytes where {left} are left")
    if size == 0 and magic == 0 and not any(buf[pos : min(limit, pos + 4096)]):
        return _END
    return ("torn", 0, f"bad magic {magic:#010x}")


class CommitLog:
    def __init__(self, settings: StoreSettings) -> None:
        self.settings = settings
        self.file_size = settings.mapped_file_size_commit_log
        self.queue = MappedFileQueue(settings.commit_log_dir, self.file_size, keep_fd=True,
                                     synced_often=settings.sync_flush)
        self.last_store_timestamp = 0
        """STORETIMESTAMP of the last record appended (read by the flush thread for the checkpoint)."""

    def load(self) -> None:
        self.queue.load()

    # -- append (the single writer) -------------------------------------------------------------
    def segment_for(self, length: int) -> MappedFile:
        """The segment that will take ``length`` more bytes: pads the current one with a blank record
        and rolls to a new one when it lacks room. ``length`` must fit an empty segment."""
        files = self.queue.files
        mf = files[-1] if files else None
        if mf is None or mf.wrote_position >= self.file_size:
            mf = self.queue.last_for_write(0)
        if length + END_FILE_MIN_BLANK_LENGTH > self.file_size - mf.wrote_position:
            remaining = mf.remaining
            mf.write_at(mf.wrote_position, _BLANK_HEAD.pack(remaining, BLANK_MAGIC))
            mf.wrote_position = self.file_size
            mf = self.queue.last_for_write()
        return mf

    def fits_a_segment(self, length: int) -> bool:
        return length + END_FILE_MIN_BLANK_LENGTH <= self.file_size

    def append(self, records: list[bytearray], queue_offset: int, store_timestamp: int) -> int:
        """Append encoded records of one queue (``queue_offset`` on) back to back in one segment,
        patching each record's QUEUEOFFSET and PHYSICALOFFSET first; the first record's physical
        offset. Raises ``OSError`` when no segment can be created (nothing is written then)."""
        mf = self.segment_for(sum(len(r) for r in records))
        phys0 = phys = mf.file_from_offset + mf.wrote_position
        for i, rec in enumerate(records):
            patch_record(rec, 0, queue_offset + i, phys)
            mf.append(rec)
            phys += len(rec)
        self.last_store_timestamp = store_timestamp
        return phys0

    def append_block(
        self, block: bytearray, queue_offset: int, store_timestamp: int, sizes: list[int]
    ) -> int:
        """:meth:`append` of records already joined in ``block`` (``sizes`` each): patched in one pass."""
        mf = self.segment_for(len(block))
        phys = mf.file_from_offset + mf.wrote_position
        patch_offsets(block, queue_offset, phys, sizes)
        mf.append(block)
        self.last_store_timestamp = store_timestamp
        return phys

    def append_one(self, record: bytearray, queue_offset: int, store_timestamp: int) -> int:
        """:meth:`append` of a single record (the put path's common case, without the loop)."""
        mf = self.segment_for(len(record))
        phys = mf.file_from_offset + mf.wrote_position
        patch_record(record, 0, queue_offset, phys)
        mf.append(record)
        self.last_store_timestamp = store_timestamp
        return phys

    def append_raw(self, phys: int, data: bytes | memoryview) -> None:
        """Append bytes copied from a master's commitlog at ``phys`` (the caller checked that it is
        this log's end, or a segment start of an empty log); records may span calls."""
        view = memoryview(data)
        while view:
            mf = self.queue.last_for_write(phys)
            n = min(len(view), mf.remaining)
            mf.append(view[:n])
            view = view[n:]
            phys += n

    def complete_records(self, pos: int) -> Iterator[tuple[MessageExt, int, int]]:
        """``(message without body, physical offset, size)`` of each whole record from ``pos`` on;
        stops before a record whose bytes have not all arrived (replication)."""
        end = self.max_offset
        while pos < end:
            mf = self.queue.find(pos)
            if mf is None:
                return
            rel = pos - mf.file_from_offset
            left = mf.wrote_position - rel
            if left < 8:
                if mf.is_full():
                    pos = mf.file_from_offset + self.file_size
                    continue
                return
            buf = mf.buffer()
            size, magic = _II.unpack_from(buf, rel)
            if magic == BLANK_MAGIC:
                pos = mf.file_from_offset + self.file_size
                continue
            if magic != MAGIC or size <= 0:
                raise StoreError(f"replicated commitlog holds no record at {pos} (magic {magic:#x})")
            if size > left:
                return  # the rest of the record comes with the next frame
            msg, _ = decode_message(buf[rel : rel + size], read_body=False)
            self.last_store_timestamp = max(self.last_store_timestamp, msg.store_timestamp)
            yield msg, pos, size
            pos += size

    # -- reads ----------------------------------------------------------------------------------
    @property
    def min_offset(self) -> int:
        """First physical offset still stored (0 when there is no segment)."""
        m = self.queue.min_offset
        return 0 if m < 0 else m

    @property
    def max_offset(self) -> int:
        return self.queue.max_offset

    def get_data(self, phys: int, size: int) -> memoryview | None:
        """``size`` bytes at ``phys`` (a slice of the mapping), or None when they are gone or not written."""
        mf = self.queue.find(phys, return_first_on_not_found=(phys == 0))
        if mf is None:
            return None
        try:
            return mf.view(phys - mf.file_from_offset, size)
        except ValueError:  # the segment was destroyed by retention a moment ago
            return None

    def get_record(self, phys: int) -> memoryview | None:
        """The whole record at ``phys`` (its size read from its first 4 bytes)."""
        head = self.get_data(phys, 8)
        if head is None:
            return None
        size, magic = _II.unpack_from(head, 0)
        if magic != MAGIC or size < HEAD_SIZE:
            return None
        return self.get_data(phys, size)

    def pickup_store_timestamp(self, phys: int, size: int) -> int:
        """STORETIMESTAMP of the record at ``phys``, -1 if it is not readable."""
        rec = self.get_data(phys, size)
        if rec is None or size < HEAD_SIZE:
            return -1
        (sys_flag,) = _I.unpack_from(rec, POS_SYS_FLAG)
        ts: int = _Q.unpack_from(rec, store_timestamp_pos(sys_flag))[0]
        return ts

    def earliest_store_time(self) -> int:
        """STORETIMESTAMP (ms) of the oldest record still stored, -1 when there is none."""
        rec = self.get_record(self.min_offset)
        return -1 if rec is None else self.pickup_store_timestamp(self.min_offset, len(rec))

    def flush_behind_bytes(self) -> int:
        """Bytes written and not yet flushed to disk."""
        return max(0, self.max_offset - self.queue.flushed_where)

    def roll_next_file(self, phys: int) -> int:
        return phys + self.file_size - phys % self.file_size

    # -- recovery -------------------------------------------------------------------------------
    def recovery_start(self, *, abnormal: bool, checkpoint_min_ts: int = 0) -> int:
        """Where recovery starts scanning: the start of the third-last segment after a clean stop;
        after a crash, the newest segment whose first record was stored before the checkpoint
        (everything older is known to be on disk and dispatched), else the first segment."""
        files = self.queue.files
        if not files:
            return 0
        if not abnormal:
            return files[max(0, len(files) - 3)].file_from_offset
        for mf in reversed(files):
            buf = mf.buffer()
            size, magic = _II.unpack_from(buf, 0)
            if magic != MAGIC or size < HEAD_SIZE:
                continue
            (sys_flag,) = _I.unpack_from(buf, POS_SYS_FLAG)
            (ts,) = _Q.unpack_from(buf, store_timestamp_pos(sys_flag))
            if 0 < ts <= checkpoint_min_ts:
                return mf.file_from_offset
        return files[0].file_from_offset

    def recover(self, start: int, *, abnormal: bool, dispatch: Dispatch | None = None) -> int:
        """Walk the records from segment offset ``start`` (see :meth:`recovery_start`), stop at the
        first invalid one and drop everything from there; returns the new max physical offset.

        ``dispatch`` is called for each valid record so that derived files can catch up.
        """
        files = self.queue.files
        if not files:
            return 0
        check_crc = self.settings.check_crc_on_recover
        idx = next((i for i, f in enumerate(files) if f.file_from_offset == start), 0)
        log.info(
            "recovering commitlog (%s) from segment %s",
            "abnormal" if abnormal else "normal",
            files[idx].path,
        )
        end = files[idx].file_from_offset
        count = 0
        last_ts = 0
        while idx < len(files):
            mf = files[idx]
            buf = mf.buffer()
            pos = 0
            stop = False
            while True:
                kind, rsize, reason = check_record(
                    buf, pos, self.file_size, mf.file_from_offset + pos, check_crc
                )
                if kind == "record":
                    (sys_flag,) = _I.unpack_from(buf, pos + POS_SYS_FLAG)
                    (last_ts,) = _Q.unpack_from(buf, pos + store_timestamp_pos(sys_flag))
                    if dispatch is not None:
                        msg, _ = decode_message(buf[pos : pos + rsize], read_body=False)
                        dispatch(msg, mf.file_from_offset + pos, rsize)
                    pos += rsize
                    count += 1
                    continue
                if kind == "blank":
                    pos = self.file_size
                elif kind == "torn":
                    log.warning("dropped torn record at offset %d (%s)", mf.file_from_offset + pos, reason)
                    stop = True
                else:
                    stop = True
                break
            end = mf.file_from_offset + pos
            if stop:
                break
            idx += 1
        later = [f for f in files if f.file_from_offset > end]
        if later:
            log.warning(
                "dropped %d commitlog segment(s) after offset %d: %s",
                len(later),
                end,
                [f.path for f in later],
            )
        self.queue.truncate_dirty(end)
        for mf in self.queue.files:
            if mf.file_from_offset + self.file_size <= end:
                mf.wrote_position = mf.flushed_position = self.file_size
        self.queue.flushed_where = end
        self.last_store_timestamp = max(self.last_store_timestamp, last_ts)
        log.info("commitlog recovered: %d record(s) checked, max physical offset %d", count, end)
        return end

    # -- durability and teardown ----------------------------------------------------------------
    def flush(self) -> int:
        return self.queue.flush()

    def close(self) -> None:
        self.queue.close()
