"""Per-topic and per-group traffic over the last minute, hour and day (RocketMQ's ``StatsItem``s behind
VIEW_BROKER_STATS_DATA, which ``mqadmin statsAll`` reads). Pure: the caller passes the clock.

Each item counts a value (messages) and the calls that added to it. Snapshots of both are kept every
10 s for the minute window (7 of them), every 10 min for the hour (7) and every hour for the day
(25). A window's figures run from its oldest snapshot to now: ``sum`` is what was added since,
``tps`` that per second, ``avgpt`` per call. An item starts with a snapshot of zero at its creation,
so a topic written to for the first time shows its traffic at once.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
NAMES = (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, GROUP_GET_NUMS, GROUP_GET_SIZE)

WINDOWS = {"minute": (10_000, 7), "hour": (600_000, 7), "day": (3_600_000, 25)}
"""window → (snapshot period ms, snapshots kept)."""


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    sum: int
    tps: float
    avgpt: float


class StatsItem:
    __slots__ = ("value", "times", "snapshots")

    def __init__(self, now_ms: int) -> None:
        self.value = 0
        self.times = 0
        self.snapshots = {w: deque([(now_ms, 0, 0)], maxlen=keep) for w, (_, keep) in WINDOWS.items()}

    def add(self, value: int, times: int = 1) -> None:
        self.value += value
        self.times += times

    def sample(self, window: str, now_ms: int) -> None:
        self.snapshots[window].append((now_ms, self.value, self.times))

    def data(self, window: str, now_ms: int) -> StatsSnapshot:
        ts, value, times = self.snapshots[window][0]
        total = self.value - value
        elapsed = now_ms - ts
        calls = self.times - times
        return StatsSnapshot(total, total * 1000.0 / elapsed if elapsed > 0 else 0.0,
                             total / calls if calls > 0 else 0.0)


class StatsTable:
    """Every item by (stats name, key); a topic's key is the topic, a group's ``topic@group``."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, StatsItem]] = {name: {} for name in NAMES}
        self._last = dict.fromkeys(WINDOWS, 0)

    def add(self, name: str, key: str, value: int, now_ms: int, times: int = 1) -> None:
        self.item(name, key, now_ms).add(value, times)

    def item(self, name: str, key: str, now_ms: int) -> StatsItem:
        """``(name, key)``'s item, made (starting at ``now_ms``) when there is none yet."""
        table = self.items[name]
        item = table.get(key)
        if item is None:
            item = table[key] = StatsItem(now_ms)
        return item

    def get(self, name: str, key: str) -> StatsItem | None:
        return self.items.get(name, {}).get(key)

    def sample(self, now_ms: int) -> None:
        """Take the snapshots that are due (call every 10 s or more often)."""
        for window, (period, _) in WINDOWS.items():
            if now_ms - self._last[window] >= period:
                self._last[window] = now_ms
                for table in self.items.values():
                    for item in table.values():
                        item.sample(window, now_ms)

    def forget_topic(self, topic: str) -> None:
        for table in self.items.values():
            for key in [k for k in table if k == topic or k.startswith(topic + "@")]:
                del table[key]
