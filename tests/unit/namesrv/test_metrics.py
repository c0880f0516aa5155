"""The name server's collector: live brokers per cluster, topics, route queries by answer."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pyrocketmq.namesrv.app import NameServer
from pyrocketmq.namesrv.metrics import live_brokers_by_cluster, route_query_counts
from pyrocketmq.namesrv.route_info import RouteInfoManager
from pyrocketmq.namesrv.settings import NamesrvSettings
from pyrocketmq.remoting.body import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from pyrocketmq.remoting.code import RequestCode, ResponseCode


def register(r: RouteInfoManager, cluster: str, addr: str, name: str, bid: int, *topics: str) -> None:
    wrapper = TopicConfigSerializeWrapper({t: TopicConfig(t, 4, 4, 6) for t in topics}, DataVersion(1, 1))
    r.register_broker(cluster, addr, name, bid, None, wrapper, None, f"chan-{addr}", 0)


def test_live_brokers_are_counted_per_cluster_and_drop_when_they_expire():
    r = RouteInfoManager()
    register(r, "A", "10.0.0.1:10911", "a", 0, "T1")
    register(r, "A", "10.0.0.2:10911", "a", 1)
    register(r, "B", "10.0.0.3:10911", "b", 0, "T2")
    assert live_brokers_by_cluster(r) == {"A": 2, "B": 1}
    r.on_channel_closed("chan-10.0.0.3:10911")
    assert live_brokers_by_cluster(r).get("B", 0) == 0


def test_route_queries_by_answer():
    counts = {(RequestCode.GET_ROUTEINFO_BY_TOPIC, ResponseCode.SUCCESS): 4,
              (RequestCode.GET_ROUTEINFO_BY_TOPIC, ResponseCode.TOPIC_NOT_EXIST): 2,
              (RequestCode.REGISTER_BROKER, ResponseCode.SUCCESS): 7}
    assert route_query_counts(counts) == {"SUCCESS": 4, "TOPIC_NOT_EXIST": 2}
    assert route_query_counts({}) == {"SUCCESS": 0}


def test_a_scrape_of_a_name_server():
    ns = NameServer(NamesrvSettings(metrics_port=5558))
    register(ns.routes, "A", "10.0.0.1:10911", "a", 0, "T1", "T2")
    ns.metrics.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC, ResponseCode.SUCCESS, 0.001)
    ns.metrics.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC, ResponseCode.TOPIC_NOT_EXIST, 0.001)
    text = generate_latest(ns.metrics.registry).decode()
    s = {
        (x.name, tuple(sorted(x.labels.items()))): x.value
        for f in text_string_to_metric_families(text)
        for x in f.samples
    }
    assert s[("pyrocketmq_namesrv_live_brokers", (("cluster", "A"),))] == 1
    assert s[("pyrocketmq_namesrv_topics", ())] == 2
    assert s[("pyrocketmq_namesrv_route_queries_total", (("response", "SUCCESS"),))] == 1
    assert s[("pyrocketmq_namesrv_route_queries_total", (("response", "TOPIC_NOT_EXIST"),))] == 1
    assert (
        s[
            (
                "pyrocketmq_namesrv_requests_total",
                (("code", "GET_ROUTEINFO_BY_TOPIC"), ("response", "SUCCESS")),
            )
        ]
        == 1
    )
    assert s[("pyrocketmq_namesrv_ready", ())] == 0  # not started


def test_no_metrics_without_a_port():
    assert NameServer(NamesrvSettings(metrics_port=0)).metrics is None
