"""The accepting side of the remoting transport: a listening socket, one :class:`Connection` per
peer, the limits one peer may reach (:mod:`.limits`) and one sweep that closes idle connections
and connections whose frame has taken longer than ``frame_timeout_s`` since its first byte."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pyrocketmq.service import Service

from .limits import ConnectionLimits, UnprovenBytes
from .listener import (
    HANDSHAKE_TIMEOUT as HANDSHAKE_TIMEOUT,  # re-exported, as first_byte: both were defined here
    Listener,
    first_byte as first_byte,
)
from .tls import ServerTls
from .transport import BeforeRequest, Connection, Handler, RequestObserver, log, peer_log

SNIFF_TIMEOUT = 30.0
"""Seconds a new connection of a TLS-capable server may take to send its first byte."""


class RemotingServer:
    """Accepts connections and dispatches their requests by request code."""

    def __init__(
        self,
        name: str = "server",
        handlers: dict[int, Handler] | None = None,
        *,
        idle_timeout: float | None = 120.0,
        limits: ConnectionLimits | None = None,
        tls: ServerTls | None = None,
        before: BeforeRequest | None = None,
    ) -> None:
        self.name = name
        self.before = before
        """Checks each request before its handler (the broker's ACL); set before :meth:`serve`."""
        self.tls = tls or ServerTls()
        ssl_context = self.tls.context() if self.tls.enabled else None
        self.limits = limits or ConnectionLimits()
        self.unproven = UnprovenBytes(self.limits.max_unproven_bytes)
        """Bytes of partial frames held for connections with no request accepted yet, all together."""
        self.idle_timeout = idle_timeout
        """Seconds without a byte either way after which a connection is closed (Apache's
        ``serverChannelMaxIdleTimeSeconds``, 120); ``None`` keeps idle connections."""
        self._sweep: Service | None = None
        self.handlers: dict[int, Handler] = dict(handlers or {})
        self.connections: set[Connection] = set()
        self.observer: RequestObserver | None = None
        """Told about every request answered (metrics); set before :meth:`serve`: connections
        accepted earlier keep the observer they were made with."""
        self._server: asyncio.AbstractServer | None = None
        self._listener = None if ssl_context is None else Listener(  # TLS-capable servers accept themselves
            name, self._make_connection, ssl_context, self.tls.mode, refused=self._refused, log=log,
            backlog=1024, sniff_timeout=SNIFF_TIMEOUT,
        )
        self._close_listeners: list[Callable[[Connection], None]] = []
        self.port = 0

    def register(self, code: int, handler: Handler) -> None:
        self.handlers[int(code)] = handler

    def on_connection_closed(self, fn: Callable[[Connection], None]) -> None:
        self._close_listeners.append(fn)

    def _make_connection(self) -> Connection:
        limit = self.limits.max_connections
        if limit and len(self.connections) >= limit:  # accepted and closed at once, with a logged reason
            return Connection(
                {}, name=self.name, serving=True, refuse=f"{limit} connections are open already"
            )
        conn = Connection(
            self.handlers,
            on_close=self._forget,
            name=self.name,
            observer=self.observer,
            serving=True,
            limits=self.limits,
            before=self.before,
            unproven=self.unproven,
        )
        self.connections.add(conn)
        return conn

    def _forget(self, conn: Connection) -> None:
        self.connections.discard(conn)
        for fn in self._close_listeners:
            fn(conn)

    async def start(self, host: str = "0.0.0.0", port: int = 0, *, serve: bool = True) -> int:
        """Bind (and, with ``serve``, accept). ``serve=False`` learns the port before accepting:
        connections are refused until :meth:`serve` is called."""
        loop = asyncio.get_running_loop()
        if self._listener is None:
            self._server = await loop.create_server(
                self._make_connection, host, port, reuse_address=True, backlog=1024, start_serving=serve
            )
            self.port = self._server.sockets[0].getsockname()[1]
        else:
            self.port = self._listener.bind(host, port)
            if serve:
                await self.serve()
        timeouts = [t for t in (self.idle_timeout, self.limits.frame_timeout_s) if t]
        if timeouts and self._sweep is None:
            self._sweep = Service(f"{self.name}: idle and stalled connections", self.sweep,
                                  max(0.05, min(10.0, min(timeouts) / 10)), logger=log)
            self._sweep.start()
        return self.port

    def sweep(self) -> int:
        """:meth:`close_idle` and :meth:`close_stalled`; how many connections were closed."""
        return self.close_idle() + self.close_stalled()

    def close_idle(self) -> int:
        """Close the connections silent both ways for longer than ``idle_timeout``; how many."""
        if not self.idle_timeout:
            return 0
        now = asyncio.get_running_loop().time()
        idle = [c for c in list(self.connections) if now - c.last_active > self.idle_timeout]
        for conn in idle:
            peer_log.info(
                "%s: closing connection from %s: idle for more than %.0f s",
                self.name,
                conn.remote_addr,
                self.idle_timeout,
            )
            conn.close(f"idle for more than {self.idle_timeout:.0f} s")
        return len(idle)

    def close_stalled(self, now: float | None = None) -> int:
        """Drop the connections whose frame began more than ``frame_timeout_s`` ago and is not
        whole yet (not counting time spent not reading, while the peer did not read its answers);
        how many."""
        limit = self.limits.frame_timeout_s
        if not limit:
            return 0
        now = asyncio.get_running_loop().time() if now is None else now
        stalled = [c for c in list(self.connections)
                   if c.frame_started is not None and not c.writing_paused and now - c.frame_started > limit]
        for conn in stalled:
            peer_log.warning("%s: closing connection from %s: a frame not whole %.0f s after its first byte",
                             self.name, conn.remote_addr, limit)
            conn.drop(f"no whole frame within {limit:g} s of its first byte")
        return len(stalled)

    async def serve(self) -> None:
        if self._server is not None:
            await self._server.start_serving()
        elif self._listener is not None:
            self._listener.serve()

    def _refused(self, peer: str, e: OSError) -> None:
        peer_log.warning("%s: closing connection from %s before serving it: %s", self.name, peer,
                         str(e) or type(e).__name__)

    async def stop(self) -> None:
        if self._sweep is not None:
            await self._sweep.stop()
            self._sweep = None
        if self._server is not None:
            self._server.close()
        if self._listener is not None:
            await self._listener.stop()
        for conn in list(self.connections):
            conn.close("server stopping")
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
