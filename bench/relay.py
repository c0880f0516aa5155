"""A TCP relay between a broker and its name server that measures every REGISTER_BROKER it carries.

The broker is configured with the relay's address as its ``namesrvAddr``; clients use the name
server directly. Bytes are forwarded as they arrive, unchanged; on the side, the relay splits each
direction into RocketMQ frames (``int32 length | int32 header length | header | body``), notes each
REGISTER_BROKER request (code 103): the time its first byte arrived and its size on the wire (length
field included), and matches the response by ``opaque``: the time of the response's last byte.

A registration may be one frame (4.9.x, ours) or several sent back to back (5.x splits a large topic
table, ``enableSplitRegistration``): frames that start less than ``GAP`` seconds after the previous one
ended are one :class:`Registration`.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass

from pyrocketmq.remoting.command import decode_frame

REGISTER_BROKER = 103
GAP = 1.0
"""Seconds of quiet between two registrations."""
_INT = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Frame:
    started: float
    """``time.monotonic()`` of the request's first byte."""
    size: int
    """Bytes on the wire, the length field included."""
    answered: float
    """``time.monotonic()`` of the response's last byte."""
    ok: bool


@dataclass(frozen=True, slots=True)
class Registration:
    frames: int
    size: int
    seconds: float
    """From the first request byte to the last response byte."""
    ok: bool


def group(frames: list[Frame]) -> list[Registration]:
    """Frames that start less than ``GAP`` seconds after the previous one was answered are one
    registration."""
    groups: list[list[Frame]] = []
    for f in sorted(frames, key=lambda f: f.started):
        if groups and f.started - max(g.answered for g in groups[-1]) < GAP:
            groups[-1].append(f)
        else:
            groups.append([f])
    return [
        Registration(len(g), sum(f.size for f in g), max(f.answered for f in g) - g[0].started,
                     all(f.ok for f in g))
        for g in groups
    ]


class _Splitter:
    """Splits one direction of a connection into frames, reporting (first-byte time, size, frame)."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.first_byte = 0.0

    def feed(self, data: bytes, now: float) -> list[tuple[float, int, bytes]]:
        if not self.buf:
            self.first_byte = now
        self.buf += data
        out = []
        while len(self.buf) >= 4:
            (length,) = _INT.unpack_from(self.buf, 0)
            if len(self.buf) - 4 < length:
                break
            out.append((self.first_byte, 4 + length, bytes(self.buf[4 : 4 + length])))
            del self.buf[: 4 + length]
            self.first_byte = now
        return out


class RegistrationRelay:
    """Listens on 127.0.0.1 (``addr``) and forwards every connection to ``127.0.0.1:target_port``
    (set before the first connection: the name server's port, once picked)."""

    def __init__(self, target_port: int = 0) -> None:
        self.target_port = target_port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self._server.getsockname()[1]}"
        self._lock = threading.Lock()
        self._pending: dict[tuple[int, int], tuple[float, int]] = {}
        self._frames: list[Frame] = []
        self._sockets: list[socket.socket] = []
        self._closed = False
        self._conn_seq = 0
        threading.Thread(target=self._accept, name="register-relay", daemon=True).start()

    def frames(self) -> list[Frame]:
        with self._lock:
            return list(self._frames)

    def registrations(self) -> list[Registration]:
        """The REGISTER_BROKER frames answered so far, grouped into registrations."""
        return group(self.frames())

    def close(self) -> None:
        self._closed = True
        try:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        except OSError:
            pass
        for s in [self._server, *self._sockets]:
            try:
                s.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                if self._closed:
                    return
                continue
            self._conn_seq += 1
            self._sockets += [client, upstream]
            conn = self._conn_seq
            threading.Thread(target=self._pump, args=(client, upstream, conn, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, conn, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, conn: int, requests: bool) -> None:
        splitter = _Splitter()
        try:
            while data := src.recv(1 << 16):
                dst.sendall(data)
                now = time.monotonic()
                for first, size, frame in splitter.feed(data, now):
                    self._note(conn, requests, first, size, frame, now)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _note(self, conn: int, request: bool, first: float, size: int, frame: bytes, now: float) -> None:
        try:
            cmd = decode_frame(frame)
        except ValueError:
            return
        with self._lock:
            if request and not cmd.is_response and cmd.code == REGISTER_BROKER:
                self._pending[(conn, cmd.opaque)] = (first, size)
            elif not request and cmd.is_response:
                sent = self._pending.pop((conn, cmd.opaque), None)
                if sent is not None:
                    self._frames.append(Frame(sent[0], sent[1], now, cmd.code == 0))
