"""Scale-down by one broker group on real pods, against a fresh NameServer and Broker (2 groups ×
master + slave) so that no other test's consumer groups hold the drain up: the operator stops
writes on the group, keeps it while its messages are unread, and removes it once they are read."""

from __future__ import annotations

import secrets

import pytest

from pyrocketmq.client import Message, SyncAdmin, SyncProducer
from tests.e2e.helpers import (
    BROKER_SELECTOR,
    MQ,
    condition,
    get,
    group_cr,
    mq_fixture,
    pods,
    read_all,
    topic_cr,
    wait_ready,
)
from tests.k8s.cluster import KubeCluster

mq = mq_fixture("e2e-shrink", wait=True)


def broker_statefulsets(kube: KubeCluster, ns: str) -> set[str]:
    return {s["metadata"]["name"] for s in kube.get("statefulsets", "-n", ns, "-l", BROKER_SELECTOR)["items"]}


@pytest.mark.timeout(900)
def test_f_scale_down_by_one_group_drains_it_first_and_loses_nothing(mq: MQ):
    kube, ns = mq.kube, mq.ns
    topic, group = f"Shrink_{secrets.token_hex(3)}", f"GID_SHRINK_{secrets.token_hex(3)}"
    kube.apply(topic_cr("shrink-topic", topic, "orders"), "-n", ns)
    kube.apply(group_cr("shrink-group", group, "orders"), "-n", ns)
    wait_ready(kube, "topic", "shrink-topic", ns, timeout=60)
    wait_ready(kube, "consumergroup", "shrink-group", ns, timeout=60)
    namesrv = mq.namesrv_addr()
    with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv) as producer:
        results = [producer.send(Message(topic, f"s{i}".encode())) for i in range(100)]
    assert {r.message_queue.broker_name for r in results} == {"orders-0", "orders-1"}
    kube.merge_patch("broker", "orders", ns, {"spec": {"groups": 1}})
    # The group has read nothing: orders-1 must stay, read-only, until it has.
    obj = kube.wait_until(
        lambda: condition(get(kube, "broker", "orders", ns), "ScaleDownPending").get("status") == "True"
        and get(kube, "broker", "orders", ns), 120, "ScaleDownPending", interval=1)  # fmt: skip
    assert "orders-1" in broker_statefulsets(kube, ns), obj
    got = read_all(namesrv, topic, group, 100)  # the group catches up (and commits)
    assert sorted(got) == sorted(f"s{i}".encode() for i in range(100))
    kube.wait_until(
        lambda: broker_statefulsets(kube, ns) == {"orders-0"},
        240, "orders-1 removed after the drain", interval=2)  # fmt: skip
    kube.wait_until(
        lambda: not [p for p in pods(kube, ns, BROKER_SELECTOR)
                     if p["metadata"]["name"].startswith("orders-1")],
        120, "orders-1 pods gone", interval=1)  # fmt: skip
    with SyncAdmin(namesrv) as admin:
        kube.wait_until(
            lambda: {q.broker_name for q in admin.topic_route(topic).queue_datas} == {"orders-0"},
            120, "route without orders-1")  # fmt: skip
    with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv) as producer:
        assert producer.send(Message(topic, b"after")).message_queue.broker_name == "orders-0"
