"""zlib inflation with a ceiling: a peer's compressed bytes never make us hold more than ``limit``.

A few kilobytes of deflate can stand for gigabytes (a "decompression bomb"); inflating first and
measuring after would already have spent the memory. :func:`inflate` asks zlib for at most
``limit + 1`` bytes and refuses when it gets them, so no more than that is ever produced.

>>> import zlib
>>> inflate(zlib.compress(b"abc"), 10)
b'abc'
>>> inflate(zlib.compress(bytes(1000)), 100)
Traceback (most recent call last):
...
pyrocketmq.remoting.inflate.InflateError: inflates to more than 100 bytes
"""

from __future__ import annotations

import zlib


class InflateError(ValueError):
    """The bytes are no complete zlib stream, or they inflate past the limit."""


def inflate(data: bytes | bytearray | memoryview, limit: int) -> bytes:
    """``data`` (one zlib stream) inflated, if that takes at most ``limit`` bytes."""
    d = zlib.decompressobj()
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as e:
        raise InflateError(f"does not inflate: {e}") from None
    if len(out) > limit:
        raise InflateError(f"inflates to more than {limit} bytes")
    if not d.eof:
        raise InflateError("does not inflate: incomplete or truncated stream")
    return out
