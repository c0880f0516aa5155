"""Held pulls: a pull that found nothing waits here until a message lands in its queue.

The store calls :meth:`PullHoldService.notify` synchronously right after it dispatches a message
into a consume queue, on the event-loop thread, so a held pull is woken in the same loop turn the
send is acknowledged in. :meth:`PullHoldService.hold` registers a pull in the same call, on the
same thread, as the read that found nothing: a message dispatched after that read (by a send
handled later in the same loop turn, say) finds the pull already registered. Each hold also ends
at its own deadline.
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
    future: asyncio.Future[bool]


class PullHoldService:
    def __init__(self) -> None:
        self._held: dict[tuple[str, int], list[HeldPull]] = {}

    @property
    def held_count(self) -> int:
        return sum(len(v) for v in self._held.values())

    def hold(self, topic: str, queue_id: int, offset: int, matches: Callable[[int], bool] | None,
             timeout: float) -> asyncio.Future[bool]:
        """Hold a pull from now on: the future is True once a matching message lands at or after
        ``offset`` (or on shutdown), False at the deadline. Cancelling it forgets the pull."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        key = (topic, queue_id)
        entry = HeldPull(offset, matches, fut)
        self._held.setdefault(key, []).append(entry)
        deadline = loop.call_later(timeout, _expire, fut)
        fut.add_done_callback(lambda _: self._forget(key, entry, deadline))
        return fut

    def _forget(self, key: tuple[str, int], entry: HeldPull, deadline: asyncio.TimerHandle) -> None:
        deadline.cancel()
        waiting = self._held[key]  # each entry is forgotten once, by its own future's callback
        waiting.remove(entry)
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
                entry.future.set_result(True)

    def wake_all(self) -> None:
        """Shutdown: answer every held pull now."""
        for waiting in self._held.values():
            for entry in waiting:
                if not entry.future.done():
                    entry.future.set_result(True)


def _expire(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)
