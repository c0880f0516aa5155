"""The per-user quota series on the broker's ``/metrics`` (read from the :class:`~.quota.QuotaTable`
at scrape time; labels ``cluster``, ``broker``, ``user``). A user appears once it sent a request
(authenticated) or has a quota; the set is bounded by the broker's users.

=======================================================  ==============================================
metric                                                   meaning
=======================================================  ==============================================
``pyrocketmq_broker_user_produced_bytes_total{user}``    bodies of the user's sends (batches whole)
``pyrocketmq_broker_user_consumed_bytes_total{user}``    bodies of the answers to the user's pulls
``pyrocketmq_broker_user_requests_total{user}``          the user's requests
``pyrocketmq_broker_user_throttled_requests_total{user}``  requests answered late by its quota
``pyrocketmq_broker_user_throttle_seconds_total{user}``  seconds those answers were held back
``pyrocketmq_broker_user_quota{user,limit}``             the quota (``producedBytesPerSecond``...)
=======================================================  ==============================================
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pyrocketmq.metrics import ScrapeCollector

from .quota import QuotaTable

if TYPE_CHECKING:
    from .settings import IdentitySettings

PREFIX = "pyrocketmq_broker_user"
_COUNTERS = (
    ("produced_bytes", "Bytes the user sent (message bodies, batches whole).", "produced_bytes"),
    ("consumed_bytes", "Bytes of the answers to the user's pulls (message bodies).", "consumed_bytes"),
    ("requests", "Requests of the user.", "request_count"),
    ("throttled_requests", "Requests of the user answered late by its quota.", "throttled"),
    ("throttle_seconds", "Seconds the user's answers were held back by its quota.", "throttle_seconds"),
)


def quota_families(table: QuotaTable, cluster: str, broker: str) -> Iterator[Metric]:
    """Every per-user family, read from ``table`` now (on the loop thread)."""
    labels = ["cluster", "broker", "user"]
    meters = sorted(table.meters.items())
    for name, doc, attr in _COUNTERS:
        family = CounterMetricFamily(f"{PREFIX}_{name}", doc, labels=labels)
        for user, meter in meters:
            family.add_metric([cluster, broker, user], getattr(meter, attr))
        yield family
    limits = GaugeMetricFamily(f"{PREFIX}_quota", "The user's quota per second (absent: no limit).",
                               labels=[*labels, "limit"])
    for user, quota in table.items():
        for key, value in quota.to_info().items():
            if value:
                limits.add_metric([cluster, broker, user, key], value)
    yield limits


def register_quota_metrics(registry: CollectorRegistry, table: QuotaTable, ident: IdentitySettings) -> None:
    """Add the per-user families to a broker's registry."""
    cluster, broker = ident.cluster_name, ident.broker_name
    registry.register(ScrapeCollector(lambda: quota_families(table, cluster, broker)))
