"""Held pulls: a pull that found nothing waits here until a message lands in its queue.

The store calls :meth:`PullHoldService.notify` synchronously right after it dispatches a message
into a consume queue, on the event-loop thread, so a held pull is woken in the same loop turn the
send is acknowledged in; there is no window between "found nothing" and "holding" because both
happen on that one thread. Each hold also ends at its own deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class HeldPull:
    offset: int
    """The queue offset the consumer asked for: wake when the queue grows past it."""
    matches: Callable[[int], bool] | None
    """Tag filter on the consume-queue tags code; ``None`` matches everything."""
    future: asyncio.Future[None]


class PullHoldService:
    def __init__(self) -> None:
        self._held: dict[tuple[str, int], list[HeldPull]] = {}

    @property
    def held_count(self) -> int:
        return sum(len(v) for v in self._held.values())

    async def wait(self, topic: str, queue_id: int, offset: int, matches: Callable[[int], bool] | None, timeout: float) -> bool:
        """Wait until a matching message lands at or after ``offset``; False on timeout."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        key = (topic, queue_id)
        entry = HeldPull(offset, matches, fut)
        self._held.setdefault(key, []).append(entry)
        try:
            await asyncio.wait_for(fut, timeout)
            return True
        except TimeoutError:
            return False
        finally:
            waiting = self._held.get(key)
            if waiting is not None:
                try:
                    waiting.remove(entry)
                except ValueError:
                    pass
                if not waiting:
                    del self._held[key]

    def notify(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None) -> None:
        """A message was dispatched; the queue's max offset is now ``max_offset``."""
        waiting = self._held.get((topic, queue_id))
        if not waiting:
            return
        for entry in waiting:
            if entry.future.done() or max_offset <= entry.offset:
                continue
            if entry.matches is None or tags_code is None or entry.matches(tags_code):
                entry.future.set_result(None)

    def wake_all(self) -> None:
        """Shutdown: answer every held pull now."""
        for waiting in self._held.values():
            for entry in waiting:
                if not entry.future.done():
                    entry.future.set_result(None)
