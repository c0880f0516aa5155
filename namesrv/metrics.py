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
``pyrocketmq_controller_leader``                       controller mode: 1 on the leading instance
``pyrocketmq_controller_term``                         its consensus term
``pyrocketmq_controller_master_epoch{broker_name}``    a group's master epoch (leader only, as below)
``pyrocketmq_controller_master_replica{broker_name}``  the master's replica id (-1: no master)
``pyrocketmq_controller_sync_state_set_size{..}``      replicas in the group's in-sync set
``pyrocketmq_controller_elections_total{broker_name}`` masters elected (first one included)
=====================================================  ===============================================

Labels are bounded: cluster names, broker group names and response codes; never an address or client.
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

    from .controller.service import Controller
    from .route_info import RouteInfoManager

PREFIX = "pyrocketmq_namesrv"


def live_brokers_by_cluster(routes: RouteInfoManager) -> dict[str, int]:
    """Live broker addresses (masters and slaves) per cluster; every known cluster, 0 included."""
    live = routes.broker_live_table
    counts = {cluster: 0 for cluster in routes.cluster_addr_table}
    for group in list(routes.broker_addr_table.values()):
        counts[group.cluster] = counts.get(group.cluster, 0) + sum(
            1 for a in group.addrs.values() if a in live
        )
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
    @property
    def controller(self) -> Controller | None: ...


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
        g = GaugeMetricFamily(
            f"{PREFIX}_live_brokers",
            "Broker addresses registered and not expired, per cluster.",
            labels=["cluster"],
        )
        for cluster, n in live_brokers_by_cluster(ns.routes).items():
            g.add_metric([cluster], n)
        yield g
        yield GaugeMetricFamily(
            f"{PREFIX}_topics", "Topics in the routing table.", value=len(ns.routes.topic_queue_table)
        )
        c = CounterMetricFamily(
            f"{PREFIX}_route_queries",
            "Topic route queries (GET_ROUTEINFO_BY_TOPIC), by answer.",
            labels=["response"],
        )
        for resp, n in sorted(route_query_counts(self.requests.responses).items()):
            c.add_metric([resp], n)
        yield c
        yield GaugeMetricFamily(
            f"{PREFIX}_connections",
            "Open remoting connections (brokers, clients, tools).",
            value=len(ns.server.connections),
        )
        yield GaugeMetricFamily(
            f"{PREFIX}_ready", "1 when the name server serves requests.", value=1 if ns.port else 0
        )
        yield from self.requests.families()
        if ns.controller is not None:
            yield from controller_families(ns.controller)


def controller_families(ctl: Controller) -> Iterator[Metric]:
    """The controller's gauges; the groups only from the leading instance (the others hold no live view)."""
    leading = ctl.leading
    yield GaugeMetricFamily(
        "pyrocketmq_controller_leader", "1 on the leading controller instance.", value=int(leading)
    )
    yield GaugeMetricFamily(
        "pyrocketmq_controller_term", "The controller's consensus term.", value=ctl.raft.term
    )
    groups = list(ctl.state.groups.values()) if leading else []
    epoch = GaugeMetricFamily(
        "pyrocketmq_controller_master_epoch", "The group's master epoch.", labels=["broker_name"]
    )
    master = GaugeMetricFamily(
        "pyrocketmq_controller_master_replica",
        "Replica id of the group's master (-1: none).",
        labels=["broker_name"],
    )
    isr = GaugeMetricFamily(
        "pyrocketmq_controller_sync_state_set_size",
        "Replicas in the group's in-sync set.",
        labels=["broker_name"],
    )
    elections = CounterMetricFamily("pyrocketmq_controller_elections", "Masters elected for the group.",
                                    labels=["broker_name"])
    for g in groups:
        epoch.add_metric([g.name], g.epoch)
        master.add_metric([g.name], g.master)
        isr.add_metric([g.name], len(g.sync_set))
        elections.add_metric([g.name], g.elections)
    yield from (epoch, master, isr, elections)
