"""Losing the node that holds a master: a group of 2 replicas (SYNC, failover by default, reached
through its master Service) on two of the three nodes, our client and the unmodified Apache 4.9 Java
producer sending throughout. The master's node is frozen (kubelet, runtime and
every process of its pods stopped at once, as a machine that hangs): the slave on another node is
elected and takes writes; the node goes NotReady; after spec.nodeLoss.replaceAfter the operator
recreates the lost replica on the third node, which catches up until the group has two in-sync
replicas again. Thawed, the old node's broker is gone (its pod was deleted) and never acknowledges
a send; nothing acknowledged is lost."""

from __future__ import annotations

import secrets
import time

import pytest

from tests.e2e.helpers import (
    MQ,
    NodeFaults,
    Sender,
    first_group,
    get,
    master_off_operator_node,
    mq_fixture,
    node_of,
    read_until,
)
from tests.e2e.java_sender import JavaSender

pytestmark = pytest.mark.node_faults  # runs while no other e2e module runs

REPLACE_AFTER = 10  # seconds; the node itself is NotReady 20 s after its last report


# three name servers (each runs the controller by default), one group of two; the master registers
# the Service that follows it, so the Java client's route stays right (it refreshes routes every 30 s)
mq = mq_fixture("nodeloss", names=3, groups=1, nodeLoss={"replaceAfter": f"{REPLACE_AFTER}s"},
                failover={"masterService": True})


@pytest.mark.timeout(900)
def test_a_frozen_master_node_is_failed_over_and_its_replica_replaced_elsewhere(
    mq: MQ, faults: NodeFaults
) -> None:
    kube, ns = mq.kube, mq.ns
    master = master_off_operator_node(kube, ns)
    other = next(p for p in ("orders-0-0", "orders-0-1") if p != master)
    lost_node, kept_node = node_of(kube, ns, master), node_of(kube, ns, other)
    assert lost_node != kept_node  # the placement: one replica per node
    topic, namesrv = mq.new_topic("NodeLoss"), mq.namesrv_addr()

    java = JavaSender(namesrv, topic)
    with Sender(namesrv, topic) as sender, java:
        sender.wait_for(50)
        time.sleep(8)  # the JVM starts, reads its route and sends (it reports when it stops)
        faults.do(lost_node, "freeze")
        frozen_at = time.monotonic()
        n = len(sender.acked)
        sender.wait_for(n + 20, timeout=90)
        writable = time.monotonic() - frozen_at
        kube.wait_until(lambda: first_group(kube, ns).get("master", {}).get("pod") == other, 90,
                        f"{other} master", interval=1)  # fmt: skip
        # the lost replica comes back on the third node and catches up
        def replaced() -> bool:
            pod = get(kube, "pod", master, ns)
            node = ((pod or {}).get("spec") or {}).get("nodeName")
            return (
                bool(node and node not in (lost_node, kept_node))
                and len(first_group(kube, ns).get("inSync", ())) == 2
            )

        kube.wait_until(replaced, 300, f"{master} recreated on the third node and in sync", interval=2)
        in_sync_after = time.monotonic() - frozen_at
        reasons = kube.kubectl("get", "events", "-n", ns, "--field-selector", "reason=ReplicaReplaced").stdout
        assert master in reasons, reasons
        faults.undo(lost_node)
        n = len(sender.acked)
        sender.wait_for(n + 20, timeout=60)
    assert first_group(kube, ns)["master"]["pod"] == other
    acked = set(sender.ok.values()) | set(java.ok.values())
    got = read_until(namesrv, topic, f"GID_CHECK_{secrets.token_hex(3)}", acked)
    missing = acked - got
    assert not missing, f"{len(missing)} acknowledged messages missing"
    java_writable = java.writable_after(frozen_at, on=get(kube, "pod", other, ns)["status"]["podIP"])
    assert java_writable is not None, f"the Java producer never wrote to {other}: {java.first_failure}"
    print(
        f"\nnode of {master} frozen: writable on {other} after {writable:.1f} s "
        f"(Java client {java_writable:.1f} s, {len(java.ok)} SEND_OK, {java.failures} failed); "
        f"replica replaced and in sync after {in_sync_after:.0f} s; "
        f"{len(sender.ok)} SEND_OK, {len(sender.failures)} failed sends, none lost"
    )
