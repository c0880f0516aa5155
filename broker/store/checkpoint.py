"""``store/checkpoint``: how far the commitlog and the derived files are known to be on disk.

Layout (RocketMQ's ``StoreCheckpoint``, a 4 KiB file, big-endian)::

    0   int64 physicMsgTimestamp   STORETIMESTAMP of the last record covered by a commitlog flush
    8   int64 logicsMsgTimestamp   STORETIMESTAMP of the last record covered by a consume-queue flush
    16  int64 indexMsgTimestamp    same for the index files (every record up to it was offered to the
                                   index, and the index flushed)
    24  zeros

Invariant: each timestamp is captured *before* the flush it describes, so every record stored at or
before it is durable. Abnormal recovery starts from the segment holding ``min_timestamp`` (the
smaller of the first two, minus 3 s of slack for clock steps within a millisecond batch).
"""

from __future__ import annotations

import os
import struct

FILE_SIZE = 4096
_LAYOUT = struct.Struct(">qqq")


class Checkpoint:
    __slots__ = ("path", "physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp")

    def __init__(self, path: str) -> None:
        self.path = path
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0

    def load(self) -> None:
        """Read the file if present (a missing or short file reads as zeros)."""
        try:
            with open(self.path, "rb") as f:
                raw = f.read(_LAYOUT.size)
        except FileNotFoundError:
            return
        if len(raw) == _LAYOUT.size:
            self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp = _LAYOUT.unpack(
                raw
            )

    def flush(self) -> None:
        """Write the three timestamps and fsync (one sector: the write is not torn in practice)."""
        data = _LAYOUT.pack(self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < FILE_SIZE:
                os.ftruncate(fd, FILE_SIZE)
            os.pwrite(fd, data, 0)
            os.fsync(fd)
        finally:
            os.close(fd)

    @property
    def min_timestamp(self) -> int:
        """Where abnormal recovery may start: min(physic, logics) − 3 s, not below 0."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)
