"""The message-key index (RocketMQ's IndexFile / IndexService): ``topic#key`` → commitlog offsets.

Derived data: built on the dispatch path, rebuilt from the commitlog after a crash, read by
QUERY_MESSAGE (``MQAdminExt.queryMessage``, ``viewMessage`` by UNIQ_KEY). Keys indexed per record:
``topic#UNIQ_KEY`` and ``topic#k`` for each space-separated entry ``k`` of KEYS.

Files are ``store/index/<yyyyMMddHHmmssSSS>`` (local creation time), created at full size with
``ftruncate`` (sparse: the default 420 MB cost only the pages written) and mapped ``MAP_SHARED``.
Layout, big-endian, as RocketMQ writes it::

    0                        header, 40 bytes
        0  int64 beginTimestamp   STORETIMESTAMP (ms) of the first entry's record
        8  int64 endTimestamp     ... of the last entry's record
       16  int64 beginPhyOffset   commitlog offset of the first entry's record
       24  int64 endPhyOffset     ... of the last entry's record
       32  int32 hashSlotCount    slots in use (informational)
       36  int32 indexCount       next entry number; starts at 1 (entry 0 means "none")
    40                       hashSlotNum slots, int32 each: the newest entry whose
                             keyHash % hashSlotNum is this slot, 0 = empty
    40 + 4 * hashSlotNum     indexNum entries, 20 bytes each:
        0  int32 keyHash          abs(Java String.hashCode("topic#key")); 0 for Integer.MIN_VALUE
        4  int64 phyOffset        commitlog offset of the record
       12  int32 timeDiff         (STORETIMESTAMP - beginTimestamp) // 1000: seconds, >= 0
       16  int32 prevIndex        next older entry of the same slot, 0 = end of the chain

Invariants:

- One writer (the store's dispatch thread) appends entries in commitlog order, so phyOffset and
  time never decrease along the entry array and every chain runs newest first.
- Every slot value is < indexCount and every prevIndex is < its own entry number. Values that break
  this (a torn file) are read as "end of chain": a walk always ends.
- Per record the writes go entries, header (count), slots: a process killed in between leaves
  uncounted entries (overwritten later) or counted, unreachable ones, never a slot naming an
  unwritten entry.
- A file is full at indexCount == indexNum; the next key opens a new file whose begin/end start as
  the previous file's end.

A hit is only a candidate: keys share hashes, so the store checks the record itself. Times are whole
seconds from beginTimestamp, so the index's time filter is widened by 999 ms and the store checks the
exact STORETIMESTAMP.

Recovery: :meth:`IndexService.truncate` undoes the entries whose records the commitlog recovery
dropped (newest first, putting each slot back to the entry's prevIndex: the offsets will be reused by
other records); then the store re-dispatches records after :attr:`IndexService.last_phy` and
:meth:`IndexService.build` indexes them (records at or before it are skipped, so re-dispatch is
idempotent). After a power loss, pages written after the last index flush may be missing: lookups can
then miss entries but never return a wrong record (like Java's index with messageIndexSafe=false).

Threads: ``build``/``query``/``truncate`` run on the store's thread; ``flush`` on the flush thread
(an ``fdatasync``, no mapping access); ``delete_expired`` on the clean thread. The file list is
copy-on-write under ``_lock``; ``query`` holds the lock so no file is unmapped under it, and deletion
never touches the newest file (the only one written).
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import struct
import time
from collections.abc import Callable
from datetime import datetime
from operator import mul

from pyrocketmq.remoting.message import tags_code

from .native import NATIVE

log = logging.getLogger("pyrocketmq.broker.store")

HEADER = struct.Struct(">qqqqii")
HEADER_SIZE = 40
SLOT = struct.Struct(">i")
SLOT_SIZE = 4
ENTRY = struct.Struct(">iqii")
ENTRY_SIZE = 20
NAME_DIGITS = 17
"""``yyyyMMddHHmmssSSS``"""

_INT_MAX = 0x7FFFFFFF
_TAIL = 12
_HEAD_CACHE = 4096
_MASK = 0xFFFFFFFF
_ZERO_ENTRY = bytes(ENTRY_SIZE)

Accept = Callable[[int], bool]
"""Called with a candidate's commitlog offset; False drops it (a hash collision, a stale entry)."""


def index_file_size(slot_num: int, index_num: int) -> int:
    return HEADER_SIZE + slot_num * SLOT_SIZE + index_num * ENTRY_SIZE


# -- key hash -------------------------------------------------------------------------------------

_POW31 = [1]
"""31**i mod 2**32, grown on demand."""


def _pow31(n: int) -> list[int]:
    p = _POW31
    while len(p) <= n:
        p.append(p[-1] * 31 & _MASK)
    return p


def _extend(h: int, s: str) -> int:
    """Java ``hashCode(prefix + s)`` (unsigned 32-bit) from ``h = hashCode(prefix)``."""
    if s.isascii():
        b = s.encode()
        n = len(b)
        if n <= 64:
            # Horner's rule, masked once at the end: fastest for the short strings the put path
            # hashes (measured against sum(map(mul, ...)) with a power table).
            for c in b:
                h = h * 31 + c
            return h & _MASK
        p = _pow31(n)
        total: int = h * p[n] + sum(map(mul, reversed(b), p))
        return total & _MASK  # linear in n, no huge ints
    n = len(s.encode("utf-16-be", "surrogatepass")) // 2  # Java counts UTF-16 units
    return (h * _pow31(n)[n] + tags_code(s)) & _MASK


_py_extend = _extend
"""The pure-Python hash (tests compare the compiled one with it)."""

if NATIVE is not None:
    _java_hash = NATIVE.java_hash

    def _extend(h: int, s: str) -> int:  # noqa: F811 — the compiled loop when built (same results, tested)
        value: int = _java_hash(s, h)
        return value


def _hash_u32(s: str) -> int:
    """Java ``String.hashCode()`` as an unsigned 32-bit int."""
    return _extend(0, s)


def _positive(h: int) -> int:
    # Java: Math.abs((int) h), and 0 for Integer.MIN_VALUE, whose abs is itself.
    if h & 0x80000000:
        return 0 if h == 0x80000000 else 0x100000000 - h
    return h


def key_hash(topic: str, key: str) -> int:
    """RocketMQ's keyHash of ``topic#key``.

    >>> key_hash("T", "k") == abs(tags_code("T#k"))
    True
    """
    return _positive(_hash_u32(f"{topic}#{key}"))


def _combine(prefix_hash: int, key: str) -> int:
    return _positive(_extend(prefix_hash, key))


def index_file_name(ms: int) -> str:
    """``yyyyMMddHHmmssSSS`` in local time, as Java's ``UtilAll.timeMillisToHumanString``."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(ms // 1000)) + f"{ms % 1000:03d}"


def _name_ms(name: str) -> int:
    return int(datetime.strptime(name[:14], "%Y%m%d%H%M%S").timestamp()) * 1000 + int(name[14:])


class IndexFileSizeError(ValueError):
    """An index file's size does not match ``maxHashSlotNum``/``maxIndexNum``."""


# -- one file -------------------------------------------------------------------------------------


class IndexFile:
    """One index file (see the module docstring). Header fields are mirrored in attributes and
    written to the mapping with every record, so a killed process leaves them consistent."""

    __slots__ = (
        "path",
        "name",
        "slot_num",
        "index_num",
        "begin_timestamp",
        "end_timestamp",
        "begin_phy_offset",
        "end_phy_offset",
        "hash_slot_count",
        "index_count",
        "dirty",
        "_entries_at",
        "_mm",
        "_mv",
        "_fd",
        "_closed",
    )

    def __init__(
        self,
        path: str,
        slot_num: int,
        index_num: int,
        *,
        begin_phy_offset: int = 0,
        begin_timestamp: int = 0,
    ) -> None:
        """Open ``path``; a missing (or empty) file is created, its begin/end set to the arguments."""
        self.path = path
        self.name = os.path.basename(path)
        self.slot_num = slot_num
        self.index_num = index_num
        self._entries_at = HEADER_SIZE + slot_num * SLOT_SIZE
        size = index_file_size(slot_num, index_num)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            actual = os.fstat(fd).st_size
            fresh = actual == 0
            if fresh:
                os.ftruncate(fd, size)
            elif actual != size:
                raise IndexFileSizeError(
                    f"{path} is {actual} bytes, but maxHashSlotNum={slot_num} and maxIndexNum={index_num} "
                    f"make {size}"
                )
            self._mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd
        self._mv = memoryview(self._mm)
        self._closed = False
        self.dirty = fresh
        if fresh:
            self.begin_timestamp = self.end_timestamp = begin_timestamp
            self.begin_phy_offset = self.end_phy_offset = begin_phy_offset
            self.hash_slot_count = 0
            self.index_count = 1
            self._write_header()
        else:
            (
                self.begin_timestamp,
                self.end_timestamp,
                self.begin_phy_offset,
                self.end_phy_offset,
                self.hash_slot_count,
                count,
            ) = HEADER.unpack_from(self._mv, 0)
            # 0: created but killed before the first header write.
            self.index_count = min(max(count, 1), index_num)

    def __repr__(self) -> str:
        return (
            f"IndexFile({self.name}, entries={self.index_count - 1}, "
            f"phy={self.begin_phy_offset}..{self.end_phy_offset})"
        )

    def _write_header(self) -> None:
        HEADER.pack_into(
            self._mv,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )

    @property
    def empty(self) -> bool:
        return self.index_count <= 1

    def is_full(self) -> bool:
        return self.index_count >= self.index_num

    # -- write ----------------------------------------------------------------------------------
    def put_key(self, key_hash: int, phy: int, store_ts: int) -> bool:
        """Add one entry; False when the file is full."""
        return self.put_keys((key_hash,), phy, store_ts) == 1

    def put_keys(self, hashes: tuple[int, ...] | list[int], phy: int, store_ts: int) -> int:
        """Add one entry per hash for the record at ``phy``; returns how many fit (the rest belong
        in the next file). Writes entries, then the header, then the slots (see the invariants)."""
        n = self.index_count
        room = self.index_num - n
        if room <= 0:
            return 0
        if room < len(hashes):
            hashes = hashes[:room]
        mv = self._mv
        slot_num = self.slot_num
        if n == 1:
            self.begin_timestamp = store_ts
            self.begin_phy_offset = phy
        diff = (store_ts - self.begin_timestamp) // 1000
        if diff < 0:
            diff = 0
        elif diff > _INT_MAX:
            diff = _INT_MAX
        heads: dict[int, int] = {}  # slot position -> its new head (two keys may share a slot)
        pos = self._entries_at + n * ENTRY_SIZE
        i = n
        for h in hashes:
            slot_pos = HEADER_SIZE + (h % slot_num) * SLOT_SIZE
            head = heads.get(slot_pos)
            if head is None:
                (head,) = SLOT.unpack_from(mv, slot_pos)
                if head <= 0 or head >= n:  # empty, or left by a torn write: start a new chain
                    head = 0
                    self.hash_slot_count += 1
            ENTRY.pack_into(mv, pos, h, phy, diff, head)
            heads[slot_pos] = i
            pos += ENTRY_SIZE
            i += 1
        self.index_count = i
        self.end_timestamp = store_ts
        self.end_phy_offset = phy
        self._write_header()
        for slot_pos, head in heads.items():
            SLOT.pack_into(mv, slot_pos, head)
        self.dirty = True
        return i - n

    def put_flat(self, hashes: bytes, phys: bytes, start: int, store_ts: int) -> int:
        """:meth:`put_keys` for many records at once, compiled (``NATIVE.index_keys`` made ``hashes``
        and ``phys``): the keys from ``start`` on while the file has room; returns how many fit."""
        assert NATIVE is not None
        (written, self.index_count, self.hash_slot_count, self.begin_timestamp, self.begin_phy_offset,
         end_phy) = NATIVE.index_write(
            self._mv, self.slot_num, self.index_num, self.index_count, self.hash_slot_count,
            self.begin_timestamp, self.begin_phy_offset, hashes, phys, start, store_ts)  # fmt: skip
        if written:
            self.end_timestamp = store_ts
            self.end_phy_offset = end_phy
            self.dirty = True
        return int(written)

    def put_one(self, prefix: int, properties: dict[str, str], phy: int, store_ts: int) -> int | None:
        """The index keys of one record (``prefix``: the hash of ``topic#``) in one compiled call, all
        of them or none: how many were written (0: the record has none), or None when they do not all
        fit (then :meth:`put_flat` and a new file take them)."""
        assert NATIVE is not None
        done = NATIVE.index_one(
            self._mv,
            self.slot_num,
            self.index_num,
            self.index_count,
            self.hash_slot_count,
            self.begin_timestamp,
            self.begin_phy_offset,
            prefix,
            properties,
            phy,
            store_ts,
        )
        if done is None:
            return None
        written, self.index_count, self.hash_slot_count, self.begin_timestamp, self.begin_phy_offset = done
        if written:
            self.end_timestamp = store_ts
            self.end_phy_offset = phy
            self.dirty = True
        return int(written)

    # -- read -----------------------------------------------------------------------------------
    def time_matched(self, begin: int, end: int) -> bool:
        return not self.empty and begin <= self.end_timestamp and end >= self.begin_timestamp

    def select(
        self,
        key_hash: int,
        max_num: int,
        begin: int,
        end: int,
        out: list[int],
        seen: set[int],
        accept: Accept | None,
    ) -> None:
        """Append to ``out`` the offsets of ``key_hash``'s chain in ``[begin, end]``, newest first,
        until ``out`` holds ``max_num``. ``seen`` drops repeats (a record indexed twice)."""
        n = self.index_count
        if n <= 1:
            return
        mv = self._mv
        (cur,) = SLOT.unpack_from(mv, HEADER_SIZE + (key_hash % self.slot_num) * SLOT_SIZE)
        if cur <= 0 or cur >= n:
            return
        base = self._entries_at
        begin_ts = self.begin_timestamp
        while len(out) < max_num:
            h, phy, diff, prev = ENTRY.unpack_from(mv, base + cur * ENTRY_SIZE)
            if diff < 0:
                break
            t = begin_ts + diff * 1000  # the record's time rounded down to the second
            if h == key_hash and t <= end and t + 999 >= begin and phy not in seen:
                seen.add(phy)
                if accept is None or accept(phy):
                    out.append(phy)
            if t + 999 < begin or prev <= 0 or prev >= cur:
                break
            cur = prev

    def entries(self) -> list[tuple[int, int, int, int]]:
        """Every entry ``(keyHash, phyOffset, timeDiff, prevIndex)`` in order (tests, tools)."""
        base = self._entries_at
        return [ENTRY.unpack_from(self._mv, base + i * ENTRY_SIZE) for i in range(1, self.index_count)]

    # -- recovery -------------------------------------------------------------------------------
    def truncate(self, max_phys: int, store_ts_of: Callable[[int], int] | None = None) -> int:
        """Undo the entries whose record is at or past ``max_phys`` (a suffix: entries are in
        commitlog order); returns how many. ``store_ts_of(phy)`` gives the new endTimestamp exactly
        (else it is the last entry's time, to the second)."""
        mv = self._mv
        base = self._entries_at
        n = self.index_count - 1
        undone = 0
        while n >= 1:
            h, phy, _diff, prev = ENTRY.unpack_from(mv, base + n * ENTRY_SIZE)
            if phy < max_phys:
                break
            slot_pos = HEADER_SIZE + (h % self.slot_num) * SLOT_SIZE
            (head,) = SLOT.unpack_from(mv, slot_pos)
            if head == n:  # newer entries of this slot are undone already: this one heads it
                restored = prev if 0 < prev < n else 0
                SLOT.pack_into(mv, slot_pos, restored)
                if not restored:
                    self.hash_slot_count = max(0, self.hash_slot_count - 1)
            pos = base + n * ENTRY_SIZE
            mv[pos : pos + ENTRY_SIZE] = _ZERO_ENTRY
            n -= 1
            undone += 1
        if not undone:
            return 0
        self.index_count = n + 1
        if n >= 1:
            _h, phy, diff, _prev = ENTRY.unpack_from(mv, base + n * ENTRY_SIZE)
            self.end_phy_offset = phy
            ts = store_ts_of(phy) if store_ts_of is not None else -1
            self.end_timestamp = ts if ts > 0 else self.begin_timestamp + diff * 1000
        else:
            self.end_phy_offset = self.begin_phy_offset
            self.end_timestamp = self.begin_timestamp
        self._write_header()
        self.dirty = True
        return undone

    # -- durability and teardown ----------------------------------------------------------------
    def flush(self) -> None:
        """``fdatasync`` if anything was written since the last flush (flush thread)."""
        fd = self._fd
        if not self.dirty or fd is None:
            return
        self.dirty = False  # cleared first: a write racing the sync sets it again
        try:
            os.fdatasync(fd)
        except OSError:
            if self._closed:  # deleted by retention meanwhile: nothing left to make durable
                return
            self.dirty = True
            raise

    def close(self) -> None:
        """Unmap and close; the file stays. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._mv.release()
        try:
            self._mm.close()
        except BufferError:  # a slice is still referenced: the GC unmaps it later
            pass
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def destroy(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


# -- the service ----------------------------------------------------------------------------------
