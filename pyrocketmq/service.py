"""Background services on the event loop: RocketMQ's ``ServiceThread`` shape for asyncio.

A :class:`Service` runs one *round* (``task()``, plain or ``async``) again and again: it waits
``interval`` seconds between rounds, or less when someone calls :meth:`Service.wakeup`. With
``chooses_wait=True`` a round returns the seconds until the next one itself (adaptive loops: the
delay levels, the slave's config sync); ``interval`` is then the wait after a failed round.
A round that raises is logged with the service's name and the loop goes on; only :meth:`stop`
ends it. ``stop`` sets a flag as well as cancelling, so a cancellation swallowed by a racing
``wait_for`` (Python < 3.12) still ends the loop, and it waits for the round in progress to end.

:class:`Services` starts a set in order and stops it in reverse (later services may use earlier
ones), which is the broker's, the name server's and the clients' shutdown order.

The store's flush and clean loops are threads (the store is synchronous) and use the same verbs
in ``broker.store.flush.ServiceThread``: ``start``, ``wakeup``, ``shutdown``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator

log = logging.getLogger("pyrocketmq.service")

Round = Callable[[], "object | Awaitable[object]"]


class Service:
    """See the module docstring.

    ``interval`` is seconds, or a callable giving them (settings that change at runtime);
    ``first_wait=False`` runs the first round at once instead of after one interval.
    """

    def __init__(
        self,
        name: str,
        task: Round,
        interval: float | Callable[[], float],
        *,
        first_wait: bool = True,
        chooses_wait: bool = False,
        logger: logging.Logger | None = None,
    ) -> None:
        self.name = name
        self._round = task
        self._interval = interval
        self._first_wait = first_wait
        self._chooses_wait = chooses_wait
        self._log = logger or log
        self._woken = False  # wakeup() came while no wait was in progress: skip the next one
        self._waiter: asyncio.Future[None] | None = None
        self._started = asyncio.Event()
        self._stopped = False
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.rounds = 0
        """Rounds begun so far (tests and metrics read it)."""

    # -- control --------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the loop on the running event loop (a second call does nothing)."""
        if self._task is not None:
            return
        self._stopped = False
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(self._main(), name=self.name)

    def wakeup(self) -> None:
        """Run the next round now instead of after the rest of the interval."""
        waiter = self._waiter
        if waiter is not None:
            if not waiter.done():
                waiter.set_result(None)
        else:
            self._woken = True

    async def wait_running(self) -> None:
        """Return once the first round has begun."""
        await self._started.wait()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        """End the loop and wait for it; the round in progress is cancelled."""
        self._stopped = True
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    # -- the loop ---------------------------------------------------------------------------------
    def _wait_seconds(self, chosen: object) -> float:
        if self._chooses_wait and isinstance(chosen, (int, float)) and not isinstance(chosen, bool):
            return max(0.0, float(chosen))
        interval = self._interval
        return float(interval() if callable(interval) else interval)

    async def _sleep(self, seconds: float) -> None:
        # One future and one timer per wait (not wait_for's task, timer and event waiter): the delay
        # levels alone wait ~180 times a second.
        if self._woken:
            self._woken = False
            return
        loop = self._loop or asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(seconds, _wake_up, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    async def _main(self) -> None:
        chosen: object = None
        if self._first_wait:
            await self._sleep(self._wait_seconds(None))
        while not self._stopped:
            self.rounds += 1
            self._started.set()
            try:
                chosen = self._round()
                if inspect.isawaitable(chosen):
                    chosen = await chosen
            except asyncio.CancelledError:
                raise
            except Exception:
                self._log.exception("%s: round failed", self.name)
                chosen = None
            if self._stopped:
                return
            await self._sleep(self._wait_seconds(chosen))


def _wake_up(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Services:
    """Services started in order and stopped in reverse order."""

    def __init__(self, services: Iterable[Service] = ()) -> None:
        self._services = list(services)

    def add(self, service: Service) -> Service:
        self._services.append(service)
        return service

    def start(self) -> None:
        for s in self._services:
            s.start()

    async def stop(self) -> None:
        for s in reversed(self._services):
            await s.stop()
        self._services.clear()

    def __iter__(self) -> Iterator[Service]:
        return iter(self._services)
