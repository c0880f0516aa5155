"""Message ids: the offset id (``offsetMsgId``: the storing broker's address and the record's
commitlog offset, hex) and the unique id clients set (``UNIQ_KEY``, Java's
``MessageClientIDSetter``), plus the 8/20-byte host encoding both use."""

from __future__ import annotations

import itertools
import os
import random
import socket
import struct
import time
from datetime import datetime

_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_HOST4 = struct.Struct(">4si")
_HOST6 = struct.Struct(">16si")


def pack_host(ip: str, port: int) -> bytes:
    """IPv4 → 8 bytes, IPv6 → 20 bytes: address + int32 port (Java ``socketAddress2ByteBuffer``)."""
    if ":" in ip:
        return socket.inet_pton(socket.AF_INET6, ip) + _I.pack(port)
    return socket.inet_aton(ip) + _I.pack(port)


def unpack_host(raw: bytes | bytearray | memoryview) -> tuple[str, int]:
    if len(raw) == 8:
        a, port = _HOST4.unpack(raw)
        return socket.inet_ntoa(a), port
    if len(raw) == 20:
        a, port = _HOST6.unpack(raw)
        return socket.inet_ntop(socket.AF_INET6, a), port
    raise ValueError(f"a packed host is 8 or 20 bytes, not {len(raw)}")


def create_offset_msg_id(store_host: bytes | tuple[str, int], phys_offset: int) -> str:
    """Offset message id: hex of ``store host bytes + int64 commitlog offset``.

    >>> create_offset_msg_id(("10.0.0.1", 10911), 0)
    '0A00000100002A9F0000000000000000'
    """
    if type(store_host) is not bytes:  # every stored message comes here (a union isinstance costs 3x)
        store_host = bytes(store_host) if isinstance(store_host, bytearray) else pack_host(*store_host)
    return (store_host + _Q.pack(phys_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """``(ip, port, commitlog offset)`` from an offset message id (32 or 56 hex chars)."""
    if len(msg_id) == 32:
        iplen = 4
    elif len(msg_id) == 56:
        iplen = 16
    else:
        raise ValueError(f"an offset message id has 32 or 56 hex chars, not {len(msg_id)}: {msg_id!r}")
    raw = bytes.fromhex(msg_id)
    ip, port = unpack_host(raw[: iplen + 4])
    (offset,) = _Q.unpack_from(raw, iplen + 4)
    return ip, port, offset


_CLASSLOADER_HASH = random.getrandbits(32)  # stands in for Java's class-loader hash: fixed per process


class UniqIdGenerator:
    """Makes ``UNIQ_KEY`` ids like Java's ``MessageClientIDSetter``; cheap to call, thread-safe.

    ``ip`` is the client address; without it a time-derived stand-in is used, as Java does when it
    cannot find one (this module does no I/O to look it up).

    >>> g = UniqIdGenerator("10.0.0.5")
    >>> len(g.next_id())
    32
    """

    __slots__ = ("_prefix", "_start_ms", "_next_start_ms", "_counter")

    def __init__(self, ip: str | bytes | None = None, pid: int | None = None) -> None:
        if ip is None:
            ip_raw = _Q.pack(int(time.time() * 1000))[4:]
        elif isinstance(ip, bytes):
            ip_raw = ip
        else:
            ip_raw = pack_host(ip, 0)[:-4]
        pid = os.getpid() if pid is None else pid
        fixed = ip_raw + struct.pack(">hI", ((pid & 0xFFFF) ^ 0x8000) - 0x8000, _CLASSLOADER_HASH)
        self._prefix = fixed.hex().upper()
        self._counter = itertools.count()  # next() on a count is atomic under the GIL
        self._start_ms = 0
        self._next_start_ms = 0

    def _roll_month(self, now_ms: int) -> None:
        # Local time, as java.util.Calendar.getInstance() uses.
        d = datetime.fromtimestamp(now_ms / 1000)
        start = d.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        nxt = (
            start.replace(year=start.year + 1, month=1)
            if start.month == 12
            else start.replace(month=start.month + 1)
        )
        self._start_ms = int(start.timestamp() * 1000)
        self._next_start_ms = int(nxt.timestamp() * 1000)

    def next_id(self, now_ms: int | None = None) -> str:
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        if now >= self._next_start_ms or now < self._start_ms:
            self._roll_month(now)
        diff = (now - self._start_ms) & 0xFFFFFFFF  # Java's (int) cast: wraps late in a 31-day month
        return f"{self._prefix}{diff:08X}{next(self._counter) & 0xFFFF:04X}"


def decode_uniq_id(uniq_id: str) -> tuple[str, int]:
    """``(client ip, pid)`` from a ``UNIQ_KEY`` (32 or 56 hex chars); the pid is read unsigned, as Java
    does."""
    if len(uniq_id) not in (32, 56):
        raise ValueError(f"a unique message id has 32 or 56 hex chars, not {len(uniq_id)}: {uniq_id!r}")
    raw = bytes.fromhex(uniq_id)
    iplen = len(raw) - 12
    ip = socket.inet_ntoa(raw[:4]) if iplen == 4 else socket.inet_ntop(socket.AF_INET6, raw[:16])
    return ip, int.from_bytes(raw[iplen : iplen + 2], "big")
