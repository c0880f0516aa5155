"""Draining the node that holds a master: ``kubectl drain`` under load. The master's budget holds its
eviction until the operator has moved mastership to the in-sync replica on another node; the drain
then evicts the old master as a slave. The producer sees no failed send, nothing acknowledged is
lost; uncordoned, the evicted pods come back on their volumes and the group is in sync again."""

from __future__ import annotations

import secrets
import time

import pytest

from tests.e2e.helpers import (
    MQ,
    NodeFaults,
    Sender,
    first_group,
    mq_fixture,
    read_until,
    wait_elected,
)

pytestmark = pytest.mark.node_faults  # runs while no other e2e module runs


mq = mq_fixture("drain", names=3, groups=1)  # failover by default


@pytest.mark.timeout(900)
def test_draining_a_masters_node_moves_the_master_first_and_fails_no_send(mq: MQ, faults: NodeFaults) -> None:
    kube, ns = mq.kube, mq.ns
    master = wait_elected(kube, ns)["master"]["pod"]
    node = kube.get("pod", master, "-n", ns)["spec"]["nodeName"]
    uid = kube.get("pod", master, "-n", ns)["metadata"]["uid"]
    topic, namesrv = mq.new_topic("Drain"), mq.namesrv_addr()
    # a send waits for a master handing over within its timeout: 10 s, more than a handover takes
    with Sender(namesrv, topic, send_timeout=10.0) as sender:
        sender.wait_for(50)
        t0 = time.monotonic()
        faults.do(node, "drain")
        drained = time.monotonic() - t0
        moved = first_group(kube, ns)["master"]["pod"]
        n = len(sender.acked)
        sender.wait_for(n + 20, timeout=60)
    assert moved != master and kube.get("pod", moved, "-n", ns)["spec"]["nodeName"] != node

    def drain_events() -> str:
        selector = "reason=MasterMovedForDrain"
        return kube.kubectl("get", "events", "-n", ns, "--field-selector", selector).stdout

    # the operator posts its Events in the background (kopf's event queue): wait for the one it posted
    group = master.rsplit("-", 1)[0]
    kube.wait_until(lambda: group in drain_events(), 30, f"a MasterMovedForDrain Event naming {group}")
    old = kube.get("pods", "-n", ns)["items"]
    assert all(p["metadata"]["uid"] != uid for p in old)  # the old master was evicted, after handing over
    assert sender.failures == [], sender.failures[:5]
    # SEND_OK is what a SYNC_MASTER promises to keep (as in the other fault tests). Until it learns
    # of the handover, the old master may answer a send it can no longer replicate with
    # FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE: stored on it alone, and dropped when it rejoins.
    got = read_until(namesrv, topic, f"GID_CHECK_{secrets.token_hex(3)}", set(sender.ok.values()))
    missing = set(sender.ok.values()) - got
    assert not missing, f"{len(missing)} acknowledged (SEND_OK) messages missing; answers: {sender.statuses}"
    faults.undo(node)
    kube.wait_until(lambda: len(first_group(kube, ns).get("inSync", ())) == 2, 240,
                    "the evicted replica back on its volume and in sync", interval=2)
    print(f"\ndrained {node} (master {master} -> {moved}) in {drained:.0f} s; answers {sender.statuses}, "
          f"{len(sender.failures)} failed, no SEND_OK lost")
