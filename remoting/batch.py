"""The body of a batch send (SEND_BATCH_MESSAGE): the messages of one send, one after another.

Per message (big-endian)::

    int32 totalSize | int32 magic (0) | int32 bodyCrc (0) | int32 flag | int32 bodyLen | body |
    int16 propLen | properties

The producer writes it (Java ``MessageDecoder.encodeMessages``); the broker reads it entry by
entry, without copies, and stores each entry as a record (:mod:`.message`) with the batch's own
properties appended. This module is pure: no I/O, no asyncio.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

from .message import MAX_PROPERTIES_BYTES, MessageDecodeError, decode_properties, encode_properties

BatchItem = tuple[bytes, int, dict[str, str]]
"""One message of a batch: ``(body, flag, properties)``."""

_ITEM_HEAD = struct.Struct(">iiiii")  # totalSize, magic, bodyCrc, flag, bodyLen
_H = struct.Struct(">h")


def encode_batch(items: Iterable[tuple[bytes | bytearray | memoryview, int, dict[str, str]]]) -> bytes:
    """The SEND_BATCH_MESSAGE body (Java ``MessageDecoder.encodeMessages``)."""
    parts: list[bytes | bytearray | memoryview] = []
    for body, flag, props in items:
        pb = encode_properties(props)
        if len(pb) > MAX_PROPERTIES_BYTES:
            raise ValueError(f"properties are {len(pb)} bytes; at most {MAX_PROPERTIES_BYTES} fit")
        size = 20 + len(body) + 2 + len(pb)
        parts += (_ITEM_HEAD.pack(size, 0, 0, flag, len(body)), body, _H.pack(len(pb)), pb)
    return b"".join(parts)


def iter_batch_raw(
    data: bytes | bytearray | memoryview,
) -> Iterator[tuple[memoryview, int, memoryview]]:
    """``(body, flag, properties bytes)`` views of each batch entry, without copies.

    The broker appends its own batch properties to the raw bytes instead of re-encoding a dict.
    """
    mv = memoryview(data)
    n = len(mv)
    pos = 0
    while pos < n:
        if n - pos < 22:
            raise MessageDecodeError(f"batch entry at {pos} is torn ({n - pos} bytes left)")
        size, _magic, _crc, flag, blen = _ITEM_HEAD.unpack_from(mv, pos)
        end = pos + size
        if blen < 0 or size < 22 + blen or end > n:
            raise MessageDecodeError(f"batch entry at {pos}: size {size}, body {blen}, {n - pos} bytes left")
        (plen,) = _H.unpack_from(mv, pos + 20 + blen)
        if size != 22 + blen + plen:
            raise MessageDecodeError(f"batch entry at {pos}: size {size} != 22 + body {blen} + props {plen}")
        yield mv[pos + 20 : pos + 20 + blen], flag, mv[pos + 22 + blen : end]
        pos = end


def decode_batch(data: bytes | bytearray | memoryview) -> list[BatchItem]:
    """Inverse of :func:`encode_batch`: ``[(body, flag, properties), …]``."""
    return [(bytes(b), flag, decode_properties(p)) for b, flag, p in iter_batch_raw(data)]
