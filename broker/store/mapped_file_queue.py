"""An ordered run of equal-size segments that together form one logical log.

::

    dir/00000000000000000000  dir/00000000000000004096  dir/00000000000000008192
    [ full ................. ][ full ................. ][ wrote | zeros ....... ]
    ^ min_offset                                                ^ max_offset

Invariants: segments are contiguous (each starts where the previous one ends); only the last one
is being written; ``flushed_where <= max_offset``. The list of segments is copy-on-write: readers
take the current list without a lock; rolling a new segment and deleting old ones swap in a new
list under a lock, so the retention thread can delete while the writer appends and readers read.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from .mapped_file import MappedFile, parse_segment_name, segment_name

log = logging.getLogger("pyrocketmq.broker.store")


class StoreError(Exception):
    """The files on disk contradict the configuration or each other; the store cannot start."""


class MappedFileQueue:
    def __init__(
        self, directory: str, file_size: int, *, keep_fd: bool = True, synced_often: bool = False
    ) -> None:
        self.directory = directory
        self._synced_often = synced_often
        self.file_size = file_size
        self._keep_fd = keep_fd
        self._files: list[MappedFile] = []
        self._lock = threading.Lock()
        self.flushed_where = 0
        """Absolute offset up to which everything is on disk."""
        self.sync_count = 0
        """fdatasync calls made by :meth:`flush` (lets tests see that one sync covered many requests)."""

    # -- the segment list -----------------------------------------------------------------------
    @property
    def files(self) -> list[MappedFile]:
        """The current segments, oldest first (a snapshot: do not mutate)."""
        return self._files

    def load(self) -> None:
        """Map every existing segment; positions start at full size (recovery narrows the last ones)."""
        if not os.path.isdir(self.directory):
            return
        names = sorted(n for n in os.listdir(self.directory) if parse_segment_name(n) is not None)
        files: list[MappedFile] = []
        for i, name in enumerate(names):
            path = os.path.join(self.directory, name)
            size = os.path.getsize(path)
            if size < self.file_size and i == len(names) - 1:
                # A crash while the newest segment was being created: MappedFile grows it back and
                # recovery finds where its data ends.
                log.warning("%s is %d bytes, short of %d: extending it", path, size, self.file_size)
            elif size != self.file_size:
                for f in files:
                    f.close()
                raise StoreError(
                    f"{path} is {size} bytes but segments here are {self.file_size}: "
                    "the segment size setting changed; restore it or move the files away"
                )
            mf = MappedFile(path, self.file_size, keep_fd=self._keep_fd, synced_often=self._synced_often)
            mf.wrote_position = mf.flushed_position = self.file_size
            if files and files[-1].file_from_offset + self.file_size != mf.file_from_offset:
                log.warning("segment gap before %s: previous segment is %s", path, files[-1].path)
            files.append(mf)
        for mf in files[:-1]:
            mf.seal()
        self._files = files

    def first(self) -> MappedFile | None:
        files = self._files
        return files[0] if files else None

    def last(self) -> MappedFile | None:
        files = self._files
        return files[-1] if files else None

    def create(self, start_offset: int) -> MappedFile:
        """Create (or open) the segment starting at ``start_offset`` and append it to the list."""
        os.makedirs(self.directory, exist_ok=True)
        mf = MappedFile(
            os.path.join(self.directory, segment_name(start_offset)), self.file_size, keep_fd=self._keep_fd,
            synced_often=self._synced_often,
        )
        with self._lock:
            previous = self._files
            self._files = [*previous, mf]
        if previous:
            previous[-1].seal()
        return mf

    def last_for_write(self, start_offset: int = 0) -> MappedFile:
        """The segment to append to: the last one, or a new one when there is none or it is full.

        ``start_offset`` places the very first segment (rounded down to a segment boundary).
        """
        last = self.last()
        if last is None:
            return self.create(start_offset - start_offset % self.file_size)
        if last.is_full():
            return self.create(last.file_from_offset + self.file_size)
        return last

    def find(self, offset: int, return_first_on_not_found: bool = False) -> MappedFile | None:
        """The segment holding absolute ``offset``."""
        files = self._files
        if not files:
            return None
        first = files[0]
        if first.file_from_offset <= offset < files[-1].file_from_offset + self.file_size:
            idx = (offset - first.file_from_offset) // self.file_size
            if idx < len(files):
                mf = files[idx]
                if mf.file_from_offset <= offset < mf.file_from_offset + self.file_size:
                    return mf
            for mf in files:  # only after a gap in the names
                if mf.file_from_offset <= offset < mf.file_from_offset + self.file_size:
                    return mf
        return first if return_first_on_not_found else None

    @property
    def min_offset(self) -> int:
        """Start of the first segment, -1 when there is none."""
        first = self.first()
        return first.file_from_offset if first else -1

    @property
    def max_offset(self) -> int:
        """Offset just past the last written byte (0 when empty)."""
        last = self.last()
        return last.end_offset if last else 0

    # -- durability -----------------------------------------------------------------------------
    def flush(self) -> int:
        """Sync every segment from ``flushed_where`` to the write position; returns the new ``flushed_where``.

        Usually one sync; two when the data crossed a segment boundary since the last flush.
        """
        mf = self.find(self.flushed_where, return_first_on_not_found=True)
        while mf is not None:
            before = mf.flushed_position
            after = mf.flush()
            if after != before:
                self.sync_count += 1
            self.flushed_where = max(self.flushed_where, mf.file_from_offset + after)
            if after < self.file_size:
                break
            mf = self.find(mf.file_from_offset + self.file_size)
        return self.flushed_where

    def dirty_bytes(self) -> int:
        return self.max_offset - self.flushed_where

    # -- truncation and deletion ----------------------------------------------------------------
    def truncate_dirty(self, offset: int, *, live: bool = False) -> None:
        """Forget everything from absolute ``offset`` on: zero the tail of the segment holding it and
        delete the segments after it (recovery). ``live``: the store is running (views of the segment
        may be held, the flush thread may sync it), so the tail is zeroed through the mapping instead
        of cut from the file."""
        doomed: list[MappedFile] = []
        for mf in self._files:
            tail = mf.file_from_offset + self.file_size
            if tail <= offset:
                continue
            if mf.file_from_offset <= offset and live:
                rel = offset - mf.file_from_offset
                if mf.wrote_position > rel:
                    mf.buffer()[rel : mf.wrote_position] = bytes(mf.wrote_position - rel)
                mf.wrote_position = mf.flushed_position = rel
            elif mf.file_from_offset <= offset:
                mf.truncate_to(offset - mf.file_from_offset)
                mf.wrote_position = mf.flushed_position = offset - mf.file_from_offset
            else:
                doomed.append(mf)
        self._remove(doomed)
        self.flushed_where = min(self.flushed_where, offset) if self._files else 0

    def _remove(self, doomed: list[MappedFile]) -> None:
        if not doomed:
            return
        ids = {id(m) for m in doomed}
        with self._lock:
            self._files = [m for m in self._files if id(m) not in ids]
        for mf in doomed:
            mf.destroy()

    def delete_first(self, count: int) -> list[MappedFile]:
        """Delete the ``count`` oldest segments (never the last one); returns them."""
        files = self._files
        doomed = files[: max(0, min(count, len(files) - 1))]
        self._remove(doomed)
        return doomed

    def delete_expired_by_time(
        self, expired_ms: int, now_ms: int, clean_immediately: bool, batch_max: int
    ) -> list[MappedFile]:
        """Delete the oldest segments whose last write is older than ``expired_ms`` (all of them when
        ``clean_immediately``), stopping at the first young one; never the last segment."""
        doomed: list[MappedFile] = []
        for mf in self._files[:-1]:
            if len(doomed) >= batch_max:
                break
            if clean_immediately or mf.last_modified_ms() + expired_ms <= now_ms:
                doomed.append(mf)
            else:
                break  # never leave a hole in the middle of the log
        self._remove(doomed)
        return doomed

    def delete_while(self, predicate: Callable[[MappedFile], bool]) -> list[MappedFile]:
        """Delete oldest segments as long as ``predicate`` holds; never the last segment."""
        doomed: list[MappedFile] = []
        for mf in self._files[:-1]:
            if not predicate(mf):
                break
            doomed.append(mf)
        self._remove(doomed)
        return doomed

    def destroy(self) -> None:
        """Delete every segment and the directory if it is left empty."""
        with self._lock:
            files, self._files = self._files, []
        for mf in files:
            mf.destroy()
        self.flushed_where = 0
        try:
            os.rmdir(self.directory)
        except OSError:
            pass

    def close(self) -> None:
        for mf in self._files:
            mf.close()
