"""The accepting side of the remoting transport: a listening socket, one :class:`Connection` per
peer, the limits one peer may reach (:mod:`.limits`) and the closing of idle connections."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pyrocketmq.service import Service

from .limits import ConnectionLimits
from .transport import Connection, Handler, RequestObserver, log


class RemotingServer:
    """Accepts connections and dispatches their requests by request code."""

    def __init__(
        self, name: str = "server", handlers: dict[int, Handler] | None = None, *, idle_timeout: float | None = 120.0,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.name = name
        self.limits = limits or ConnectionLimits()
        self.idle_timeout = idle_timeout
        """Seconds without a byte either way after which a connection is closed (Apache's
        ``serverChannelMaxIdleTimeSeconds``, 120); ``None`` keeps idle connections."""
        self._idle: Service | None = None
        self.handlers: dict[int, Handler] = dict(handlers or {})
        self.connections: set[Connection] = set()
        self.observer: RequestObserver | None = None
        """Told about every request answered (metrics); set before :meth:`serve`: connections
        accepted earlier keep the observer they were made with."""
        self._server: asyncio.AbstractServer | None = None
        self._close_listeners: list[Callable[[Connection], None]] = []
        self.port = 0

    def register(self, code: int, handler: Handler) -> None:
        self.handlers[int(code)] = handler

    def on_connection_closed(self, fn: Callable[[Connection], None]) -> None:
        self._close_listeners.append(fn)

    def _make_connection(self) -> Connection:
        limit = self.limits.max_connections
        if limit and len(self.connections) >= limit:  # accepted and closed at once, with a logged reason
            return Connection({}, name=self.name, serving=True, refuse=f"{limit} connections are open already")
        conn = Connection(self.handlers, on_close=self._forget, name=self.name, observer=self.observer, serving=True,
                          limits=self.limits)
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
        self._server = await loop.create_server(
            self._make_connection, host, port, reuse_address=True, backlog=1024, start_serving=serve
        )
        self.port = self._server.sockets[0].getsockname()[1]
        if self.idle_timeout and self._idle is None:
            idle = self.idle_timeout
            self._idle = Service(f"{self.name}: idle connections", self.close_idle, max(0.05, min(10.0, idle / 4)),
                                 logger=log)
            self._idle.start()
        return self.port

    def close_idle(self) -> int:
        """Close the connections silent both ways for longer than ``idle_timeout``; how many."""
        if not self.idle_timeout:
            return 0
        now = asyncio.get_running_loop().time()
        idle = [c for c in list(self.connections) if now - c.last_active > self.idle_timeout]
        for conn in idle:
            log.info("%s: closing connection from %s: idle for more than %.0f s", self.name, conn.remote_addr,
                     self.idle_timeout)
            conn.close(f"idle for more than {self.idle_timeout:.0f} s")
        return len(idle)

    async def serve(self) -> None:
        if self._server is not None:
            await self._server.start_serving()

    async def stop(self) -> None:
        if self._idle is not None:
            await self._idle.stop()
            self._idle = None
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.close("server stopping")
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
