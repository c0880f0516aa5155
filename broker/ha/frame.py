"""The HA wire format of RocketMQ 4.x, byte for byte (no I/O here: bytes in, values out).

The slave connects to the master's HA port (``listenPort + 1``) and only ever writes its
commitlog max offset, an 8-byte big-endian signed long — at connect, after each batch it has
appended, and every 5 s as a heartbeat::

    slave → master:   | int64 slave max physical offset |  (repeated)

In controller mode the slave's first 8 bytes name it instead: ``-(1 + replica id)`` (an offset is
never negative, so an Apache 4.x slave is told apart), so the master knows whose acknowledgements
count for its in-sync set.

The master answers with frames; a frame with an empty body is a heartbeat::

    master → slave:   | int64 start physical offset | int32 body size | body (size bytes) |
                      body = commitlog bytes [start, start + size), size <= 32 KiB,
                      never crossing a commitlog segment, records may be cut anywhere

Invariants: ``FrameReader`` yields frames in order however the stream is split; a negative size
or one above ``max_body`` is a protocol error (the caller closes the connection).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

HEADER = struct.Struct(">qi")
HEADER_SIZE = HEADER.size  # 12
OFFSET = struct.Struct(">q")
OFFSET_SIZE = OFFSET.size  # 8
TRANSFER_BATCH_SIZE = 32 * 1024
"""``haTransferBatchSize``: most bytes of commitlog the master sends in one frame."""
MAX_BODY = 4 * 1024 * 1024
"""Largest body accepted from a peer (the Java slave's read buffer is 4 MiB)."""


class FrameError(ValueError):
    """The peer broke the HA protocol; close the connection."""


@dataclass(frozen=True, slots=True)
class Frame:
    offset: int
    body: bytes

    @property
    def heartbeat(self) -> bool:
        return not self.body


def encode_frame(offset: int, body: bytes | memoryview = b"") -> bytes:
    """One master → slave frame. ``encode_frame(0, b"")`` is a heartbeat at offset 0."""
    return HEADER.pack(offset, len(body)) + bytes(body)


def encode_identity(replica_id: int) -> bytes:
    """A controller-mode slave's first report: its replica id."""
    return OFFSET.pack(-1 - replica_id)


def encode_offset(offset: int) -> bytes:
    """One slave → master report."""
    return OFFSET.pack(offset)


def master_start_offset(slave_offset: int, master_max: int, segment_size: int) -> int:
    """Where the master starts sending: the slave's offset, or — when the slave reports 0 (it has
    nothing) — the start of the master's last commitlog segment."""
    if slave_offset != 0:
        return slave_offset
    return max(0, master_max - master_max % segment_size)


class FrameReader:
    """Accumulates master → slave bytes and yields complete frames::

        r = FrameReader(); r.feed(chunk); frames = list(r)
    """

    __slots__ = ("_buf", "max_body")

    def __init__(self, max_body: int = MAX_BODY) -> None:
        self._buf = bytearray()
        self.max_body = max_body

    def feed(self, data: bytes) -> None:
        self._buf += data

    def __iter__(self) -> FrameReader:
        return self

    def __next__(self) -> Frame:
        buf = self._buf
        if len(buf) < HEADER_SIZE:
            raise StopIteration
        offset, size = HEADER.unpack_from(buf, 0)
        if size < 0 or size > self.max_body:
            raise FrameError(f"frame body size {size} out of range")
        if offset < 0:
            raise FrameError(f"negative frame offset {offset}")
        end = HEADER_SIZE + size
        if len(buf) < end:
            raise StopIteration
        body = bytes(buf[HEADER_SIZE:end])
        del buf[:end]
        return Frame(offset, body)


class OffsetReader:
    """Accumulates slave → master bytes; ``feed`` returns the newest complete report (or None)."""

    __slots__ = ("_buf", "_first", "replica_id")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._first = True
        self.replica_id: int | None = None
        """The slave's replica id, when its first report named it (controller mode)."""

    def feed(self, data: bytes) -> int | None:
        buf = self._buf
        buf += data
        n = len(buf) // OFFSET_SIZE
        if n == 0:
            return None
        if self._first:
            self._first = False
            (head,) = OFFSET.unpack_from(buf, 0)
            if head < 0:
                self.replica_id = -head - 1
                del buf[:OFFSET_SIZE]
                return self.feed(b"")
        offset: int = OFFSET.unpack_from(buf, (n - 1) * OFFSET_SIZE)[0]
        del buf[: n * OFFSET_SIZE]
        if offset < 0:
            raise FrameError(f"negative slave offset {offset}")
        return offset
