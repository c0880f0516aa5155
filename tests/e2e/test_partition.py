"""A partition: the node that holds a master is cut off from the other nodes while every process on it
keeps running (the control plane and the test's clients, on the host, still reach it). The isolated
master can reach neither its in-sync replica nor a majority of the controllers, so it acknowledges
nothing more (its in-sync set cannot shrink without the controller); the replica on another node is
elected and takes the writes. A second producer that knows only the name server on the isolated
node keeps sending to the old master throughout: it gets no SEND_OK while the cut lasts. Healed, the
old master rejoins as a replica of the new one (its unacknowledged tail truncated) and the group is
in sync again; every message either producer saw acknowledged is in the final log."""

from __future__ import annotations

import secrets
import time

import pytest

from tests.e2e.helpers import (
    MQ,
    NodeFaults,
    Sender,
    first_group,
    master_off_operator_node,
    mq_fixture,
    node_of,
    pod_ip,
    read_until,
)

pytestmark = pytest.mark.node_faults  # runs while no other e2e module runs


# one name server per node (each runs a controller), one group of two (SYNC, failover by default)
mq = mq_fixture("partition", names=3, groups=1)


@pytest.mark.timeout(900)
def test_an_isolated_master_acknowledges_nothing_and_rejoins_as_a_replica(mq: MQ, faults: NodeFaults) -> None:
    kube, ns = mq.kube, mq.ns
    master = master_off_operator_node(kube, ns)
    other = next(p for p in ("orders-0-0", "orders-0-1") if p != master)
    cut = node_of(kube, ns, master)
    topic = mq.new_topic("Partition")
    names = {node_of(kube, ns, f"names-{i}"): f"{pod_ip(kube, ns, f'names-{i}')}:9876" for i in range(3)}
    everyone = ";".join(names.values())

    with Sender(everyone, topic) as sender, Sender(names[cut], topic) as inside:
        sender.wait_for(50)
        inside.wait_for(50)
        faults.do(cut, "isolate")
        cut_at = time.monotonic()
        time.sleep(1)  # what was in flight at the cut has its answer
        inside_ok = len(inside.ok)
        n = len(sender.ok)
        kube.wait_until(
            lambda: len(sender.ok) >= n + 20, 120, "SEND_OK again through the other side", interval=0.5
        )
        writable = time.monotonic() - cut_at
        kube.wait_until(lambda: first_group(kube, ns).get("master", {}).get("pod") == other, 90,
                        f"{other} master", interval=1)  # fmt: skip
        time.sleep(10)  # the old master keeps running, cut off, while both producers send
        inside_during = len(inside.ok) - inside_ok
        faults.undo(cut)
        healed_at = time.monotonic()
        kube.wait_until(lambda: len(first_group(kube, ns).get("inSync", ())) == 2, 180,
                        f"{master} back in sync as a replica", interval=2)  # fmt: skip
        in_sync_after = time.monotonic() - healed_at
        sender.wait_for(len(sender.acked) + 20, timeout=60)

    assert inside_during == 0, f"the isolated master acknowledged {inside_during} sends"
    assert first_group(kube, ns)["master"]["pod"] == other
    acknowledged = set(sender.ok.values()) | set(inside.ok.values())
    got = read_until(everyone, topic, f"GID_CHECK_{secrets.token_hex(3)}", acknowledged)
    missing = acknowledged - got
    assert not missing, f"{len(missing)} acknowledged messages missing"
    print(
        f"\nmaster {master} cut off on {cut}: SEND_OK on {other} after {writable:.1f} s; the isolated side "
        f"acknowledged {inside_during}; back in sync {in_sync_after:.0f} s after the heal; "
        f"{len(sender.ok)} + {len(inside.ok)} SEND_OK, "
        f"{len(sender.failures)} + {len(inside.failures)} failed, "
        f"{sum(sender.statuses.values()) + sum(inside.statuses.values()) - len(acknowledged)} other answers, "
        "none lost"
    )
