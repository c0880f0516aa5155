"""The consume queue of one topic/queue: a dense index from logical offset to commitlog record.

Files live in ``consumequeue/<topic>/<queueId>/<20-digit byte offset>``; each holds a whole number
of 20-byte units (300 000 by default). Unit ``n`` (logical offset n) is at byte ``n * 20``::

    +-------------------------+-----------------+--------------------------+
    | int64 commitlog offset  | int32 size      | int64 tagsCode           |
    +-------------------------+-----------------+--------------------------+

``tagsCode`` is the tags' Java hash (sign-extended), or the delivery time for SCHEDULE_TOPIC_XXXX.
A *filler* unit ``(0, 0x7FFFFFFF, 0)`` stands where no message is (before the first entry of a queue
that starts at a non-zero offset, or a gap found while rebuilding); readers skip it.

Invariants: units are appended in logical order with no holes (holes become fillers); the commitlog
offsets of real units increase; an all-zero unit (size 0) marks the end of the written data.
``max_offset`` = number of units written; ``min_offset`` = first unit whose message is still in
the commitlog.
"""

from __future__ import annotations

import logging
import os
import struct

from .mapped_file import MappedFile
from .mapped_file_queue import MappedFileQueue
from .native import NATIVE, Meta
from .settings import CQ_UNIT_SIZE

log = logging.getLogger("pyrocketmq.broker.store")

UNIT = struct.Struct(">qiq")
FILLER_SIZE = 0x7FFFFFFF
_FILLER = UNIT.pack(0, FILLER_SIZE, 0)


def cq_units(phys: int, metas: list[Meta]) -> bytes:
    """The units (commitlog offset, size, tags code) of a batch's records, the first at ``phys``:
    compiled when built, else packed here."""
    if NATIVE is not None:
        units: bytes = NATIVE.cq_units(phys, metas)
        return units
    out = bytearray()
    for size, tags, _ in metas:
        out += UNIT.pack(phys, size, tags)
        phys += size
    return bytes(out)


class ConsumeQueue:
    def __init__(self, root: str, topic: str, queue_id: int, file_size: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = file_size
        self.units_per_file = file_size // CQ_UNIT_SIZE
        self.directory = os.path.join(root, topic, str(queue_id))
        self.queue = MappedFileQueue(self.directory, file_size, keep_fd=False)
        self.min_logic_offset = 0
        """Byte offset of the first unit still pointing at stored data."""
        self.max_physic_offset = -1
        """Commitlog offset just past the last real unit's message (-1 when none)."""

    def __repr__(self) -> str:
        return f"ConsumeQueue({self.topic!r}, {self.queue_id}, min={self.min_offset}, max={self.max_offset})"

    # -- offsets --------------------------------------------------------------------------------
    @property
    def max_offset(self) -> int:
        """Logical offset the next message gets (= number of units)."""
        files = self.queue.files
        if not files:
            return 0
        last = files[-1]
        return (last.file_from_offset + last.wrote_position) // CQ_UNIT_SIZE

    @property
    def min_offset(self) -> int:
        return self.min_logic_offset // CQ_UNIT_SIZE

    # -- load and recovery ----------------------------------------------------------------------
    def load(self) -> None:
        self.queue.load()

    def recover(self) -> None:
        """Find the written end: scan the last 3 files for the first unit with size 0."""
        files = self.queue.files
        if not files:
            return
        start = max(0, len(files) - 3)
        end = files[start].file_from_offset
        for mf in files[start:]:
            buf = mf.buffer()
            pos = 0
            while pos < self.file_size:
                phys, size, _ = UNIT.unpack_from(buf, pos)
                if phys < 0 or size <= 0:
                    break
                if size != FILLER_SIZE:
                    self.max_physic_offset = phys + size
                pos += CQ_UNIT_SIZE
            end = mf.file_from_offset + pos
            if pos < self.file_size:
                break
        self.queue.truncate_dirty(end)
        for mf in self.queue.files:
            if mf.file_from_offset + self.file_size <= end:
                mf.wrote_position = mf.flushed_position = self.file_size
        self.queue.flushed_where = end

    def truncate_dirty(self, phys_end: int, *, routine: bool = False, live: bool = False) -> None:
        """Drop the units whose message is not wholly below commitlog offset ``phys_end``.

        ``routine`` logs at INFO (crash recovery cutting what it is about to rebuild), else WARNING.
        """
        cut = None
        for mf in reversed(self.queue.files):
            buf = mf.buffer()
            pos = mf.wrote_position - CQ_UNIT_SIZE
            while pos >= 0:
                phys, size, _ = UNIT.unpack_from(buf, pos)
                if size == FILLER_SIZE or phys + size <= phys_end:  # fillers keep the numbering
                    cut = mf.file_from_offset + pos + CQ_UNIT_SIZE
                    break
                pos -= CQ_UNIT_SIZE
            if cut is not None:
                break
        if cut is None:  # nothing survives; the first file stays, empty, to keep the numbering
            cut = self.queue.min_offset if self.queue.files else 0
        if cut < self.queue.max_offset:
            log.log(
                logging.INFO if routine else logging.WARNING,
                "consume queue %s/%d: dropped logical offsets %d..%d past commitlog offset %d",
                self.topic,
                self.queue_id,
                cut // CQ_UNIT_SIZE,
                self.queue.max_offset // CQ_UNIT_SIZE - 1,
                phys_end,
            )
            self.queue.truncate_dirty(cut, live=live)
        self.max_physic_offset = self._last_phys_end()

    def _last_phys_end(self) -> int:
        for mf in reversed(self.queue.files):
            buf = mf.buffer()
            pos = mf.wrote_position - CQ_UNIT_SIZE
            while pos >= 0:
                phys: int
                size: int
                phys, size, _ = UNIT.unpack_from(buf, pos)
                if size != FILLER_SIZE:
                    return phys + size
                pos -= CQ_UNIT_SIZE
        return -1

    def correct_min_offset(self, commitlog_min: int) -> None:
        """Point ``min_offset`` at the first real unit whose message is still in the commitlog.

        The minimum only moves forward, so the scan starts at the current one (units' commitlog
        offsets increase along the queue).
        """
        start = max(self.min_logic_offset, self.queue.min_offset)
        for mf in self.queue.files:
            if mf.file_from_offset + mf.wrote_position <= start:
                continue
            buf = mf.buffer()
            for pos in range(max(0, start - mf.file_from_offset), mf.wrote_position, CQ_UNIT_SIZE):
                phys, size, _ = UNIT.unpack_from(buf, pos)
                if size != FILLER_SIZE and phys >= commitlog_min:
                    self.min_logic_offset = mf.file_from_offset + pos
                    return
        self.min_logic_offset = max(start, self.queue.max_offset)

    # -- append ---------------------------------------------------------------------------------
    def put(self, queue_offset: int, phys: int, size: int, tags_code: int) -> bool:
        """Write the unit for logical ``queue_offset``; False when it is already there (a re-dispatch).

        A ``queue_offset`` past the end is preceded by fillers (a queue starting at a non-zero offset,
        or a hole the commitlog no longer explains).
        """
        expect = queue_offset * CQ_UNIT_SIZE
        files = self.queue.files
        if files:  # the usual case, kept short: the next unit of a file with room
            last = files[-1]
            if last.wrote_position < self.file_size and expect == last.file_from_offset + last.wrote_position:
                last.append(UNIT.pack(phys, size, tags_code))
                self.max_physic_offset = phys + size
                return True
        cur = self.queue.max_offset
        if expect < cur:
            return False
        if not self.queue.files:
            start = expect - expect % self.file_size
            self.queue.create(start)
            cur = start
            if expect > start:
                self.min_logic_offset = expect
        elif expect > cur:
            log.warning(
                "consume queue %s/%d: hole from logical offset %d to %d filled",
                self.topic,
                self.queue_id,
                cur // CQ_UNIT_SIZE,
                queue_offset,
            )
        while cur < expect:
            mf = self.queue.last_for_write()
            mf.append(_FILLER)
            cur += CQ_UNIT_SIZE
        mf = self.queue.last_for_write()
        mf.append(UNIT.pack(phys, size, tags_code))
        self.max_physic_offset = phys + size
        return True

    def put_units(self, queue_offset: int, units: bytes) -> bool:
        """Append the units of consecutive records from logical ``queue_offset`` in one write when
        they are the next ones and fit the last file (a batch put); False otherwise (nothing written:
        the caller puts them one by one)."""
        files = self.queue.files
        if not files or not units:
            return False
        last = files[-1]
        if (
            last.wrote_position + len(units) > self.file_size
            or queue_offset * CQ_UNIT_SIZE != last.file_from_offset + last.wrote_position
        ):
            return False
        last.append(units)
        phys, size, _ = UNIT.unpack_from(units, len(units) - CQ_UNIT_SIZE)
        self.max_physic_offset = phys + size
        return True

    # -- reads ----------------------------------------------------------------------------------
    def units_from(self, offset: int) -> memoryview | None:
        """The written units from logical ``offset`` to the end of the file holding it."""
        pos = offset * CQ_UNIT_SIZE
        if pos < self.min_logic_offset:
            return None
        mf = self.queue.find(pos)
        if mf is None:
            return None
        try:
            return mf.view_from(pos - mf.file_from_offset)
        except ValueError:
            return None

    def get(self, offset: int) -> tuple[int, int, int] | None:
        """``(commitlog offset, size, tagsCode)`` of logical ``offset``, or None."""
        pos = offset * CQ_UNIT_SIZE
        if offset < 0 or pos < self.min_logic_offset:
            return None
        mf = self.queue.find(pos)
        if mf is None:
            return None
        try:
            v = mf.view(pos - mf.file_from_offset, CQ_UNIT_SIZE)
        except ValueError:
            return None
        return None if v is None else UNIT.unpack(v)

    def roll_next_file(self, offset: int) -> int:
        """First logical offset of the file after the one holding ``offset``."""
        return offset + self.units_per_file - offset % self.units_per_file

    # -- retention and teardown -----------------------------------------------------------------
    def delete_expired(self, commitlog_min: int) -> int:
        """Delete whole files whose every message is below ``commitlog_min``; returns how many."""

        def expired(mf: MappedFile) -> bool:
            if mf.wrote_position < self.file_size:
                return False
            phys, size, _ = UNIT.unpack_from(mf.buffer(), self.file_size - CQ_UNIT_SIZE)
            return bool(size == FILLER_SIZE or phys < commitlog_min)

        try:
            gone = self.queue.delete_while(expired)
            self.correct_min_offset(commitlog_min)
        except ValueError:  # the queue was destroyed (topic deleted) while we looked at it
            return 0
        return len(gone)

    def flush(self) -> None:
        self.queue.flush()

    def close(self) -> None:
        self.queue.close()

    def destroy(self) -> None:
        self.queue.destroy()
        self.min_logic_offset = 0
        self.max_physic_offset = -1
        try:
            os.rmdir(os.path.dirname(self.directory))  # the topic dir, once its last queue is gone
        except OSError:
            pass


def load_consume_queues(root: str, file_size: int) -> dict[tuple[str, int], ConsumeQueue]:
    """Every consume queue under ``root`` (``<topic>/<queueId>/``), loaded."""
    found: dict[tuple[str, int], ConsumeQueue] = {}
    if not os.path.isdir(root):
        return found
    for topic in sorted(os.listdir(root)):
        tdir = os.path.join(root, topic)
        if not os.path.isdir(tdir):
            continue
        for qdir in sorted(os.listdir(tdir)):
            if not qdir.isdigit():
                continue
            cq = ConsumeQueue(root, topic, int(qdir), file_size)
            cq.load()
            found[(topic, int(qdir))] = cq
    return found
