"""Topic and ConsumerGroup resources against broker pods, beyond create/delete: queue counts and
group settings updated in place, members and lag in the group's status, and a cluster whose name
servers cannot be reached (a Ready=False reason, retries with backoff) that converges untouched
once its Broker points at running name servers. Brokers are reached only through pods and the
cluster's DNS, as users run them."""

from __future__ import annotations

import secrets

import pytest

from pyrocketmq.client import Message, MessageQueue, SyncAdmin, SyncProducer, SyncPullConsumer
from pyrocketmq.remoting.body import SubscriptionGroupWrapper
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from tests.e2e.conftest import OPERATOR_NAMESPACE
from tests.e2e.helpers import MQ, broker_cr, condition, get, group_cr, mq_fixture, topic_cr, wait_ready
from tests.k8s.cluster import KubeCluster

mq = mq_fixture("e2e-ops", wait=True)


def group_configs(admin: SyncAdmin, addr: str) -> dict:
    async def fetch():
        resp = await admin.admin.instance.invoke(
            addr, RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        )
        return SubscriptionGroupWrapper.from_json(resp.body or b"{}").subscription_group_table

    return admin._lt.run(fetch())


def queue_layout(admin: SyncAdmin, topic: str) -> dict[str, tuple[int, int, int]]:
    return {
        q.broker_name: (q.read_queue_nums, q.write_queue_nums, q.perm)
        for q in admin.topic_route(topic).queue_datas
    }


def masters(mq: MQ) -> list[str]:
    addrs = mq.broker_addrs()
    return [addrs["orders-0-0"], addrs["orders-1-0"]]


def test_topic_queue_counts_are_updated_on_every_master(mq: MQ):
    kube, ns = mq.kube, mq.ns
    topic = f"Upd_{secrets.token_hex(3)}"
    kube.apply(topic_cr("upd-topic", topic, "orders", queues=4), "-n", ns)
    wait_ready(kube, "topic", "upd-topic", ns, timeout=60)
    with SyncAdmin(mq.namesrv_addr()) as admin:
        kube.wait_until(
            lambda: queue_layout(admin, topic) == {"orders-0": (4, 4, 6), "orders-1": (4, 4, 6)}, 30, "4"
        )
        kube.merge_patch("topic", "upd-topic", ns, {"spec": {"readQueueNums": 8, "writeQueueNums": 8}})
        kube.wait_until(
            lambda: queue_layout(admin, topic) == {"orders-0": (8, 8, 6), "orders-1": (8, 8, 6)}, 60, "8"
        )
    obj = kube.wait_until(lambda: (o := get(kube, "topic", "upd-topic", ns))
                          and o["status"].get("observedGeneration") == 2 and o,
                          60, "generation 2")  # fmt: skip
    assert sorted(b["brokerName"] for b in obj["status"]["brokers"]) == ["orders-0", "orders-1"]


def test_group_settings_are_updated_and_members_and_lag_show_in_status(mq: MQ):
    kube, ns = mq.kube, mq.ns
    group, topic = f"GID_UPD_{secrets.token_hex(3)}", f"Lag_{secrets.token_hex(3)}"
    kube.apply(topic_cr("lag-topic", topic, "orders", queues=2), "-n", ns)
    kube.apply(
        {
            **group_cr("billing", group, "orders"),
            "spec": {
                "clusterRef": {"name": "orders"},
                "groupName": group,
                "retryMaxTimes": 3,
                "broadcast": False,
            },
        },
        "-n",
        ns,
    )
    wait_ready(kube, "consumergroup", "billing", ns, timeout=60)
    wait_ready(kube, "topic", "lag-topic", ns, timeout=60)
    namesrv = mq.namesrv_addr()
    with SyncAdmin(namesrv) as admin:
        for addr in masters(mq):
            config = group_configs(admin, addr)[group]
            assert config.retry_max_times == 3 and config.consume_broadcast_enable is False
        kube.merge_patch("consumergroup", "billing", ns, {"spec": {"retryMaxTimes": 5}})
        kube.wait_until(
            lambda: all(group_configs(admin, a)[group].retry_max_times == 5 for a in masters(mq)), 60, "5"
        )

        # 5 messages on orders-0, 2 of them consumed; a member of the group online.
        with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv) as producer:
            for i in range(5):
                producer.send(Message(topic, b"x"), queue=MessageQueue(topic, "orders-0", i % 2))
        admin.update_consumer_offset(group, MessageQueue(topic, "orders-0", 0), 2)
        with SyncPullConsumer(group, namesrv) as consumer:
            consumer.assign(consumer.fetch_queues(topic))

            def observed():
                status = (get(kube, "consumergroup", "billing", ns) or {}).get("status") or {}
                lag = {row["topic"]: row["lag"] for row in status.get("lag") or ()}
                return status.get("membersOnline", 0) >= 1 and lag.get(topic) == 3 and status

            status = kube.wait_until(observed, 120, "members and lag in status", interval=1)
            assert status["totalLag"] >= 3 and status["members"]


def operator_log(kube: KubeCluster) -> str:
    return kube.kubectl("logs", "-n", OPERATOR_NAMESPACE, "deploy/pyrocketmq", "--tail=2000").stdout


@pytest.mark.timeout(600)
def test_an_unreachable_cluster_is_a_reason_retried_with_backoff_and_converges_when_reachable(mq: MQ):
    kube, ns = mq.kube, mq.ns
    topic = f"Later_{secrets.token_hex(3)}"
    dead = f"nowhere.{ns}.svc:9876"  # no such Service: nothing answers there
    late = broker_cr("late", "names", groups=1, replicas=1)
    late["spec"]["nameServer"] = {"addresses": [dead]}
    late["spec"]["replicationMode"] = "ASYNC"
    late["spec"]["storage"] = {"type": "ephemeral"}
    kube.apply(late, "-n", ns)
    kube.apply(topic_cr("later", topic, "late"), "-n", ns)

    def unreachable():
        obj = get(kube, "topic", "later", ns)
        return obj if condition(obj, "Ready").get("reason") == "Unreachable" else None

    obj = kube.wait_until(unreachable, 120, "Ready=False Unreachable", interval=1)
    ready = condition(obj, "Ready")
    assert ready["status"] == "False" and dead in ready["message"]
    assert condition(obj, "Reconciling").get("status") == "True"

    def delays() -> list[float]:
        return [
            float(line.rsplit("retrying in ", 1)[1].split()[0])
            for line in operator_log(kube).splitlines()
            if f"name servers {dead}" in line and "retrying in" in line
        ]

    kube.wait_until(lambda: len(delays()) >= 4, 120, "retries", interval=2)
    assert min(delays()) < max(delays()), delays()  # backoff: the delay grows between attempts

    # Pointed at running name servers, the same Topic converges without being touched.
    kube.merge_patch("broker", "late", ns, {"spec": {"nameServer": {"addresses": None, "name": "names"}}})
    wait_ready(kube, "topic", "later", ns, timeout=240)
    with SyncAdmin(mq.namesrv_addr()) as admin:
        assert set(queue_layout(admin, topic)) == {"late-0"}


def consumer_deployment(mq: MQ, name: str, topic: str, group: str, rate: int) -> dict:
    """A Deployment of push consumers, each handling at most ``rate`` messages a second."""
    labels = {"app": name}
    args = ["pyrocketmq", "consume", "-n", mq.in_cluster_namesrv(), "-t", topic, "-g", group, "--push", "-q",
            "--max-rate", str(rate)]
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"terminationGracePeriodSeconds": 5, "containers": [{
                "name": "consumer", "image": mq.images.project, "imagePullPolicy": "Never", "args": args,
                "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}}}]}}},
    }  # fmt: skip


@pytest.mark.timeout(600)
def test_group_lag_scales_its_consumer_deployment_up_to_the_queue_count_and_back_down(mq: MQ):
    kube, ns = mq.kube, mq.ns
    group, topic = f"GID_SCALE_{secrets.token_hex(3)}", f"Scale_{secrets.token_hex(3)}"
    kube.apply(topic_cr("scale-topic", topic, "orders", queues=2), "-n", ns)  # 2 masters × 2 = 4 queues
    wait_ready(kube, "topic", "scale-topic", ns, timeout=60)
    kube.apply(consumer_deployment(mq, "workers", topic, group, rate=15), "-n", ns)
    autoscale = {"scaleTargetRef": {"kind": "Deployment", "name": "workers"}, "lagPerReplica": 40,
                 "minReplicas": 1, "maxReplicas": 6, "scaleDownStabilizationSeconds": 20}
    kube.apply(
        {
            **group_cr("workers", group, "orders"),
            "spec": {"clusterRef": {"name": "orders"}, "groupName": group, "autoscale": autoscale},
        },
        "-n",
        ns,
    )
    wait_ready(kube, "consumergroup", "workers", ns, timeout=60)

    def status() -> dict:
        return (get(kube, "consumergroup", "workers", ns) or {}).get("status") or {}

    def replicas() -> tuple[int, int]:
        d = kube.get("deployment", "workers", "-n", ns)
        return d["spec"]["replicas"], d.get("status", {}).get("readyReplicas", 0)

    kube.wait_until(
        lambda: status().get("membersOnline", 0) >= 1, 120, "the first consumer online", interval=1
    )
    namesrv = mq.namesrv_addr()
    with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv) as producer:
        for i in range(600):
            producer.send(Message(topic, f"s{i}".encode()))

    # 600 behind at 40 per replica asks for 15; maxReplicas says 6, the 4 queues say 4.
    up = kube.wait_until(lambda: (s := status().get("autoscale") or {}).get("desiredReplicas") == 4 and s, 90,
                         "a scale-up to the queue count", interval=1)
    assert up["reason"] == "QueueBound" and up["lag"] > 160, up
    kube.wait_until(lambda: replicas() == (4, 4), 120, "4 consumer pods ready", interval=1)
    kube.wait_until(
        lambda: status().get("membersOnline", 0) == 4, 90, "4 members share the group", interval=1
    )

    # drained, then held for the 20 s window, then back to minReplicas
    kube.wait_until(lambda: status().get("totalLag") == 0, 180, "the backlog consumed", interval=1)
    down = kube.wait_until(lambda: replicas()[0] == 1 and status().get("autoscale"), 120, "a scale-down to 1",
                           interval=1)
    assert down["desiredReplicas"] == 1 and down["reason"] == "MinReplicas", down
    events = kube.kubectl(
        "get",
        "events",
        "-n",
        ns,
        "--field-selector",
        "reason=Scaled,involvedObject.name=workers",
        "-o",
        "jsonpath={.items[*].message}",
    ).stdout
    assert (
        "Deployment/workers: 1 → 4 replicas" in events and "Deployment/workers: 4 → 1 replicas" in events
    ), events
    kube.kubectl("delete", "deployment", "workers", "-n", ns, "--wait=false")
