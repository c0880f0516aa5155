"""An optional hook through which applications export the client's send and consume metrics.

Give a :class:`ClientMetrics` to :class:`~.settings.ProducerSettings` or
:class:`~.settings.PushConsumerSettings` (``metrics=``); the client calls it once per send (after
its retries), once per listener call and once per pull. Anything with these three methods works (a
StatsD or OpenTelemetry adapter, a test double); :class:`PrometheusClientMetrics` is the ready-made
one for ``prometheus_client``::

    from prometheus_client import start_http_server
    metrics = PrometheusClientMetrics()                 # the default registry
    producer = Producer("orders", "ns:9876", ProducerSettings(metrics=metrics))
    start_http_server(8000)

Calls come from the client's event loop; a hook must be quick and must not raise (an exception is
logged and dropped). Labels are the group, the topic and an outcome: bounded sets (no message ids,
keys or client ids).
"""

from __future__ import annotations

import logging
from typing import Protocol

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

log = logging.getLogger("pyrocketmq.client")


class ClientMetrics(Protocol):
    def on_send(self, group: str, topic: str, outcome: str, seconds: float, count: int) -> None:
        """A send finished: ``outcome`` is the :class:`~.message.SendStatus` name (``SEND_OK`` …),
        or ``error`` when it raised; ``count`` messages (a batch counts its messages)."""

    def on_consume(self, group: str, topic: str, ok: bool, seconds: float, count: int) -> None:
        """A listener call over ``count`` messages returned (``ok``: it consumed them)."""

    def on_pull(self, group: str, topic: str, seconds: float, count: int) -> None:
        """A pull returned ``count`` messages."""


def notify(hook: ClientMetrics | None, method: str, *args: object) -> None:
    """Call ``hook.<method>(*args)`` if there is a hook; never raise."""
    if hook is None:
        return
    try:
        getattr(hook, method)(*args)
    except Exception:
        log.exception("client metrics hook %s failed", method)


_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class PrometheusClientMetrics:
    """:class:`ClientMetrics` as ``prometheus_client`` metrics in ``registry``.

    ==================================================  ======================================
    ``pyrocketmq_client_sent_messages_total``            messages sent, by group, topic, outcome
    ``pyrocketmq_client_send_duration_seconds``          send latency (retries included)
    ``pyrocketmq_client_consumed_messages_total``        messages consumed, by group, topic, result
    ``pyrocketmq_client_consume_duration_seconds``       listener call latency
    ``pyrocketmq_client_pulled_messages_total``          messages pulled, by group, topic
    ==================================================  ======================================
    """

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        self.sent = Counter(
            "pyrocketmq_client_sent_messages",
            "Messages sent, by producer group, topic and outcome.",
            ["group", "topic", "outcome"],
            registry=registry,
        )
        self.send_duration = Histogram("pyrocketmq_client_send_duration_seconds",
                                       "Time a send took, retries included.", ["group", "topic"],
                                       buckets=_BUCKETS, registry=registry)
        self.consumed = Counter(
            "pyrocketmq_client_consumed_messages",
            "Messages given to the listener, by consumer group, topic and result (ok, failed).",
            ["group", "topic", "result"],
            registry=registry,
        )
        self.consume_duration = Histogram("pyrocketmq_client_consume_duration_seconds",
                                          "Time one listener call took.", ["group", "topic"],
                                          buckets=_BUCKETS, registry=registry)
        self.pulled = Counter(
            "pyrocketmq_client_pulled_messages",
            "Messages pulled, by consumer group and topic.",
            ["group", "topic"],
            registry=registry,
        )

    def on_send(self, group: str, topic: str, outcome: str, seconds: float, count: int) -> None:
        self.sent.labels(group, topic, outcome).inc(count)
        self.send_duration.labels(group, topic).observe(seconds)

    def on_consume(self, group: str, topic: str, ok: bool, seconds: float, count: int) -> None:
        self.consumed.labels(group, topic, "ok" if ok else "failed").inc(count)
        self.consume_duration.labels(group, topic).observe(seconds)

    def on_pull(self, group: str, topic: str, seconds: float, count: int) -> None:
        self.pulled.labels(group, topic).inc(count)
