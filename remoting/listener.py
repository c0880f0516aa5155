"""The accepting side of a TLS-capable port, shared by :class:`~.server.RemotingServer` and the
broker's HA port: a listening socket, one task that accepts from it and, per accepted socket, one
task that peeks at its first byte (:func:`first_byte`) to tell a TLS handshake from a plain peer
(permissive mode), then serves it over TLS or in the clear with the protocol the server gives.
A server without TLS needs none of this: it listens with asyncio's own server."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable

from .tls import TLS_HANDSHAKE, TlsMode

HANDSHAKE_TIMEOUT = 10.0
"""Seconds a TLS handshake may take (Netty's ``SslHandler`` default); the gRPC port uses it too."""


class Listener:
    """Accepts the connections of a port served with TLS (``mode`` enforcing or permissive).

    ``protocol`` makes the protocol that serves one connection; ``refused(peer, error)`` reports a
    connection closed before it was served (a failed handshake, no first byte within
    ``sniff_timeout``); a peer that connects and leaves without a byte (a TCP probe) is closed
    silently. ``sniff_enforcing=False`` skips the first byte when enforcing: every connection goes
    straight to the handshake."""

    def __init__(
        self,
        name: str,
        protocol: Callable[[], asyncio.BaseProtocol],
        context: ssl.SSLContext,
        mode: TlsMode,
        *,
        refused: Callable[[str, OSError], None],
        log: logging.Logger,
        backlog: int,
        sniff_timeout: float,
        sniff_enforcing: bool = True,
    ) -> None:
        self.name = name
        self.protocol = protocol
        self.context = context
        self.mode = mode
        self.refused = refused
        self.log = log
        self.backlog = backlog
        self.sniff_timeout = sniff_timeout
        self.sniff_enforcing = sniff_enforcing
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._opening: set[asyncio.Task[None]] = set()

    def bind(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (an IPv6 host when it holds a colon) without accepting yet; the
        port bound."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.create_server((host, port), family=family, backlog=self.backlog, reuse_port=False)
        self._sock.setblocking(False)
        bound: int = self._sock.getsockname()[1]
        return bound

    def serve(self) -> None:
        """Start accepting (once bound; again is a no-op)."""
        if self._sock is not None and self._accepting is None:
            self._accepting = asyncio.get_running_loop().create_task(self._accept(self._sock))

    def start(self, host: str, port: int) -> int:
        """:meth:`bind` and :meth:`serve`; the port bound."""
        bound = self.bind(host, port)
        self.serve()
        return bound

    async def stop(self) -> None:
        """Stop accepting, drop the connections not served yet and close the listening socket;
        the connections already served are the server's to close."""
        if self._accepting is not None:
            self._accepting.cancel()
            await asyncio.gather(self._accepting, return_exceptions=True)
            self._accepting = None
        for task in list(self._opening):
            task.cancel()
        await asyncio.gather(*self._opening, return_exceptions=True)
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    async def _accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, _ = await loop.sock_accept(listener)
            except OSError as e:  # out of descriptors, say: the listener stays, the peer is gone
                self.log.warning("%s: accept failed: %s", self.name, e)
                await asyncio.sleep(0.1)
                continue
            task = loop.create_task(self._open(sock))
            self._opening.add(task)
            task.add_done_callback(self._opening.discard)

    async def _open(self, sock: socket.socket) -> None:
        """Serve one accepted socket: over TLS when it starts with a handshake (or always, when
        enforcing), in the clear otherwise (permissive)."""
        loop = asyncio.get_running_loop()
        peer = "?"
        with contextlib.suppress(OSError):
            host, port = sock.getpeername()[:2]
            peer = f"{host}:{port}"
        try:
            use_tls = self.mode is TlsMode.ENFORCING
            if not use_tls or self.sniff_enforcing:
                first = await asyncio.wait_for(first_byte(sock), self.sniff_timeout)
                if first is None:  # connected and left without a byte: a TCP probe
                    sock.close()
                    return
                use_tls = use_tls or first == TLS_HANDSHAKE
            await loop.connect_accepted_socket(
                self.protocol,
                sock,
                ssl=self.context if use_tls else None,
                ssl_handshake_timeout=HANDSHAKE_TIMEOUT if use_tls else None,
            )
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError) as e:
            self.refused(peer, e)
            sock.close()
        except asyncio.CancelledError:  # stopping before it was served: the socket goes now
            sock.close()
            raise


async def first_byte(sock: socket.socket) -> int | None:
    """The first byte the peer sends, peeked (it stays unread); None if it closes first."""
    loop = asyncio.get_running_loop()
    readable: asyncio.Future[None] = loop.create_future()
    fd = sock.fileno()

    def ready() -> None:
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(fd, ready)
    try:
        await readable
    finally:
        loop.remove_reader(fd)
    try:
        first = sock.recv(1, socket.MSG_PEEK)
    except ConnectionResetError:
        return None
    return first[0] if first else None
