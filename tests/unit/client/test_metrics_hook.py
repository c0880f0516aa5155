"""The client's metrics hook: the Prometheus implementation, and that a broken hook never breaks
sending or consuming."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from pyrocketmq.client import PrometheusClientMetrics
from pyrocketmq.client.consumer_stats import ConsumerStats
from pyrocketmq.client.metrics import notify


def test_prometheus_client_metrics_count_what_they_are_told():
    registry = CollectorRegistry()
    m = PrometheusClientMetrics(registry)
    m.on_send("p", "T", "SEND_OK", 0.01, 3)
    m.on_send("p", "T", "error", 0.5, 1)
    m.on_consume("g", "T", True, 0.002, 2)
    m.on_consume("g", "T", False, 0.002, 1)
    m.on_pull("g", "T", 0.1, 32)
    get = registry.get_sample_value
    assert (
        get("pyrocketmq_client_sent_messages_total", {"group": "p", "topic": "T", "outcome": "SEND_OK"}) == 3
    )
    assert get("pyrocketmq_client_sent_messages_total", {"group": "p", "topic": "T", "outcome": "error"}) == 1
    assert get("pyrocketmq_client_send_duration_seconds_count", {"group": "p", "topic": "T"}) == 2
    assert get("pyrocketmq_client_consumed_messages_total", {"group": "g", "topic": "T", "result": "ok"}) == 2
    assert (
        get("pyrocketmq_client_consumed_messages_total", {"group": "g", "topic": "T", "result": "failed"})
        == 1
    )
    assert get("pyrocketmq_client_pulled_messages_total", {"group": "g", "topic": "T"}) == 32


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def on_send(self, *args):
        self.calls.append(("send", *args))

    def on_consume(self, *args):
        self.calls.append(("consume", *args))

    def on_pull(self, *args):
        self.calls.append(("pull", *args))


def test_consumer_stats_forward_to_the_hook():
    hook = Recorder()
    stats = ConsumerStats(group="g", metrics=hook)
    stats.record_consume("T", 0.5, 4, True)
    stats.record_pull("T", 0.1, 8)
    assert hook.calls == [("consume", "g", "T", True, 0.5, 4), ("pull", "g", "T", 0.1, 8)]
    assert stats.topics["T"].ok == 4 and stats.topics["T"].pulled == 8


def test_a_failing_hook_is_logged_and_dropped(caplog):
    class Broken:
        def on_send(self, *args):
            raise RuntimeError("exporter down")

    notify(Broken(), "on_send", "p", "T", "SEND_OK", 0.1, 1)
    notify(None, "on_send", "p", "T", "SEND_OK", 0.1, 1)
    assert "exporter down" in caplog.text
