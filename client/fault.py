"""Latency fault tolerance: which brokers a producer should avoid for a while, and for how long.

After each send the producer reports the broker's latency; a failed send counts as
``isolation_latency_ms`` (30 s). A latency at or above a step of :data:`LATENCY_STEPS_MS` makes the
broker unavailable for the matching duration of :data:`NOT_AVAILABLE_MS`::

    latency  <50ms  ≥50   ≥100  ≥550  ≥1s   ≥2s    ≥3s    ≥15s
    avoid     0     0     0     30s   60s   120s   180s   600s

(the steps of Apache RocketMQ's ``MQFaultStrategy``, so our producer spreads load the way the Java
one does). State only: nothing here does I/O or awaits, and the clock is injectable, so the rules
are tested without sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

LATENCY_STEPS_MS = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_MS = (0, 0, 30000, 60000, 120000, 180000, 600000)
ISOLATION_LATENCY_MS = 30000
"""The latency a failed send counts as (it lands on the 600 s step)."""


def not_available_duration_ms(latency_ms: float) -> int:
    """How long to avoid a broker that answered in ``latency_ms``.

    >>> not_available_duration_ms(20), not_available_duration_ms(600), not_available_duration_ms(30000)
    (0, 30000, 600000)
    """
    for step, duration in zip(reversed(LATENCY_STEPS_MS), reversed(NOT_AVAILABLE_MS), strict=True):
        if latency_ms >= step:
            return duration
    return 0


@dataclass(slots=True)
class FaultItem:
    """What is known about one broker: its last latency and when it may be used again."""

    broker_name: str
    latency_ms: float
    available_at_ms: float

    def available(self, now_ms: float) -> bool:
        return now_ms >= self.available_at_ms


class LatencyFaultTolerance:
    """Per-broker availability from observed send latencies; thread-safe.

    Example::

        >>> clock = [0.0]
        >>> ft = LatencyFaultTolerance(now_ms=lambda: clock[0])
        >>> ft.update("broker-a", 700)            # slow: avoid for 30 s
        >>> ft.is_available("broker-a"), ft.is_available("broker-b")
        (False, True)
        >>> clock[0] = 30_000
        >>> ft.is_available("broker-a")
        True
    """

    def __init__(self, now_ms: Callable[[], float] | None = None) -> None:
        self._now_ms = now_ms or (lambda: time.monotonic() * 1000.0)
        self._items: dict[str, FaultItem] = {}
        self._lock = threading.Lock()

    def update(self, broker_name: str, latency_ms: float, *, isolation: bool = False) -> None:
        """Record a send to ``broker_name``; ``isolation`` means it failed (counts as 30 s)."""
        latency = ISOLATION_LATENCY_MS if isolation else latency_ms
        now = self._now_ms()
        with self._lock:
            self._items[broker_name] = FaultItem(
                broker_name, latency, now + not_available_duration_ms(latency)
            )

    def is_available(self, broker_name: str) -> bool:
        item = self._items.get(broker_name)
        return item is None or item.available(self._now_ms())

    def remove(self, broker_name: str) -> None:
        with self._lock:
            self._items.pop(broker_name, None)

    def pick_one_at_least(self, candidates: list[str] | None = None) -> str | None:
        """Among the faulty brokers (restricted to ``candidates`` if given), the one free soonest."""
        with self._lock:
            items = [i for i in self._items.values() if candidates is None or i.broker_name in candidates]
        if not items:
            return None
        return min(items, key=lambda i: (i.available_at_ms, i.latency_ms)).broker_name

    def snapshot(self) -> dict[str, FaultItem]:
        """A copy of the current state (for logs and tests)."""
        with self._lock:
            return dict(self._items)
