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

What a peer holds before it proves anything is bounded: each frame must be whole within
``frame_timeout_s`` of its first byte (:attr:`Connection.frame_started`, looked at by the server's
sweep), and the partial frames of all the connections that have had no request accepted yet share
one cap (:class:`~.limits.UnprovenBytes`). The timing lives here, not in the compiled frame codec.

The same class serves the broker→client direction (NOTIFY_CONSUMER_IDS_CHANGED, transaction
check-backs, …): a server keeps the client's connection and calls :meth:`Connection.invoke` on it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from .code import ResponseCode
from .command import RPC_RESPONSE, FrameDecoder, FrameError, RemotingCommand, encode_prefix
from .limits import NO_LIMITS, ConnectionLimits, UnprovenBytes
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


def handler_failed(
    where: str, cmd: RemotingCommand, exc: BaseException, what: str = "handler"
) -> RemotingCommand:
    """The one answer to a request whose handler (or the check before it) raised: logged with its
    traceback, SYSTEM_ERROR naming the exception. No handler guards itself."""
    log.error("%s: %s for code %d failed", where, what, cmd.code, exc_info=exc)
    return cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")


async def call_handler(handlers: Mapping[int, Handler], channel: Connection, cmd: RemotingCommand,
                       where: str) -> RemotingCommand | None:
    """Run ``cmd``'s handler on an in-process channel (the 5.x endpoint's calls into the 4.x
    processors): its answer, REQUEST_CODE_NOT_SUPPORTED without a handler, :func:`handler_failed`'s
    if it raised. Connections dispatch their own requests (:meth:`Connection._dispatch`)."""
    handler = handlers.get(cmd.code)
    if handler is None:
        return cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f"request code {cmd.code} is not served")
    try:
        result = handler(channel, cmd)
        return await result if inspect.isawaitable(result) else result
    except Exception as e:
        return handler_failed(where, cmd, e)


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
        unproven: UnprovenBytes | None = None,
    ) -> None:
        self._handlers = handlers
        self._unproven = unproven
        """The server's pool of bytes held for unproven connections, until this one is proven."""
        self._unproven_held = 0
        self.frame_started: float | None = None
        """Loop time the first byte of the frame being received came; None between frames."""
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
        self.last_read = self.last_active
        """Loop time of the last byte read."""
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
            peer_log.warning(
                "%s: refusing connection from %s: %s", self._name, self.remote_addr, self._refuse
            )
            self.close_reason = self._refuse
            self.abort()
            return
        if not self.connected.done():
            self.connected.set_result(None)

    def data_received(self, data: bytes) -> None:
        self.last_active = self.last_read = now = self._loop.time()
        held = self._decoder.pending + len(data)
        if self._out is not None:  # a flush is already scheduled; it takes these replies too
            self._receive(data)
        else:
            self._out = []
            try:
                self._receive(data)
            finally:
                self._flush_out()
        pending = self._decoder.pending
        if not pending:
            self.frame_started = None
        elif (
            pending < held or self.frame_started is None
        ):  # a frame ended and the next began here, or a first byte
            self.frame_started = now
        if self._unproven is not None and pending != self._unproven_held:
            self._hold_unproven(pending)

    def _hold_unproven(self, pending: int) -> None:
        """This unproven connection now holds ``pending`` bytes: past the server's cap, it is closed."""
        assert self._unproven is not None
        if self._unproven.resize(self._unproven_held, pending):
            self._unproven_held = pending
            return
        peer_log.warning(
            "%s: closing connection from %s: %d bytes of a frame from a connection with no request "
            "accepted yet would pass the %d bytes all such connections may hold",
            self._name,
            self.remote_addr,
            pending,
            self._unproven.cap,
        )
        self._decoder = FrameDecoder()  # its bytes go now, not when the transport is collected
        self.drop(f"partial frames of unproven connections over {self._unproven.cap} bytes")

    def _leave_unproven(self) -> None:
        """A request of this connection was accepted (or it closed): its bytes no longer count."""
        if self._unproven is not None:
            self._unproven.resize(self._unproven_held, 0)
            self._unproven, self._unproven_held = None, 0

    def _receive(self, data: bytes) -> None:
        frames = self._decoder.feed(data)
        try:
            for cmd in frames:
                if cmd.flag & RPC_RESPONSE:
                    fut = self._pending.pop(cmd.opaque, None)
                    if fut is not None and not fut.done():
                        fut.set_result(cmd)
                    elif fut is None:
                        log.debug(
                            "%s: response for unknown opaque %d from %s",
                            self._name,
                            cmd.opaque,
                            self.remote_addr,
                        )
                    continue
                if self._transport is not None and self._transport.is_closing():
                    # closed while reading (a limit, a close by a handler): the rest is dropped
                    frames.close()
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
            peer_log.warning(
                "%s: closing connection from %s: malformed frame: %s", self._name, self.remote_addr, e
            )
            self.close(f"malformed frame: {e}")
        except Exception as e:  # nothing a peer sends may reach the event loop's error handler
            log.exception(
                "%s: closing connection from %s: error handling its data", self._name, self.remote_addr
            )
            self.close(f"internal error: {type(e).__name__}")

    def pause_writing(self) -> None:
        self.writing_paused = True
        if self._serving and self._transport is not None and not self.closed:
            log.debug("%s: %s is not reading its replies: reading no more requests until it does",
                      self._name, self.remote_addr)
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self.frame_started is not None:  # not read while paused: the frame's time starts again
            self.frame_started = self._loop.time()
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
    def _failed(self, cmd: RemotingCommand, exc: BaseException, what: str = "handler") -> RemotingCommand:
        return handler_failed(self._name, cmd, exc, what)

    def _dispatch(self, cmd: RemotingCommand) -> None:
        """Run the request's handler and answer it now, from a future's callback or from a task. With
        an observer, each request's answer and time is told to it once (at once, or when answered)."""
        if self._before is not None and self._refused(cmd):
            return
        if self._unproven is not None:
            self._leave_unproven()
        observer = self._observer
        started = 0.0
        if observer is not None:
            started = self._started = time.perf_counter()
            self._held = False
        handler = self._handlers.get(cmd.code)
        result: HandlerResult
        if handler is None:
            result = cmd.response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported"
            )
        else:
            try:
                result = handler(self, cmd)
            except Exception as e:  # a handler bug must not reach the transport
                result = self._failed(cmd, e)
        if type(result) is RemotingCommand:  # the hot path: answered at once
            self._reply(cmd, result)
        elif result is None:
            if self._held:  # observed when answered
                return
        elif isinstance(result, asyncio.Future):  # answered from a callback: no task per request
            self._hold(cmd)
            result.add_done_callback(functools.partial(self._future_done, cmd, started))
            return
        elif inspect.isawaitable(result):
            self._hold(cmd)
            asyncio.ensure_future(self._finish(cmd, result, started))
            return
        else:
            self._reply(cmd, result)
        if observer is not None:
            self._observe(observer, cmd.code, result, started)

    def _refused(self, cmd: RemotingCommand) -> bool:
        """The ``before`` check (access control) answered instead of the handler."""
        assert self._before is not None
        try:
            answer = self._before(self, cmd)
        except Exception as e:
            answer = self._failed(cmd, e, "the check before the handler")
        if answer is None:
            return False
        self._reply(cmd, answer)
        if self._observer is not None:
            self._observe(self._observer, cmd.code, answer, time.perf_counter())
        return True

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

    def _observe(
        self, observer: RequestObserver, code: int, result: RemotingCommand | None, started: float
    ) -> None:
        try:
            observer(code, None if result is None else result.code, time.perf_counter() - started)
        except Exception:  # metrics must never break serving
            log.exception("%s: request observer failed", self._name)

    async def _finish(
        self, cmd: RemotingCommand, pending: Awaitable[RemotingCommand | None], started: float = 0.0
    ) -> None:
        try:
            result = await pending
        except Exception as e:
            result = self._failed(cmd, e)
        finally:
            self.in_flight -= 1
        if result is not None and self.is_open:
            self._reply(cmd, result)
        if self._observer is not None:
            self._observe(self._observer, cmd.code, result, started)

    def _future_done(
        self, cmd: RemotingCommand, started: float, fut: asyncio.Future[RemotingCommand | None]
    ) -> None:
        """A handler's future completed: answer (like :meth:`_finish`, without a task)."""
        self.in_flight -= 1
        result: RemotingCommand | None
        if fut.cancelled():
            result = None
        elif (exc := fut.exception()) is not None:
            result = self._failed(cmd, exc)
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
        if (
            self.writing_paused
            and self._max_queued
            and self._out_bytes + t.get_write_buffer_size() > self._max_queued
        ):
            peer_log.warning(
                "%s: closing connection from %s: it is not reading its answers (over %d bytes queued)",
                self._name,
                self.remote_addr,
                self._max_queued,
            )
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
        start = self._loop.time()
        deadline = start + timeout
        try:
            if self.writing_paused:  # the peer is not reading: wait (within the timeout) before adding more
                await asyncio.wait_for(self.drain(), timeout)
            self.write(cmd)
            return await asyncio.wait_for(fut, max(0.0, deadline - self._loop.time()))
        except TimeoutError:
            if self.last_read < start:
                # not a byte from the peer all along: a frozen or cut-off host, whose kernel may keep the
                # connection open for minutes. Closed, so the next request connects afresh (through a
                # Service, to whoever serves the address now), as Apache's clients do on a timeout.
                self.drop(f"no byte from the peer within {timeout:.1f}s")
            raise RemotingTimeoutError(
                f"no response from {self.remote_addr} to request code {cmd.code} within {timeout:.1f}s"
            ) from None
        finally:
            self._pending.pop(cmd.opaque, None)

    def invoke_oneway(self, cmd: RemotingCommand) -> None:
        cmd.opaque = next_opaque()
        cmd.flag |= 0x2
        self.write(cmd)

    def peer_certificate(self) -> bytes | None:
        """The certificate (DER) the peer presented on this TLS connection and the handshake verified;
        None in the clear or without one."""
        ssl_object = self._transport.get_extra_info("ssl_object") if self._transport else None
        return ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None

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
        self._leave_unproven()
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
