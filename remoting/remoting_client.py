"""Connections to many remoting servers by ``host:port``: one each, opened on first use and shared
by every caller (what a client, a broker registering with name servers, or a controller uses).

Example::

    client = RemotingClient(connect_timeout=3.0)
    answer = await client.invoke("127.0.0.1:9876", RemotingCommand.request(105, {"topic": "T"}))
    await client.close()
"""

from __future__ import annotations

import asyncio
import ssl as ssl_module
from collections.abc import Callable

from .command import RemotingCommand
from .transport import Connection, Handler, RemotingConnectError


class RemotingClient:
    """Connections to many servers by ``host:port``, one each, opened on first use."""

    def __init__(
        self, handlers: dict[int, Handler] | None = None, *, connect_timeout: float = 3.0,
        ssl: ssl_module.SSLContext | None = None, sign: Callable[[RemotingCommand], None] | None = None,
    ) -> None:
        self.handlers: dict[int, Handler] = dict(handlers or {})
        self.sign = sign
        """Called on every request before it is sent (ACL signatures)."""
        self.connect_timeout = connect_timeout
        self.ssl = ssl
        """When set, every connection is TLS with this context (the server's name checked as the context
        says)."""
        self._conns: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Future[Connection]] = {}

    def register(self, code: int, handler: Handler) -> None:
        self.handlers[int(code)] = handler

    async def connection(self, addr: str, timeout: float | None = None) -> Connection:
        """The open connection to ``addr``, or a new one. ``timeout`` bounds this caller's wait for a
        connect (at most ``connect_timeout``): a caller with retries left gives up early on an
        address that does not answer (a deleted pod's IP) and tries elsewhere."""
        conn = self._conns.get(addr)
        if conn is not None and conn.is_open:
            return conn
        limit = self.connect_timeout if timeout is None else max(0.0, min(timeout, self.connect_timeout))
        pending = self._connecting.get(addr)
        if pending is not None:
            try:
                return await asyncio.wait_for(asyncio.shield(pending), limit)
            except TimeoutError:
                raise RemotingConnectError(f"cannot connect to {addr}: TimeoutError") from None
        fut: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
        self._connecting[addr] = fut
        try:
            conn = await self._open(addr, limit)
            fut.set_result(conn)
            return conn
        except BaseException as e:
            fut.set_exception(e)
            fut.exception()  # mark retrieved
            raise
        finally:
            self._connecting.pop(addr, None)

    async def _open(self, addr: str, timeout: float) -> Connection:
        host, _, port = addr.rpartition(":")
        if not host or not port.isdigit():
            raise RemotingConnectError(f"bad address {addr!r}: expected host:port")
        loop = asyncio.get_running_loop()

        def drop(c: Connection) -> None:
            if self._conns.get(addr) is c:
                del self._conns[addr]

        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    lambda: Connection(self.handlers, on_close=drop, name="client"),
                    host,
                    int(port),
                    ssl=self.ssl,
                    server_hostname=host if self.ssl is not None else None,
                ),
                timeout,
            )
        except ssl_module.SSLError as e:
            why = getattr(e, "verify_message", None) or e.reason or str(e)
            raise RemotingConnectError(f"TLS handshake with {addr} failed: {why}") from None
        except (TimeoutError, OSError, OverflowError) as e:
            raise RemotingConnectError(f"cannot connect to {addr}: {str(e) or type(e).__name__}") from None
        conn.remote_addr = addr
        self._conns[addr] = conn
        return conn

    async def invoke(
        self, addr: str, cmd: RemotingCommand, timeout: float = 3.0, connect_timeout: float | None = None
    ) -> RemotingCommand:
        conn = await self.connection(addr, connect_timeout)
        if self.sign is not None:
            self.sign(cmd)
        return await conn.invoke(cmd, timeout)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        conn = await self.connection(addr)
        if self.sign is not None:
            self.sign(cmd)
        conn.invoke_oneway(cmd)

    def connected(self, addr: str) -> bool:
        """A connection to ``addr`` is open (none was made, or the peer closed it: False)."""
        conn = self._conns.get(addr)
        return conn is not None and not conn.closed

    def close_connection(self, addr: str) -> None:
        conn = self._conns.pop(addr, None)
        if conn is not None:
            conn.close("closed by client")

    async def close(self) -> None:
        for conn in list(self._conns.values()):
            conn.close("client closing")
        self._conns.clear()
        await asyncio.sleep(0)
