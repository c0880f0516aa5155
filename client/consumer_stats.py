"""A push consumer's per-topic pull and consume figures (ConsumerRunningInfo's statusTable),
passed on to the application's metrics hook as they happen."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from pyrocketmq.remoting.body import MessageQueue, SubscriptionData

from .metrics import ClientMetrics, notify
from .offset_store import OffsetStore
from .process_queue import ProcessQueue
from .settings import PushConsumerSettings


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


def running_info_doc(
    *, orderly: bool, settings: PushConsumerSettings, namesrv_addr: str, started_ms: int, from_where: str,
    subscriptions: Iterable[SubscriptionData], table: Mapping[MessageQueue, ProcessQueue],
    offset_store: OffsetStore, stats: ConsumerStats,
) -> dict[str, Any]:
    """The ConsumerRunningInfo document (GET_CONSUMER_RUNNING_INFO, 307) mqadmin's
    consumerStatus / consumerProgress read from a push consumer."""
    mq_table = {
        orjson.dumps(mq.to_dict()).decode(): pq.info(offset_store.read_memory(mq))
        for mq, pq in sorted(table.items())
    }
    return {
        "properties": {
            "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
            "PROP_CONSUMEORDERLY": str(orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(settings.consume.workers),
            "PROP_CONSUMER_START_TIMESTAMP": str(started_ms),
            "PROP_NAMESERVER_ADDR": namesrv_addr,
            "PROP_CLIENT_LANGUAGE": "PYTHON",
            "messageModel": settings.message_model,
            "consumeFromWhere": from_where,
            "allocateMessageQueueStrategy": settings.rebalance.strategy,
            "consumeMessageBatchMaxSize": str(settings.consume.batch_size),
            "pullBatchSize": str(settings.pull.batch_size),
        },
        "subscriptionSet": [s.to_dict() for s in subscriptions],
        "mqTable": mq_table,
        "statusTable": stats.table(),
    }
