"""One fixed-size, memory-mapped segment of a log (commitlog or consume queue).

A segment is named by the absolute offset of its first byte, as 20 zero-padded digits::

    <dir>/00000000000000000000   bytes [0, size)
    <dir>/00000000001073741824   bytes [size, 2*size)

It is created at full size with ``ftruncate`` (sparse: no blocks until written) and mapped
``MAP_SHARED`` once. Positions, all relative to the segment start::

    0 ........ flushed_position ........ wrote_position ........ file_size
    | on disk  | in the page cache only  | never written (zeros)  |

Invariants: ``flushed_position <= wrote_position <= file_size``; bytes below ``wrote_position`` never
change once written (except by recovery truncation); only one thread appends. Reads hand out
``memoryview`` slices of the mapping, with no copy; a slice stays valid after the segment is
destroyed (the mapping lives until the last view is released).

Why, under SYNC_FLUSH, the segment being written is advised ``MADV_RANDOM``: on kernels whose page cache uses
large folios (ext4 since Linux 6.x), a page fault in a sequentially faulted mapping brings in ever larger
folios — up to megabytes — and a write dirties the whole folio, so every ``fdatasync`` writes back
megabytes for the few kilobytes appended since the last one (measured here: 2.6 GB written for
61 MB of 1 KiB records synced every 20 records, and syncs 40 % slower). Random advice keeps the
writer's folios at one page. A segment that is full gets normal advice back (:meth:`seal`), so
cold sequential reads of it still read ahead. Without synchronous flushes (a sync every half
second) large folios cost little write-back and save page faults: there the advice stays normal
(random advice measured 10-30 % slower for ASYNC_FLUSH sends).

Why ``fdatasync`` and not ``mmap.flush``: CPython's ``mmap.flush`` calls ``msync`` while holding the
GIL, which would stall the event loop for the whole disk write; ``os.fdatasync`` releases it, and on
Linux it writes back the same dirty page-cache pages of a shared mapping.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os

log = logging.getLogger("pyrocketmq.broker.store")

NAME_DIGITS = 20
_WRITING = getattr(mmap, "MADV_RANDOM", None)
_READING = getattr(mmap, "MADV_NORMAL", None)


def segment_name(offset: int) -> str:
    return f"{offset:0{NAME_DIGITS}d}"


def parse_segment_name(name: str) -> int | None:
    """The start offset a file name encodes, or None if it is not a segment name."""
    if len(name) == NAME_DIGITS and name.isdigit():
        return int(name)
    return None


class MappedFile:
    """One segment. ``keep_fd`` keeps the file descriptor open for cheap flushes (commitlog); consume
    queues, which are many, reopen the file on each flush instead. ``synced_often``: the SYNC_FLUSH
    commitlog (random advice while written, see above)."""

    __slots__ = (
        "path",
        "file_size",
        "file_from_offset",
        "wrote_position",
        "flushed_position",
        "_mm",
        "_mv",
        "_fd",
        "_keep_fd",
        "_destroyed",
        "_synced_often",
    )

    def __init__(
        self, path: str, file_size: int, *, keep_fd: bool = True, synced_often: bool = False
    ) -> None:
        start = parse_segment_name(os.path.basename(path))
        if start is None:
            raise ValueError(f"{path!r} is not named by a 20-digit offset")
        self.path = path
        self.file_size = file_size
        self.file_from_offset = start
        self.wrote_position = 0
        self.flushed_position = 0
        self._keep_fd = keep_fd
        self._synced_often = synced_often
        self._destroyed = False
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            actual = os.fstat(fd).st_size
            if actual < file_size:
                os.ftruncate(fd, file_size)
            elif actual > file_size:
                raise ValueError(f"{path} is {actual} bytes; the configured segment size is {file_size}")
            self._mm = mmap.mmap(fd, file_size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        self._mv = memoryview(self._mm)
        self._advise_for_writes()
        if keep_fd:
            self._fd: int | None = fd
        else:
            os.close(fd)
            self._fd = None

    def __repr__(self) -> str:
        return f"MappedFile({self.path!r}, wrote={self.wrote_position}, flushed={self.flushed_position})"

    def _advise(self, advice: int | None) -> None:
        if advice is not None:
            try:
                self._mm.madvise(advice)
            except OSError as e:  # advice only: a kernel that refuses it costs speed, not data
                log.debug("madvise(%d) on %s refused: %s", advice, self.path, e)

    def _advise_for_writes(self) -> None:
        if self._synced_often:
            self._advise(_WRITING)

    def seal(self) -> None:
        """The segment is full and only read from now on: normal readahead for its readers."""
        if self._synced_often and not self._destroyed:
            self._advise(_READING)

    # -- positions ------------------------------------------------------------------------------
    @property
    def committed_position(self) -> int:
        """Readable bytes: everything written is readable (there is no separate write buffer)."""
        return self.wrote_position

    @property
    def remaining(self) -> int:
        return self.file_size - self.wrote_position

    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    @property
    def end_offset(self) -> int:
        """Absolute offset just past the written data."""
        return self.file_from_offset + self.wrote_position

    @property
    def destroyed(self) -> bool:
        return self._destroyed

    # -- writes (single writer) -----------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Copy ``data`` at the write position; returns where it went. The caller checks the room."""
        pos = self.wrote_position
        end = pos + len(data)
        self._mv[pos:end] = data
        self.wrote_position = end
        return pos

    def write_at(self, pos: int, data: bytes | bytearray | memoryview) -> None:
        """Overwrite bytes at ``pos`` without moving the write position (fillers, blank headers)."""
        self._mv[pos : pos + len(data)] = data

    def buffer(self) -> memoryview:
        """The whole mapping as a writable view (recovery scans and in-place patches)."""
        return self._mv

    # -- reads ----------------------------------------------------------------------------------
    def view(self, pos: int, size: int) -> memoryview | None:
        """``size`` bytes at ``pos`` if all of them are written, else None."""
        if pos < 0 or size < 0 or pos + size > self.wrote_position:
            return None
        return self._mv[pos : pos + size]

    def view_from(self, pos: int) -> memoryview | None:
        """Everything written from ``pos`` on (None if ``pos`` is past it)."""
        end = self.wrote_position
        if pos < 0 or pos >= end:
            return None
        return self._mv[pos:end]

    # -- durability -----------------------------------------------------------------------------
    def dirty_bytes(self) -> int:
        return self.wrote_position - self.flushed_position

    def flush(self) -> int:
        """Make everything written so far durable; returns the new flushed position.

        Runs on the flush thread while the writer may keep appending: it captures the write position
        first, so what it reports as flushed is covered by the sync.
        """
        wrote = self.wrote_position
        if wrote > self.flushed_position and not self._destroyed:
            try:
                if self._fd is not None:
                    os.fdatasync(self._fd)
                else:
                    fd = os.open(self.path, os.O_RDWR)
                    try:
                        os.fdatasync(fd)
                    finally:
                        os.close(fd)
            except OSError:
                if self._destroyed:  # deleted by retention meanwhile: nothing left to make durable
                    return self.flushed_position
                raise
            self.flushed_position = wrote
        return self.flushed_position

    def last_modified_ms(self) -> int:
        try:
            return int(os.stat(self.path).st_mtime * 1000)
        except FileNotFoundError:
            return 0

    # -- truncation and teardown ----------------------------------------------------------------
    def truncate_to(self, pos: int) -> None:
        """Drop every byte from ``pos`` on: the tail becomes zeros on disk too.

        Shrinking the file and growing it back discards the tail without writing it (the file stays
        sparse); the mapping is redone around it so nothing touches pages beyond the short EOF.
        Recovery only: no views of this segment may be in use.
        """
        self._unmap()
        fd = os.open(self.path, os.O_RDWR)
        try:
            os.ftruncate(fd, pos)
            os.ftruncate(fd, self.file_size)
            os.fsync(fd)
            self._mm = mmap.mmap(
                fd, self.file_size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE
            )
        finally:
            os.close(fd)
        self._mv = memoryview(self._mm)
        self._advise_for_writes()
        self.wrote_position = min(self.wrote_position, pos)
        self.flushed_position = min(self.flushed_position, pos)

    def _unmap(self) -> None:
        self._mv.release()
        try:
            self._mm.close()
        except BufferError:
            # Someone still holds a slice (a pull being written out): the mapping is released by
            # the garbage collector once that view is gone.
            pass

    def close(self) -> None:
        """Unmap and close; the file stays. Idempotent."""
        if self._destroyed:
            return
        self._destroyed = True
        self._unmap()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def destroy(self) -> None:
        """Close and delete the file. Idempotent; safe while slices of it are still referenced."""
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
