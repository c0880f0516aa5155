"""A NameServer (2 pods) and a Broker of 2 groups × (master + slave), SYNC_MASTER, on local-path
volumes, reconciled by the operator the chart installed; Topics and ConsumerGroups applied with
kubectl; clients in pods and on the node. The tests of this module share one cluster and run in
order (a → g of the issue's list)."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import pytest

from pyrocketmq.client import Message, SyncAdmin, SyncProducer, SyncPullConsumer
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.remoting_client import RemotingClient
from tests.conformance import pyclient5
from tests.e2e.helpers import (
    MQ,
    Sender,
    get,
    group_cr,
    groups_on,
    mq_fixture,
    pod_ip,
    pod_ready,
    pods,
    read_all,
    run_pod,
    topic_cr,
    topics_on,
    wait_ready,
)
from tests.integration import wire

mq = mq_fixture("e2e")


def test_a_nameservers_and_replicated_broker_groups_become_ready(mq: MQ):
    kube, ns = mq.kube, mq.ns
    wait_ready(kube, "nameserver", "names", ns, timeout=180)
    broker = wait_ready(kube, "broker", "orders", ns, timeout=240)
    all_pods = pods(kube, ns)
    assert sorted(p["metadata"]["name"] for p in all_pods) == [
        "names-0", "names-1", "orders-0-0", "orders-0-1", "orders-1-0", "orders-1-1",
    ]  # fmt: skip
    assert all(pod_ready(p) for p in all_pods), [p["metadata"]["name"] for p in all_pods if not pod_ready(p)]
    claims = kube.get("pvc", "-n", ns)["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == [
        f"store-orders-{g}-{i}" for g in (0, 1) for i in (0, 1)
    ]
    assert all(
        c["status"]["phase"] == "Bound" and c["spec"]["storageClassName"] == "local-path" for c in claims
    )
    # What a user sees: kubectl get with the printer columns.
    table = kube.kubectl("get", "broker,nameserver", "-n", ns).stdout
    broker_row = next(
        line.split() for line in table.splitlines() if line.startswith("broker.pyrocketmq.io/orders")
    )
    assert broker_row[1:6] == ["OrdersCluster", "2", "2", "2", "True"], table
    ns_row = next(
        line.split() for line in table.splitlines() if line.startswith("nameserver.pyrocketmq.io/names")
    )
    assert ns_row[1:4] == ["2", "2", "True"], table
    assert broker["status"]["observedGeneration"] == broker["metadata"]["generation"]
    # Both groups registered with both name servers, master (id 0) and slave (id 1).
    for i in range(2):
        with SyncAdmin(f"{pod_ip(kube, ns, f'names-{i}')}:9876") as admin:
            info = kube.wait_until(
                lambda admin=admin: (
                    (c := admin.cluster_info()).broker_addr_table.keys() >= {"orders-0", "orders-1"}
                    and all(len(b.broker_addrs) == 2 for b in c.broker_addr_table.values())
                    and c
                ),
                60,
                "both groups with master and slave",
            )
            assert set(info.cluster_addr_table["OrdersCluster"]) == {"orders-0", "orders-1"}


def test_b_topic_and_group_are_on_every_broker_pod_and_removed_with_the_resource(mq: MQ):
    kube, ns = mq.kube, mq.ns
    topic, group = f"E2E_{secrets.token_hex(3)}", f"GID_E2E_{secrets.token_hex(3)}"
    kube.apply(topic_cr("orders-topic", topic, "orders"), "-n", ns)
    kube.apply(group_cr("billing", group, "orders"), "-n", ns)
    wait_ready(kube, "topic", "orders-topic", ns, timeout=60)
    wait_ready(kube, "consumergroup", "billing", ns, timeout=60)
    addrs = mq.broker_addrs()
    with SyncAdmin(mq.namesrv_addr()) as admin:
        # Masters get them from the operator; slaves copy them from their master (every 10 s).
        kube.wait_until(
            lambda: all(topic in topics_on(admin, a) for a in addrs.values()), 60, "topic everywhere"
        )
        kube.wait_until(
            lambda: all(group in groups_on(admin, a) for a in addrs.values()), 60, "group everywhere"
        )
        route = admin.topic_route(topic)
        assert {q.broker_name: q.write_queue_nums for q in route.queue_datas} == {
            "orders-0": 4,
            "orders-1": 4,
        }

        kube.kubectl("delete", "topic", "orders-topic", "-n", ns, "--timeout=60s")
        kube.kubectl("delete", "consumergroup", "billing", "-n", ns, "--timeout=60s")
        kube.wait_until(
            lambda: not any(topic in topics_on(admin, a) for a in addrs.values()), 60, "topic gone"
        )
        kube.wait_until(
            lambda: not any(group in groups_on(admin, a) for a in addrs.values()), 60, "group gone"
        )
        assert topic not in admin.topic_list()


def test_c_producer_and_consumer_pods_and_a_client_on_the_node(mq: MQ, tmp_path: Path):
    kube, ns = mq.kube, mq.ns
    topic, group = f"Pods_{secrets.token_hex(3)}", f"GID_PODS_{secrets.token_hex(3)}"
    kube.apply(topic_cr("pods-topic", topic, "orders"), "-n", ns)
    kube.apply(group_cr("pods-group", group, "orders"), "-n", ns)
    wait_ready(kube, "topic", "pods-topic", ns, timeout=60)
    wait_ready(kube, "consumergroup", "pods-group", ns, timeout=60)
    n = 200
    namesrv = mq.in_cluster_namesrv()  # the name server's Service, resolved by CoreDNS
    phase, logs = run_pod(kube, ns, mq.images.project,
                          ["pyrocketmq", "produce", "-n", namesrv, "-t", topic, "--body", "from-a-pod",
                           "-c", str(n), "-q"],
                          name="producer")  # fmt: skip
    assert phase == "Succeeded" and f"sent {n} message(s)" in logs, logs
    phase, logs = run_pod(kube, ns, mq.images.project,
                          ["pyrocketmq", "consume", "-n", namesrv, "-t", topic, "-g", group,
                           "--from-beginning", "-c", str(n), "--timeout", "60", "-q"],
                          name="consumer")  # fmt: skip
    assert phase == "Succeeded" and f"received {n} message(s)" in logs, logs

    # From the node, as a user outside the pod network's namespaces: pod IPs route to the node.
    with SyncProducer(f"P_{secrets.token_hex(3)}", mq.namesrv_addr()) as producer:
        sent = {producer.send(Message(topic, f"node-{i}".encode())).msg_id for i in range(50)}
    assert len(sent) == 50
    with SyncPullConsumer(group, mq.namesrv_addr()) as consumer:
        consumer.assign(consumer.fetch_queues(topic))
        got: list[bytes] = []
        kube.wait_until(
            lambda: got.extend(m.body for m in consumer.poll(timeout=2)) or len(got) >= 50, 60, "50"
        )
    assert sorted(got) == sorted(
        f"node-{i}".encode() for i in range(50)
    )  # the pod consumer committed its 200

    # The official 5.x Python client from the node, on the brokers' gRPC port (spec.grpc, 8081 by default):
    # routes name every broker pod's endpoint, sends land in the same topic, a 5.x group reads them all.
    endpoint = mq.broker_addrs()["orders-0-0"].rpartition(":")[0] + ":8081"
    home = tmp_path / "py5-home"
    sent5 = pyclient5.run([endpoint, topic, "produce", "normal", 8], home=home)
    assert sent5["errors"] == [] and len(sent5["sent"]) == 8, sent5
    got5 = pyclient5.run(
        [endpoint, topic, "simple", f"GID5_{secrets.token_hex(3)}", n + 58, 60], home=home, timeout=120
    )
    got_ids = {d["messageId"] for d in got5["deliveries"]}
    assert {s["messageId"] for s in sent5["sent"]} <= got_ids and len(got5["deliveries"]) == n + 58, len(
        got5["deliveries"]
    )

    # spec.resetOffset: the operator rewinds the group on every master; status says where each queue went.
    rewind = {"id": "rewind-1", "topic": topic, "to": "earliest"}
    kube.merge_patch("consumergroup", "pods-group", ns, {"spec": {"resetOffset": rewind}})
    done = kube.wait_until(
        lambda: ((get(kube, "consumergroup", "pods-group", ns) or {}).get("status") or {})
        .get("offsetReset", {}).get("id") == "rewind-1"
        and get(kube, "consumergroup", "pods-group", ns)["status"]["offsetReset"],
        90, "status.offsetReset rewind-1", interval=1)  # fmt: skip
    assert done["queues"] and all(q["offset"] == 0 for q in done["queues"]), done
    with SyncPullConsumer(group, mq.namesrv_addr()) as consumer:
        consumer.assign(consumer.fetch_queues(topic))
        again: list[bytes] = []
        kube.wait_until(lambda: again.extend(m.body for m in consumer.poll(timeout=2))
                        or len(again) >= n + 58, 90, "everything again after the reset")  # fmt: skip
    assert len(again) == n + 58


def _raw_queue(addr: str, topic: str, qid: int) -> bytes:
    """Every record of a queue, as the raw bytes the broker at ``addr`` answers pulls with."""

    async def read() -> bytes:
        client = RemotingClient()
        out, offset = b"", 0
        try:
            while True:
                resp = await client.invoke(addr, wire.pull(topic, qid, offset, max_nums=32), 10)
                if resp.code != ResponseCode.SUCCESS:
                    return out
                out += resp.body or b""
                offset = int(resp.ext_fields["nextBeginOffset"])
        finally:
            await client.close()

    return asyncio.run(read())


def test_g_slave_pods_replicate_their_master_and_serve_reads(mq: MQ):
    kube, ns = mq.kube, mq.ns
    topic = f"Repl_{secrets.token_hex(3)}"
    kube.apply(topic_cr("repl-topic", topic, "orders", queues=2), "-n", ns)
    wait_ready(kube, "topic", "repl-topic", ns, timeout=60)
    addrs = mq.broker_addrs()
    with SyncAdmin(mq.namesrv_addr()) as admin:
        # the slaves learn the topic from their master's config sync (every 10 s)
        kube.wait_until(
            lambda: all(topic in topics_on(admin, a) for a in addrs.values()), 60, "topic on slaves"
        )
    with SyncProducer(f"P_{secrets.token_hex(3)}", mq.namesrv_addr()) as producer:
        results = [producer.send(Message(topic, f"r{i}".encode() * 10)) for i in range(100)]
    per_group = {
        name: sum(r.message_queue.broker_name == name for r in results) for name in ("orders-0", "orders-1")
    }
    assert sum(per_group.values()) == 100
    # SYNC_MASTER acknowledged each send once the slave held it: the slave answers pulls with the
    # master's bytes, queue by queue.
    for g in (0, 1):
        master, slave = addrs[f"orders-{g}-0"], addrs[f"orders-{g}-1"]
        for q in (0, 1):
            ours = _raw_queue(master, topic, q)
            kube.wait_until(lambda m=master, s=slave, q=q, ours=ours: _raw_queue(s, topic, q) == ours, 30,
                            f"orders-{g} queue {q} on the slave")  # fmt: skip
        assert sum(len(_raw_queue(master, topic, q)) > 0 for q in (0, 1)) >= (
            1 if per_group[f"orders-{g}"] else 0
        )


@pytest.mark.timeout(900)
def test_d_a_deleted_master_pod_comes_back_on_its_volume_with_everything_acknowledged(mq: MQ):
    kube, ns = mq.kube, mq.ns
    topic, group = f"Kill_{secrets.token_hex(3)}", f"GID_KILL_{secrets.token_hex(3)}"
    kube.apply(topic_cr("kill-topic", topic, "orders"), "-n", ns)
    kube.apply(group_cr("kill-group", group, "orders"), "-n", ns)
    wait_ready(kube, "topic", "kill-topic", ns, timeout=60)
    wait_ready(kube, "consumergroup", "kill-group", ns, timeout=60)
    namesrv = mq.namesrv_addr()
    # The group commits offsets on both masters first.
    with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv) as producer:
        for i in range(40):
            producer.send(Message(topic, f"before-{i}".encode()))
    assert len(read_all(namesrv, topic, group, 40)) == 40
    with SyncAdmin(namesrv) as admin:
        committed_before = {mq_.queue_id: row for mq_, row in admin.consume_stats(group, topic)[0].items()
                            if mq_.broker_name == "orders-0"}  # fmt: skip
    assert committed_before and sum(r.consumer_offset for r in committed_before.values()) > 0
    pod_before = kube.get("pod", "orders-0-0", "-n", ns)
    claim_before = kube.get("pvc", "store-orders-0-0", "-n", ns)["metadata"]["uid"]

    with Sender(namesrv, topic) as sender:
        sender.wait_for(50)
        kube.kubectl("delete", "pod", "orders-0-0", "-n", ns, "--wait=false")
        kube.wait_until(
            lambda: (p := get(kube, "pod", "orders-0-0", ns))
            and p["metadata"]["uid"] != pod_before["metadata"]["uid"] and pod_ready(p),
            180, "orders-0-0 back and Ready", interval=1)  # fmt: skip
        acked_at_return = len(sender.acked)
        sender.wait_for(acked_at_return + 50, timeout=90)  # sends keep being acknowledged afterwards
    pod_after = kube.get("pod", "orders-0-0", "-n", ns)
    assert kube.get("pvc", "store-orders-0-0", "-n", ns)["metadata"]["uid"] == claim_before
    assert [v["persistentVolumeClaim"]["claimName"] for v in pod_after["spec"]["volumes"]
            if "persistentVolumeClaim" in v] == ["store-orders-0-0"]  # fmt: skip
    # Every acknowledged message is readable, also those orders-0 took before it was deleted.
    wait_ready(kube, "broker", "orders", ns, timeout=120)
    expected = {f"before-{i}".encode() for i in range(40)} | set(sender.acked.values())
    got = read_all(namesrv, topic, f"GID_CHECK_{secrets.token_hex(3)}", len(expected))
    assert expected <= set(got), f"{len(expected - set(got))} acknowledged messages missing"
    with SyncAdmin(namesrv) as admin:
        after = {mq_.queue_id: row for mq_, row in admin.consume_stats(group, topic)[0].items()
                 if mq_.broker_name == "orders-0"}  # fmt: skip
    assert {q: r.consumer_offset for q, r in after.items()} == {
        q: r.consumer_offset for q, r in committed_before.items()
    }
