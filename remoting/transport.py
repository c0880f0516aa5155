"""asyncio transport for the remoting protocol: one connection class for both sides.

A :class:`Connection` splits the byte stream into commands with :class:`FrameDecoder`. Requests
go to a handler picked by request code; responses resolve the future waiting on their ``opaque``
(peers answer out of order). Handlers may return a command at once (the hot path: no task is
created), a future (answered from its done callback: SYNC_FLUSH sends) or another awaitable
(long polling, calls to other servers; run as a task). A oneway request never gets an
answer. A malformed frame closes that one connection with a logged reason. A server may have an
observer (metrics) told each request's code, answer code and time; it is looked at once per
request, in one place, so processors stay free of metrics.

Writes are coalesced: the frames written while one chunk of input is handled (a Java client
multiplexes all its threads' requests over one connection, so a chunk holds many) leave in one
``writelines`` (one ``writev``) when the chunk is done; a frame written at any other time (an
awaited answer, a group commit completing, a request of ours) leaves at the end of the current
loop iteration together with whatever else was written in it. Frames keep their order.

The same class serves the broker→client direction (NOTIFY_CONSUMER_IDS_CHANGED, transaction
check-backs, …): a server keeps the client's connection and calls :meth:`Connection.invoke` on it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import itertools
import logging
import ssl as ssl_module
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from .code import ResponseCode
from .command import RPC_RESPONSE, FrameDecoder, FrameError, RemotingCommand, encode_prefix
from .limits import NO_LIMITS, ConnectionLimits
from .log_limit import RateLimitedLog

log = logging.getLogger("pyrocketmq.remoting")

HandlerResult = RemotingCommand | None | Awaitable[RemotingCommand | None]
Handler = Callable[["Connection", RemotingCommand], HandlerResult]
RequestObserver = Callable[[int, "int | None", float], None]
"""``(request_code, response_code or None when unanswered, seconds)`` once per request answered."""

_opaque_counter = itertools.count(1)


def next_opaque() -> int:
    """Process-wide request ids, kept within int32 as Java expects."""
    return next(_opaque_counter) & 0x7FFFFFFF


class RemotingError(Exception):
    """The transport could not carry a request (closed, refused, timed out)."""


class RemotingTimeoutError(RemotingError, TimeoutError):
    pass


class RemotingConnectError(RemotingError, ConnectionError):
    pass


peer_log = RateLimitedLog(log)
"""What peers can make us log (bad frames, cut frames): rate-limited."""

EARLY_FLUSH_BYTES = 256 * 1024
"""A server connection hands its answers to the transport once this much has queued in one read."""




BeforeRequest = Callable[["Connection", RemotingCommand], "RemotingCommand | None"]
"""Looks at each request before its handler; an answer returned is sent instead (access control)."""


class Connection(asyncio.Protocol):
    """One TCP connection speaking remoting frames, usable by servers and clients alike.

    Back-pressure: when the peer stops reading and the transport's write buffer passes its high
    mark, asyncio calls :meth:`pause_writing`. A server-side connection (``serving=True``) then
    stops reading requests until the replies drain (:meth:`resume_writing`), so a client that never
    reads cannot make the server queue answers without bound; a client-side connection makes
    :meth:`invoke` wait in :meth:`drain` before it writes more, and keeps reading responses.
    """

    def __init__(
        self,
        handlers: dict[int, Handler],
        *,
        on_close: Callable[[Connection], None] | None = None,
        name: str = "remoting",
        observer: RequestObserver | None = None,
        serving: bool = False,
        limits: ConnectionLimits = NO_LIMITS,
        refuse: str | None = None,
        before: BeforeRequest | None = None,
    ) -> None:
        self._handlers = handlers
        self._before = before
        self._serving = serving
        self._max_in_flight = limits.max_in_flight
        self._max_queued = limits.max_queued_bytes
        self._refuse = refuse
        self.in_flight = 0
        """Requests dispatched and not yet answered."""
        self._started = 0.0  # the request being dispatched: its start (observer) and whether it was held
        self._held = False
        self.writing_paused = False
        """True while the peer is not reading what this side writes (above the high-water mark)."""
        self._drained: asyncio.Future[None] | None = None
        self._observer = observer
        self._decoder = FrameDecoder()
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._close_callbacks: list[Callable[[Connection], None]] = [on_close] if on_close else []
        self._transport: asyncio.Transport | None = None
        self._name = name
        self.remote_addr = "?"
        self.closed = False
        self.close_reason: str | None = None
        self._loop = asyncio.get_running_loop()
        self.last_active = self._loop.time()
        """Loop time of the last byte read or frame written (idle connections are closed by servers)."""
        self.connected: asyncio.Future[None] = self._loop.create_future()
        self._out: list[bytes | bytearray | memoryview] | None = None  # frames waiting for _flush_out
        self._out_bytes = 0
        #: Anything the owner wants to remember about the peer (client id, language, version).
        self.attrs: dict[str, object] = {}

    # -- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is not an asyncio.Transport subclass
        peer = transport.get_extra_info("peername")
        if peer:
            self.remote_addr = f"{peer[0]}:{peer[1]}"
        if self._refuse is not None:
            peer_log.warning("%s: refusing connection from %s: %s", self._name, self.remote_addr, self._refuse)
            self.close_reason = self._refuse
            self.abort()
            return
        if not self.connected.done():
            self.connected.set_result(None)

    def data_received(self, data: bytes) -> None:
        self.last_active = self._loop.time()
        if self._out is not None:  # a flush is already scheduled; it takes these replies too
            self._receive(data)
            return
        self._out = []
        try:
            self._receive(data)
        finally:
            self._flush_out()

    def _receive(self, data: bytes) -> None:
        frames = self._decoder.feed(data)
        try:
            for cmd in frames:
                if cmd.flag & RPC_RESPONSE:
                    fut = self._pending.pop(cmd.opaque, None)
                    if fut is not None and not fut.done():
                        fut.set_result(cmd)
                    elif fut is None:
                        log.debug("%s: response for unknown opaque %d from %s", self._name, cmd.opaque, self.remote_addr)
                    continue
                if self._transport is not None and self._transport.is_closing():
                    frames.close()  # closed while reading (a limit, a close by a handler): the rest is dropped
                    return
                self._dispatch(cmd)
                if self._serving and self._out_bytes > EARLY_FLUSH_BYTES:
                    # Hand the answers so far to the transport now: if the peer is not reading them,
                    # asyncio pauses us right here and the requests still buffered wait for it.
                    self._flush_out()
                    self._out = []
                    if self.writing_paused:
                        frames.close()  # the undispatched frames stay in the decoder
                        return
        except FrameError as e:
            peer_log.warning("%s: closing connection from %s: malformed frame: %s", self._name, self.remote_addr, e)
            self.close(f"malformed frame: {e}")
        except Exception as e:  # nothing a peer sends may reach the event loop's error handler
            log.exception("%s: closing connection from %s: error handling its data", self._name, self.remote_addr)
            self.close(f"internal error: {type(e).__name__}")

    def pause_writing(self) -> None:
        self.writing_paused = True
        if self._serving and self._transport is not None and not self.closed:
            log.debug("%s: %s is not reading its replies: reading no more requests until it does",
                      self._name, self.remote_addr)
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self._serving and self._transport is not None and not self.closed:
            self._transport.resume_reading()
            if self._decoder.pending:  # requests read before the pause, not yet dispatched
                self._loop.call_soon(self._receive_backlog)
        waiter, self._drained = self._drained, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def drain(self) -> None:
        """Return once the peer reads again (at once when it does already); raise if the connection closes."""
        if not self.writing_paused:
            return
        if self.closed:
            raise RemotingError(f"connection to {self.remote_addr} is closed")
        if self._drained is None:
            self._drained = self._loop.create_future()
        await asyncio.shield(self._drained)

    def _receive_backlog(self) -> None:
        if not self.closed and not self.writing_paused:
            self.data_received(b"")

    def connection_lost(self, exc: Exception | None) -> None:
        if self._decoder.pending and self.close_reason is None:
            peer_log.warning(
                "%s: connection from %s closed in the middle of a frame (%d bytes of it received)",
                self._name, self.remote_addr, self._decoder.pending,
            )
        self._closed(self.close_reason or (str(exc) if exc else "closed by peer"))

    # -- requests arriving --------------------------------------------------------------------
    def _dispatch(self, cmd: RemotingCommand) -> None:
        if self._before is not None and self._refused(cmd):
            return
        if self._observer is not None:
            self._dispatch_observed(cmd)
            return
        handler = self._handlers.get(cmd.code)
        if handler is None:
            self._reply(cmd, cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported"))
            return
        try:
            result = handler(self, cmd)
        except Exception as e:  # a handler bug must not reach the transport
            log.exception("%s: handler for code %d failed", self._name, cmd.code)
            self._reply(cmd, cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(e).__name__}: {e}"))
            return
        if result is None:
            return
        if type(result) is RemotingCommand:  # the hot path: answered at once
            self._reply(cmd, result)
        elif isinstance(result, asyncio.Future):  # answered from a callback: no task per request
            self._hold(cmd)
            result.add_done_callback(functools.partial(self._future_done, cmd, 0.0))
        elif inspect.isawaitable(result):
            self._hold(cmd)
            asyncio.ensure_future(self._finish(cmd, result))
        else:
            self._reply(cmd, result)

    def _refused(self, cmd: RemotingCommand) -> bool:
        """The ``before`` check (access control) answered instead of the handler."""
        assert self._before is not None
        try:
            answer = self._before(self, cmd)
        except Exception as e:
            log.exception("%s: the check before request code %d failed", self._name, cmd.code)
            answer = cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(e).__name__}: {e}")
        if answer is None:
            return False
        self._reply(cmd, answer)
        if self._observer is not None:
            self._observe(self._observer, cmd.code, answer, time.perf_counter())
        return True

    def _dispatch_observed(self, cmd: RemotingCommand) -> None:
        """:meth:`_dispatch` that also tells the observer each request's answer and time (kept
        apart so that a server without an observer pays nothing for it)."""
        started = self._started = time.perf_counter()
        self._held = False
        observer = self._observer
        assert observer is not None
        handler = self._handlers.get(cmd.code)
        if handler is None:
            result: HandlerResult = cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported")
        else:
            try:
                result = handler(self, cmd)
            except Exception as e:  # a handler bug must not reach the transport
                log.exception("%s: handler for code %d failed", self._name, cmd.code)
                result = cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(e).__name__}: {e}")
        if isinstance(result, asyncio.Future):
            self._hold(cmd)
            result.add_done_callback(functools.partial(self._future_done, cmd, started))
            return
        if inspect.isawaitable(result):
            self._hold(cmd)
            asyncio.ensure_future(self._finish(cmd, result, started))
            return
        if result is not None:
            self._reply(cmd, result)
        elif self._held:  # observed when answered
            return
        self._observe(observer, cmd.code, result, started)

    holds_answers = True
    """Whether a handler may :meth:`hold` a request (not on channels that are no socket)."""

    def hold(self, cmd: RemotingCommand) -> float:
        """From a handler that returns None: ``cmd`` is answered later with :meth:`answer` (a future
        costs more); the result is the token :meth:`answer` takes (when the request started)."""
        self._hold(cmd)
        self._held = True
        return self._started

    def answer(self, cmd: RemotingCommand, response: RemotingCommand, token: float) -> None:
        """The answer to a request :meth:`hold` kept (on the loop), as if a handler's future completed."""
        self.in_flight -= 1
        if self.is_open:
            self._reply(cmd, response)
        if self._observer is not None:
            self._observe(self._observer, cmd.code, response, token)

    def _hold(self, cmd: RemotingCommand) -> None:
        """One more request answered later; past ``max_in_flight`` the connection is closed."""
        self.in_flight += 1
        if self._max_in_flight and self.in_flight > self._max_in_flight and self.is_open:
            peer_log.warning("%s: closing connection from %s: more than %d requests in flight (last code %d)",
                             self._name, self.remote_addr, self._max_in_flight, cmd.code)
            self.drop(f"more than {self._max_in_flight} requests in flight")

    def _observe(self, observer: RequestObserver, code: int, result: RemotingCommand | None, started: float) -> None:
        try:
            observer(code, None if result is None else result.code, time.perf_counter() - started)
        except Exception:  # metrics must never break serving
            log.exception("%s: request observer failed", self._name)

    async def _finish(self, cmd: RemotingCommand, pending: Awaitable[RemotingCommand | None], started: float = 0.0) -> None:
        try:
            result = await pending
        except Exception as e:
            log.exception("%s: handler for code %d failed", self._name, cmd.code)
            result = cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(e).__name__}: {e}")
        finally:
            self.in_flight -= 1
        if result is not None and self.is_open:
            self._reply(cmd, result)
        if self._observer is not None:
            self._observe(self._observer, cmd.code, result, started)

    def _future_done(self, cmd: RemotingCommand, started: float, fut: asyncio.Future[RemotingCommand | None]) -> None:
        """A handler's future completed: answer (like :meth:`_finish`, without a task)."""
        self.in_flight -= 1
        result: RemotingCommand | None
        if fut.cancelled():
            result = None
        elif (exc := fut.exception()) is not None:
            log.error("%s: handler for code %d failed", self._name, cmd.code, exc_info=exc)
            result = cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        else:
            result = fut.result()
        if result is not None and self.is_open:
            self._reply(cmd, result)
        if self._observer is not None:
            self._observe(self._observer, cmd.code, result, started)

    def _reply(self, request: RemotingCommand, response: RemotingCommand) -> None:
        if request.is_oneway:
            return
        response.opaque = request.opaque
        response.flag |= RPC_RESPONSE
        self.write(response)

    # -- sending ------------------------------------------------------------------------------
    def write(self, cmd: RemotingCommand) -> None:
        """Queue one command; the body (a mapped-file slice, say) is handed over without a copy."""
        t = self._transport
        if t is None or self.closed:
            raise RemotingError(f"connection to {self.remote_addr} is closed")
        if t.is_closing():  # going away (closed or dropped): nothing more reaches the peer
            return
        self.last_active = self._loop.time()
        out = self._out
        if out is None:
            out = self._out = []
            self._loop.call_soon(self._flush_out)
        prefix = encode_prefix(cmd)
        out.append(prefix)
        size = len(prefix)
        body = cmd.body
        if body:
            if isinstance(body, list):
                out.extend(body)
                size += sum(map(len, body))
            else:
                out.append(body)
                size += len(body)
        self._out_bytes += size
        if self.writing_paused and self._max_queued and self._out_bytes + t.get_write_buffer_size() > self._max_queued:
            peer_log.warning("%s: closing connection from %s: it is not reading its answers (over %d bytes queued)",
                             self._name, self.remote_addr, self._max_queued)
            self.drop(f"over {self._max_queued} bytes of answers queued")

    def _flush_out(self) -> None:
        out, self._out = self._out, None
        self._out_bytes = 0
        t = self._transport
        if out and t is not None and not self.closed:
            t.writelines(out)

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send a request and wait for its response."""
        cmd.opaque = next_opaque()
        fut: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self._pending[cmd.opaque] = fut
        deadline = self._loop.time() + timeout
        try:
            if self.writing_paused:  # the peer is not reading: wait (within the timeout) before adding more
                await asyncio.wait_for(self.drain(), timeout)
            self.write(cmd)
            return await asyncio.wait_for(fut, max(0.0, deadline - self._loop.time()))
        except TimeoutError:
            raise RemotingTimeoutError(
                f"no response from {self.remote_addr} to request code {cmd.code} within {timeout:.1f}s"
            ) from None
        finally:
            self._pending.pop(cmd.opaque, None)

    def invoke_oneway(self, cmd: RemotingCommand) -> None:
        cmd.opaque = next_opaque()
        cmd.flag |= 0x2
        self.write(cmd)

    @property
    def write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() if self._transport else 0

    # -- closing ------------------------------------------------------------------------------
    def add_close_callback(self, fn: Callable[[Connection], None]) -> None:
        if self.closed:
            fn(self)
        else:
            self._close_callbacks.append(fn)

    def close(self, reason: str | None = None) -> None:
        if self.close_reason is None:
            self.close_reason = reason
        if self._out:  # what was written before the close still goes out
            self._flush_out()
        if self._transport is not None:
            self._transport.close()
        else:
            self._closed(reason or "closed")

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def drop(self, reason: str) -> None:
        """Close at once, discarding what is queued for the peer (it broke a limit; it is not reading)."""
        if self.close_reason is None:
            self.close_reason = reason
        self._out, self._out_bytes = None, 0
        self.abort()
        if self._transport is None:
            self._closed(reason)

    @property
    def is_open(self) -> bool:
        """Neither closed nor closing: an answer written now can still reach the peer."""
        t = self._transport
        return not self.closed and t is not None and not t.is_closing()

    def _closed(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        err = RemotingError(f"connection to {self.remote_addr} closed: {reason}")
        waiter, self._drained = self._drained, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(err)
            waiter.exception()  # a drain() may not be waiting any more: don't warn about it
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(err)
        self._pending.clear()
        if not self.connected.done():
            self.connected.set_exception(err)
            self.connected.exception()  # nobody may be waiting: don't warn about it
        for fn in self._close_callbacks:
            try:
                fn(self)
            except Exception:
                log.exception("%s: close callback failed", self._name)
        self._close_callbacks.clear()


class HandlerRegistry(Protocol):
    """Where processors register their handlers (a server, or a test's dictionary)."""

    def register(self, code: int, handler: Handler) -> None: ...


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
        """When set, every connection is TLS with this context (the server's name checked as the context says)."""
        self._conns: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Future[Connection]] = {}

    def register(self, code: int, handler: Handler) -> None:
        self.handlers[int(code)] = handler

    async def connection(self, addr: str, timeout: float | None = None) -> Connection:
        """The open connection to ``addr``, or a new one. ``timeout`` bounds this caller's wait for a
        connect (at most ``connect_timeout``): a caller with retries left gives up early on an
        address that does not answer (a deleted pod's IP) and tries elsewhere."""
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:
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
                loop.create_connection(lambda: Connection(self.handlers, on_close=drop, name="client"), host, int(port),
                                       ssl=self.ssl, server_hostname=host if self.ssl is not None else None),
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

    def close_connection(self, addr: str) -> None:
        conn = self._conns.pop(addr, None)
        if conn is not None:
            conn.close("closed by client")

    async def close(self) -> None:
        for conn in list(self._conns.values()):
            conn.close("client closing")
        self._conns.clear()
        await asyncio.sleep(0)
