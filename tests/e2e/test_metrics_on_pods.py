"""Metrics on real pods (i): a real Prometheus (on the node; built from the Go module proxy by the
e2e setup, since Debian's has no Kubernetes discovery) scrapes the name server,
broker and operator pods with the scrape configs the chart ships (the ConfigMap
``pyrocketmq-scrape-configs``: pods found through the Kubernetes API), while a producer and a push
consumer on the node run traffic through the pods. Every PromQL expression of the chart's Grafana
dashboards must return data, and every alert rule must evaluate.

Grafana itself does not run here: Debian has no grafana package, the Go module proxy serves no
version of github.com/grafana/grafana, and npm has only its front-end libraries; so each panel's
query is run against the real Prometheus instead, with Grafana's variables substituted."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from localkube import tools as lk_tools
from pyrocketmq.client import Message
from tests.conformance import pyclient5
from tests.e2e.conftest import OPERATOR_NAMESPACE, RELEASE
from tests.e2e.helpers import MQ, group_cr, mq_fixture, topic_cr, wait_ready
from tests.k8s.cluster import KubeCluster
from tests.observability.prometheus import (
    APACHE_QUERIES,
    Prometheus,
    dashboard_exprs,
    grafana_to_promql,
    metric_names_in,
    rule_exprs,
)
from tests.observability.workload import traffic

JOBS = ("pyrocketmq-namesrv", "pyrocketmq-broker", "pyrocketmq-operator")


mq = mq_fixture("e2e-metrics", wait=True)


def shipped_scrape_configs(kube: KubeCluster, namespaces: list[str]) -> list[dict]:
    """The chart's scrape configs from its ConfigMap, for a Prometheus outside the cluster: the only
    change is how it reaches the API (a kubeconfig) and which namespaces it looks at."""
    cm = kube.get("configmap", f"{RELEASE}-scrape-configs", "-n", OPERATOR_NAMESPACE)
    configs = yaml.safe_load(cm["data"]["scrape-configs.yaml"])
    assert [c["job_name"] for c in configs] == list(JOBS)
    for c in configs:
        for sd in c["kubernetes_sd_configs"]:
            sd["kubeconfig_file"] = str(kube.kubeconfig)
            sd["namespaces"] = {"names": namespaces}
    return configs


@pytest.fixture
def prom(mq: MQ, tmp_path: Path) -> Iterator[Prometheus]:
    p = Prometheus(
        tmp_path / "prometheus",
        {},
        scrape_configs=shipped_scrape_configs(mq.kube, [mq.ns, OPERATOR_NAMESPACE]),
        binary=str(lk_tools.binary("prometheus")),
    )
    try:
        yield p.start()
    finally:
        p.stop()


def targets_up(prom: Prometheus) -> dict[str, int]:
    return {r["metric"]["job"]: int(float(r["value"][1])) for r in prom.query("sum by (job) (up)")}


@pytest.mark.timeout(600)
def test_i_prometheus_scrapes_the_pods_and_every_dashboard_query_returns_data(
    mq: MQ, prom: Prometheus, tmp_path
):
    kube, ns = mq.kube, mq.ns
    # 2 name servers, 2 groups × (master + slave), 1 operator: all found and up.
    assert prom.wait(
        "every pod scraped",
        lambda: (up := targets_up(prom)) == dict(zip(JOBS, (2, 4, 1), strict=True)) and up,
    )
    pods = {r["metric"]["pod"] for r in prom.query('up{job="pyrocketmq-broker"}')}
    assert pods == {"orders-0-0", "orders-0-1", "orders-1-0", "orders-1-1"}
    assert {
        r["metric"]["resource"] for r in prom.query('up{job=~"pyrocketmq-broker|pyrocketmq-namesrv"}')
    } == {"orders", "names"}
    prom.wait("the operator's reconcile counters", lambda: prom.query('pyrocketmq_operator_reconcile_total'))

    suffix = secrets.token_hex(3)
    topic, background, group = f"MetOrders_{suffix}", f"MetBackground_{suffix}", f"met-consumers-{suffix}"
    for name, t in (("met-orders", topic), ("met-background", background)):
        cr = topic_cr(name, t, "orders")
        cr["spec"]["messageType"] = "MIXED"  # plain and delayed messages on one topic
        kube.apply(cr, "-n", ns)
    kube.apply(group_cr("met-group", group, "orders"), "-n", ns)
    for kind, name in (("topic", "met-orders"), ("topic", "met-background"), ("consumergroup", "met-group")):
        wait_ready(kube, kind, name, ns, timeout=90)

    with traffic(mq.namesrv_addr(), topic, background, group, producer_group=f"met-producer-{suffix}") as t:
        for i in range(50):
            t.producer.send(Message(topic, f"order {i}".encode(), tags="order"))
        in_topic = f'sum(rocketmq_messages_in_total{{topic="{topic}"}})'
        prom.wait("51 messages in, counted by the masters", lambda: prom.value(in_topic) == 51)
        prom.wait("the group caught up", lambda: prom.value(
            f'sum(pyrocketmq_broker_consumer_offset{{group="{group}", topic="{topic}"}})') == 51)
        t.producer.send(Message(topic, b"poison", tags="poison"))
        prom.wait("one message in the DLQ", lambda: prom.value(
            f'sum(pyrocketmq_broker_dlq_messages_total{{group="{group}"}})') == 1)
        t.producer.send(Message(topic, b"later", delay_level=6))
        prom.wait(
            "one delayed message",
            lambda: prom.value('sum(pyrocketmq_broker_scheduled_messages{level="6"})') >= 1,
        )

        # the official 5.x Python client on a broker pod's gRPC port: the dashboard's gRPC row gets data
        endpoint = mq.broker_addrs()["orders-0-0"].rpartition(":")[0] + ":8081"
        sent5 = pyclient5.run([endpoint, topic, "produce", "normal", 3], home=tmp_path / "py5")
        assert sent5["errors"] == [] and len(sent5["sent"]) == 3, sent5
        got5 = pyclient5.run([endpoint, topic, "simple", f"met-g5-{suffix}", 3, 60], home=tmp_path / "py5")
        assert len(got5["deliveries"]) >= 3, got5
        prom.wait("5.x sends counted", lambda: (prom.value(
            'sum(pyrocketmq_broker_grpc_requests_total{rpc="SendMessage", code="OK"})') or 0) >= 3)
        prom.wait("the 5.x group's POP state scraped", lambda: prom.query(
            f'rocketmq_consumer_inflight_messages{{consumer_group="met-g5-{suffix}"}}'))

        names = prom.metric_names()
        for dashboard, title, expr in dashboard_exprs():
            missing = metric_names_in(expr) - names
            assert not missing, f"{dashboard} / {title} reads metrics the pods do not export: {missing}"
            promql = grafana_to_promql(expr)
            prom.wait(f"data for {dashboard} / {title}: {promql}", lambda q=promql: prom.query(q))
        for alert, expr in rule_exprs().items():
            assert not metric_names_in(expr) - names, alert
            prom.query(expr)  # parses and evaluates
        # Apache RocketMQ 5's names and labels, as its users' dashboards and alert rules query them
        for query in APACHE_QUERIES:
            prom.wait(f"data for Apache's {query}", lambda q=query: prom.query(q))
        masters = {
            r["metric"]["node_id"] for r in prom.query(f'rocketmq_messages_in_total{{topic="{topic}"}}')
        }
        assert masters == {"orders-0", "orders-1"}, masters
