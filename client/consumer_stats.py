"""A push consumer's per-topic pull and consume figures (ConsumerRunningInfo's statusTable),
passed on to the application's metrics hook as they happen."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .metrics import ClientMetrics, notify


@dataclass(slots=True)
class TopicStats:
    """Counters for GET_CONSUMER_RUNNING_INFO's status table."""

    ok: int = 0
    failed: int = 0
    consume_seconds: float = 0.0
    calls: int = 0
    pulled: int = 0
    pull_seconds: float = 0.0
    pulls: int = 0


@dataclass(slots=True)
class ConsumerStats:
    started: float = field(default_factory=time.monotonic)
    topics: dict[str, TopicStats] = field(default_factory=dict)
    group: str = ""
    metrics: ClientMetrics | None = None
    """The application's hook (``PushConsumerSettings.metrics``), told about the same events."""

    def record_consume(self, topic: str, seconds: float, count: int, ok: bool) -> None:
        t = self.topics.setdefault(topic, TopicStats())
        t.calls += 1
        t.consume_seconds += seconds
        if ok:
            t.ok += count
        else:
            t.failed += count
        if self.metrics is not None:
            notify(self.metrics, "on_consume", self.group, topic, ok, seconds, count)

    def record_pull(self, topic: str, seconds: float, count: int) -> None:
        t = self.topics.setdefault(topic, TopicStats())
        t.pulls += 1
        t.pull_seconds += seconds
        t.pulled += count
        if self.metrics is not None:
            notify(self.metrics, "on_pull", self.group, topic, seconds, count)

    def table(self) -> dict[str, dict[str, float]]:
        up = max(1e-3, time.monotonic() - self.started)
        return {
            topic: {
                "pullRT": 1000 * t.pull_seconds / t.pulls if t.pulls else 0.0,
                "pullTPS": t.pulled / up,
                "consumeRT": 1000 * t.consume_seconds / t.calls if t.calls else 0.0,
                "consumeOKTPS": t.ok / up,
                "consumeFailedTPS": t.failed / up,
                "consumeFailedMsgs": t.failed,
            }
            for topic, t in sorted(self.topics.items())
        }
