"""The name server's Prometheus metrics, read from its routing tables when Prometheus scrapes.

=====================================================  ===============================================
metric                                                 meaning
=====================================================  ===============================================
``pyrocketmq_namesrv_live_brokers{cluster}``           broker addresses registered and not expired
``pyrocketmq_namesrv_topics``                          topics in the routing table
``pyrocketmq_namesrv_route_queries_total{response}``   GET_ROUTEINFO_BY_TOPIC answers (SUCCESS,
                                                       TOPIC_NOT_EXIST)
``pyrocketmq_namesrv_connections``                     open remoting connections
``pyrocketmq_namesrv_requests_total{code,response}``   every request answered (transport)
``pyrocketmq_namesrv_request_duration_seconds{code}``  their latency (histogram)
=====================================================  ===============================================

Labels are bounded: cluster names and response codes; never a broker address or client.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pyrocketmq.metrics import RequestRecorder, ScrapeCollector, response_code_name
from pyrocketmq.remoting.code import RequestCode

if TYPE_CHECKING:
    from pyrocketmq.remoting.server import RemotingServer

    from .route_info import RouteInfoManager

PREFIX = "pyrocketmq_namesrv"


def live_brokers_by_cluster(routes: RouteInfoManager) -> dict[str, int]:
    """Live broker addresses (masters and slaves) per cluster; every known cluster, 0 included."""
    live = routes.broker_live_table
    counts = {cluster: 0 for cluster in routes.cluster_addr_table}
    for group in list(routes.broker_addr_table.values()):
        counts[group.cluster] = counts.get(group.cluster, 0) + sum(1 for a in group.addrs.values() if a in live)
    return dict(sorted(counts.items()))


def route_query_counts(responses: Mapping[tuple[int, int | None], int]) -> dict[str, int]:
    """Route queries by answer, from a :class:`RequestRecorder`'s counts (SUCCESS always present).

    >>> route_query_counts({(105, 0): 3, (105, 17): 1, (103, 0): 9})
    {'SUCCESS': 3, 'TOPIC_NOT_EXIST': 1}
    """
    out = {"SUCCESS": 0}
    for (req, resp), n in list(responses.items()):
        if req == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            name = response_code_name(resp)
            out[name] = out.get(name, 0) + n
    return out


class NamesrvView(Protocol):
    """What the metrics read of a name server (``NameServer`` has it; metrics change none of it)."""

    @property
    def routes(self) -> RouteInfoManager: ...
    @property
    def server(self) -> RemotingServer: ...
    @property
    def port(self) -> int: ...


class NamesrvMetrics:
    def __init__(self, ns: NamesrvView) -> None:
        self.ns = ns
        self.requests = RequestRecorder(PREFIX)
        self.registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.registry.register(ScrapeCollector(self.families))

    def families(self) -> Iterator[Metric]:
        ns = self.ns
        g = GaugeMetricFamily(f"{PREFIX}_live_brokers", "Broker addresses registered and not expired, per cluster.",
                              labels=["cluster"])
        for cluster, n in live_brokers_by_cluster(ns.routes).items():
            g.add_metric([cluster], n)
        yield g
        yield GaugeMetricFamily(f"{PREFIX}_topics", "Topics in the routing table.", value=len(ns.routes.topic_queue_table))
        c = CounterMetricFamily(f"{PREFIX}_route_queries", "Topic route queries (GET_ROUTEINFO_BY_TOPIC), by answer.",
                                labels=["response"])
        for resp, n in sorted(route_query_counts(self.requests.responses).items()):
            c.add_metric([resp], n)
        yield c
        yield GaugeMetricFamily(f"{PREFIX}_connections", "Open remoting connections (brokers, clients, tools).",
                                value=len(ns.server.connections))
        yield GaugeMetricFamily(f"{PREFIX}_ready", "1 when the name server serves requests.", value=1 if ns.port else 0)
        yield from self.requests.families()
