"""Topic and ConsumerGroup resources applied to real broker processes; scale-down that waits for a
drain; an unreachable cluster. The brokers run on loopback (started here, no pods); the Broker
resource points the operator at their name server with the development hook
``pyrocketmq.io/namesrv-addr-override``. Checks go through the admin client and a real producer."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyrocketmq.client import Message, MessageQueue, SyncAdmin, SyncProducer, SyncPullConsumer
from pyrocketmq.client.errors import MQBrokerError
from pyrocketmq.remoting.body import SubscriptionGroupWrapper
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from tests.helpers.cluster import free_port
from tests.integration.procs import Proc, start_broker, start_namesrv
from tests.k8s.cluster import KubeCluster
from tests.k8s.operator_env import (  # noqa: F401 (fixtures)
    RESYNC,
    conditions,
    crds,
    events,
    get,
    names,
    ns,
    operator,
    wait_condition,
    wait_for,
)

OVERRIDE = "pyrocketmq.io/namesrv-addr-override"


@dataclass
class RealCluster:
    namesrv: Proc
    brokers: list[Proc]

    @property
    def addr(self) -> str:
        return self.namesrv.addr


@pytest.fixture(scope="module")
def rocketmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, RealCluster]]:
    """A name server with two clusters of two masters each: OrdersCluster (orders-0, orders-1) and
    DrainCluster (drain-0, drain-1), named as the operator names the groups of Brokers orders/drain."""
    tmp: Path = tmp_path_factory.mktemp("rocketmq")
    procs: list[Proc] = []
    try:
        namesrv = start_namesrv(tmp)
        procs.append(namesrv)
        clusters = {}
        for broker, cluster in (("orders", "OrdersCluster"), ("drain", "DrainCluster")):
            started = [start_broker(tmp, namesrv.addr, f"{broker}-{i}", brokerClusterName=cluster) for i in (0, 1)]
            procs += started
            clusters[broker] = RealCluster(namesrv, started)
        with SyncAdmin(namesrv.addr) as admin:
            KubeCluster.wait_until(
                lambda: {"OrdersCluster", "DrainCluster"} <= set(admin.cluster_info().cluster_addr_table), 30, "registrations"
            )
        yield clusters
    finally:
        for p in reversed(procs):
            p.stop()


@pytest.fixture(scope="module")
def admin(rocketmq) -> Iterator[SyncAdmin]:
    with SyncAdmin(rocketmq["orders"].addr) as a:
        yield a


def broker_cr(name: str, cluster: str, override: str, groups: int = 2) -> dict:
    return {
        "apiVersion": "pyrocketmq.io/v1alpha1",
        "kind": "Broker",
        "metadata": {"name": name, "annotations": {OVERRIDE: override}},
        "spec": {
            "nameServer": {"addresses": ["names-0.names-headless.example.svc:9876"]},
            "clusterName": cluster,
            "groups": groups,
            "storage": {"type": "ephemeral"},
        },
    }


def topic_cr(name: str, topic: str, cluster: str = "orders", **spec: object) -> dict:
    return {"apiVersion": "pyrocketmq.io/v1alpha1", "kind": "Topic", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": cluster}, "topicName": topic, **spec}}


def group_cr(name: str, group: str, cluster: str = "orders", **spec: object) -> dict:
    return {"apiVersion": "pyrocketmq.io/v1alpha1", "kind": "ConsumerGroup", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": cluster}, "groupName": group, **spec}}


def queue_layout(admin: SyncAdmin, topic: str) -> dict[str, tuple[int, int, int]]:
    try:
        route = admin.topic_route(topic)
    except MQBrokerError:
        return {}
    return {q.broker_name: (q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas}


def group_configs(admin: SyncAdmin, addr: str) -> dict:
    async def fetch():
        resp = await admin.admin.instance.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
        return SubscriptionGroupWrapper.from_json(resp.body or b"{}").subscription_group_table

    return admin._lt.run(fetch())


def test_topic_is_created_updated_and_deleted_on_the_brokers(operator, ns, rocketmq, admin):  # noqa: F811
    kube = operator.kube
    topic = f"Orders_{secrets.token_hex(3)}"
    kube.apply(broker_cr("orders", "OrdersCluster", rocketmq["orders"].addr), "-n", ns)
    kube.apply(topic_cr("orders-topic", topic, readQueueNums=4, writeQueueNums=4), "-n", ns)
    obj = wait_condition(kube, "topic", "orders-topic", ns, "Ready", "True", "TopicApplied", op=operator)
    assert obj["status"]["observedGeneration"] == 1 and obj["status"]["topicName"] == topic
    assert obj["metadata"]["finalizers"] == ["pyrocketmq.io/finalizer"]  # deletion goes through the brokers
    wait_for(kube, lambda: queue_layout(admin, topic) == {"orders-0": (4, 4, 6), "orders-1": (4, 4, 6)}, 15, "route", operator)

    with SyncProducer(f"P_{secrets.token_hex(3)}", rocketmq["orders"].addr) as producer:
        results = [producer.send(Message(topic, f"m{i}".encode())) for i in range(6)]
    assert {r.message_queue.broker_name for r in results} <= {"orders-0", "orders-1"}

    kube.kubectl("patch", "topic", "orders-topic", "-n", ns, "--type=merge", "-p",
                 '{"spec": {"readQueueNums": 8, "writeQueueNums": 8}}')
    wait_for(kube, lambda: queue_layout(admin, topic) == {"orders-0": (8, 8, 6), "orders-1": (8, 8, 6)}, 15, "8 queues", operator)
    obj = wait_for(kube, lambda: (o := get(kube, "topic", "orders-topic", ns)) and o["status"].get("observedGeneration") == 2 and o,
                   15, "generation 2", operator)
    assert sorted(b["brokerName"] for b in obj["status"]["brokers"]) == ["orders-0", "orders-1"]

    kube.kubectl("delete", "topic", "orders-topic", "-n", ns, "--timeout=30s")
    assert topic not in admin.topic_list()
    assert queue_layout(admin, topic) == {}
    assert {"TopicApplied", "TopicDeleted"} <= {e["reason"] for e in events(kube, ns, "orders-topic")}


def test_consumer_group_is_created_updated_observed_and_deleted(operator, ns, rocketmq, admin):  # noqa: F811
    kube = operator.kube
    group, topic = f"GID_{secrets.token_hex(3)}", f"Lag_{secrets.token_hex(3)}"
    masters = [b.addr for b in rocketmq["orders"].brokers]
    kube.apply(broker_cr("orders", "OrdersCluster", rocketmq["orders"].addr), "-n", ns)
    kube.apply(topic_cr("lag-topic", topic, readQueueNums=2, writeQueueNums=2), "-n", ns)
    kube.apply(group_cr("billing", group, retryMaxTimes=3, broadcast=False), "-n", ns)
    wait_condition(kube, "consumergroup", "billing", ns, "Ready", "True", "GroupApplied", op=operator)
    for addr in masters:
        config = group_configs(admin, addr)[group]
        assert config.retry_max_times == 3 and config.consume_broadcast_enable is False

    kube.kubectl("patch", "consumergroup", "billing", "-n", ns, "--type=merge", "-p", '{"spec": {"retryMaxTimes": 5}}')
    wait_for(kube, lambda: all(group_configs(admin, a)[group].retry_max_times == 5 for a in masters), 15, "update", operator)

    # Members and lag: a consumer of the group online, 5 messages of which 2 are consumed.
    wait_condition(kube, "topic", "lag-topic", ns, "Ready", "True", op=operator)
    with SyncProducer(f"P_{secrets.token_hex(3)}", rocketmq["orders"].addr) as producer:
        for i in range(5):
            producer.send(Message(topic, b"x"), queue=MessageQueue(topic, "orders-0", i % 2))
    admin.update_consumer_offset(group, MessageQueue(topic, "orders-0", 0), 2)
    with SyncPullConsumer(group, rocketmq["orders"].addr) as consumer:
        consumer.assign(consumer.fetch_queues(topic))

        def observed():
            status = (get(kube, "consumergroup", "billing", ns) or {}).get("status") or {}
            lag = {row["topic"]: row["lag"] for row in status.get("lag") or ()}
            return status.get("membersOnline", 0) >= 1 and lag.get(topic) == 3 and status

        status = wait_for(kube, observed, RESYNC * 10, "members and lag in status", operator)
        assert status["totalLag"] >= 3 and status["members"]

    kube.kubectl("delete", "consumergroup", "billing", "-n", ns, "--timeout=30s")
    for addr in masters:
        assert group not in group_configs(admin, addr)
    assert "GroupDeleted" in {e["reason"] for e in events(kube, ns, "billing")}


def test_an_unreachable_cluster_is_a_reason_and_is_retried_with_backoff(operator, ns, rocketmq, admin):  # noqa: F811
    kube = operator.kube
    topic = f"Later_{secrets.token_hex(3)}"
    dead = f"127.0.0.1:{free_port()}"  # nothing listens there
    kube.apply(broker_cr("orders", "OrdersCluster", dead), "-n", ns)
    kube.apply(topic_cr("later", topic), "-n", ns)
    obj = wait_condition(kube, "topic", "later", ns, "Ready", "False", "Unreachable", op=operator)
    cond = conditions(obj)
    assert dead in cond["Ready"]["message"] and cond["Ready"]["observedGeneration"] == 1
    assert cond["Reconciling"]["status"] == "True"
    def delays() -> list[float]:
        return [float(line.rsplit("retrying in ", 1)[1].split()[0])
                for line in operator.log().splitlines() if f"name servers {dead}" in line and "retrying in" in line]

    wait_for(kube, lambda: len(delays()) >= 4, 30, "retries", operator)
    assert min(delays()) < max(delays()), delays()  # backoff: the delay grows between attempts
    assert "Unreachable" in {e["reason"] for e in events(kube, ns, "later")}
    assert operator.alive()

    # Pointed at the real name servers, the same Topic converges without being touched.
    kube.kubectl("annotate", "broker", "orders", "-n", ns, "--overwrite", f"{OVERRIDE}={rocketmq['orders'].addr}")
    wait_condition(kube, "topic", "later", ns, "Ready", "True", "TopicApplied", timeout=30, op=operator)
    assert set(queue_layout(admin, topic)) == {"orders-0", "orders-1"}
    kube.kubectl("delete", "topic", "later", "-n", ns, "--timeout=30s")


def test_scale_down_waits_until_the_group_is_drained(operator, ns, rocketmq):  # noqa: F811
    kube = operator.kube
    drain = rocketmq["drain"]
    topic, group = f"Drain_{secrets.token_hex(3)}", f"GID_{secrets.token_hex(3)}"
    kube.apply(broker_cr("drain", "DrainCluster", drain.addr), "-n", ns)
    kube.apply(topic_cr("drain-topic", topic, cluster="drain", readQueueNums=2, writeQueueNums=2), "-n", ns)
    kube.apply(group_cr("drain-group", group, cluster="drain"), "-n", ns)
    wait_condition(kube, "topic", "drain-topic", ns, "Ready", "True", op=operator)
    wait_condition(kube, "consumergroup", "drain-group", ns, "Ready", "True", op=operator)
    broker = wait_for(kube, lambda: (b := get(kube, "broker", "drain", ns)) and all(
        g.get("servedTraffic") for g in (b.get("status") or {}).get("groups") or [{}]) and b, 20, "served", operator)
    assert broker["status"]["groups"][1]["master"]["address"] == drain.brokers[1].addr

    with SyncAdmin(drain.addr) as admin, SyncProducer(f"P_{secrets.token_hex(3)}", drain.addr) as producer:
        queues = [MessageQueue(topic, "drain-1", q) for q in (0, 1)]
        for i in range(4):
            producer.send(Message(topic, b"unread"), queue=queues[i % 2])
        for mq in queues:  # the group has read nothing on drain-1 yet
            admin.update_consumer_offset(group, mq, 0)

        kube.kubectl("patch", "broker", "drain", "-n", ns, "--type=merge", "-p", '{"spec": {"groups": 1}}')
        obj = wait_condition(kube, "broker", "drain", ns, "ScaleDownPending", "True", "QueuesNotDrained", op=operator)
        message = conditions(obj)["ScaleDownPending"]["message"]
        assert group in message and "4 messages" in message
        assert [g["phase"] for g in obj["status"]["groups"]] == ["Active", "Draining"]
        assert "drain-1" in names(kube, "statefulsets", ns)
        # Writes are stopped on drain-1 only, and the Topic's resync does not re-open them.
        wait_for(kube, lambda: queue_layout(admin, topic).get("drain-1", (0, 0, 0))[2] == 4, 15, "drain-1 read-only")
        assert queue_layout(admin, topic)["drain-0"][2] == 6

        for mq in queues:  # the group catches up
            admin.update_consumer_offset(group, mq, admin.max_offset(mq))
    wait_for(kube, lambda: names(kube, "statefulsets", ns) == ["drain-0"], RESYNC * 8, "drain-1 removed", operator)
    obj = wait_condition(kube, "broker", "drain", ns, "ScaleDownPending", "False", op=operator)
    assert [g["name"] for g in obj["status"]["groups"]] == ["drain-0"]
    reasons = {e["reason"] for e in events(kube, ns, "drain")}
    assert {"StoppingWrites", "ScaleDownWaiting", "GroupRemoved"} <= reasons
