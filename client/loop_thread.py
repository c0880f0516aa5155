"""A background event loop for the synchronous facades (``SyncProducer``, ``SyncPullConsumer``,
``SyncAdmin``).

The client is asyncio at its core. Code that is not async gets the same objects driven on one
daemon thread that runs an event loop; each blocking call submits a coroutine with
``asyncio.run_coroutine_threadsafe`` and waits for its result.

Invariants:

- One shared loop thread per process (:func:`shared_loop`), started on first use and stopped at
  interpreter exit; every synchronous facade uses it unless given another, so their client
  instances (connections, heartbeats) are shared as in the Java client.
- A blocking call made *on* the loop thread (from a callback, say) would wait for itself forever:
  it raises :class:`~.errors.MQClientError` instead, pointing to the async API.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, Protocol, Self, TypeVar

from .errors import MQClientError, MQTimeoutError

T = TypeVar("T")


class LoopThread:
    """An event loop running forever on a daemon thread.

    Example::

        lt = LoopThread(name="my-loop")
        assert lt.run(asyncio.sleep(0, result=42)) == 42
        lt.stop()
    """

    def __init__(self, name: str = "pyrocketmq-client") -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
                for t in pending:
                    t.cancel()
                if pending:
                    self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._thread.ident

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; returns a thread-safe future."""
        if not self.alive:
            coro.close()
            raise MQClientError("the client's event-loop thread has stopped; create a new client")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (re-raising its exception).

        ``timeout`` is a last-resort bound on the wait; the coroutines have their own timeouts.
        """
        if self.in_loop_thread():
            coro.close()
            raise MQClientError(
                "a blocking client call was made on the client's own event-loop thread (inside a "
                "callback?); use the async API (await producer.send(...)) there instead"
            )
        fut = self.submit(coro)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            if fut.done():  # the call's own timeout (MQTimeoutError is a TimeoutError): as it came
                raise
            fut.cancel()
            raise MQTimeoutError(f"the call did not finish within {timeout:.1f}s") from None

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        if not self.in_loop_thread():
            self._thread.join(10)


_shared: LoopThread | None = None
_shared_lock = threading.Lock()


def shared_loop() -> LoopThread:
    """The process-wide loop thread of the synchronous facades (started on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.alive:
            _shared = LoopThread()
        return _shared


@atexit.register
def _stop_shared() -> None:
    if _shared is not None:
        _shared.stop()


class _Lifecycle(Protocol):
    async def start(self) -> Any: ...

    async def shutdown(self) -> Any: ...


class SyncFacade:
    """The blocking side of an asyncio client object (``start``/``shutdown`` coroutines): the object
    lives on a loop thread (the shared one by default) and each call waits for its result. Facades
    add their own blocking methods over ``self._lt.run(...)``."""

    def __init__(self, target: _Lifecycle, loop_thread: LoopThread | None) -> None:
        self._target = target
        self._lt = loop_thread or shared_loop()

    def start(self) -> Self:
        self._lt.run(self._target.start())
        return self

    def shutdown(self, timeout: float = 60.0) -> None:
        if self._lt.alive:
            self._lt.run(self._target.shutdown(), timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
