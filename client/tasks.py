"""Tasks and timers owned by one part of a consumer, stopped together.

A :class:`TaskSet` is where a component starts its background coroutines (:meth:`TaskSet.spawn`)
and delayed calls (:meth:`TaskSet.later`). Once :meth:`TaskSet.close` is called nothing new starts,
pending timers are cancelled, running tasks get ``grace`` seconds to end and are then cancelled.

Invariant: after :meth:`TaskSet.close` returns, no task or timer started through the set is alive.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


class TaskSet:
    """The background work of one component.

    Example::

        tasks = TaskSet()
        tasks.spawn(pull(req))                 # runs on the loop, tracked
        tasks.later(3.0, queue.put_nowait, req)  # a call in 3 s, unless closed by then
        await tasks.close(grace=10.0)
    """

    def __init__(self) -> None:
        self.open = True
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timers: set[asyncio.TimerHandle] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` as a task of this set (closed at once if the set is closed)."""
        if not self.open:
            coro.close()
            return
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def later(self, delay: float, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` on the loop after ``delay`` seconds, unless the set is closed first."""
        if not self.open:
            return
        handle: asyncio.TimerHandle

        def fire() -> None:
            self._timers.discard(handle)
            if self.open:
                fn(*args)

        handle = asyncio.get_running_loop().call_later(max(0.0, delay), fire)
        self._timers.add(handle)

    async def close(self, grace: float = 0.0) -> None:
        """Start nothing more; cancel the timers; give running tasks ``grace`` s, then cancel them."""
        self.open = False
        for h in self._timers:
            h.cancel()
        self._timers.clear()
        pending = set(self._tasks) - {asyncio.current_task()}  # a task closing its own set ends by itself
        if grace > 0 and pending:
            _, pending = await asyncio.wait(pending, timeout=grace)
        if not pending:
            return
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
