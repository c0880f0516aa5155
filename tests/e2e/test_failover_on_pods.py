"""Automatic failover on pods: a NameServer of 3 pods running the controller and a Broker group of 2
replicas (SYNC) with spec.failover. Force-deleting the master pod, the group takes writes again
(on the other pod) before the deleted pod is back; the status and ``kubectl get broker`` show the
new master and epoch, with a MasterElected Event; the returning pod rejoins in sync; the
``pyrocketmq.io/switchover`` annotation moves the master back; nothing acknowledged is lost. The
controller keeps its state on a claim per pod: losing two of its three pods at once loses none of
the elections it committed."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import E2EImages
from tests.e2e.helpers import (
    MQ,
    Sender,
    broker_cr,
    controller_view,
    delete_namespace,
    first_group,
    get,
    nameserver_cr,
    pod_ready,
    read_until,
    wait_elected,
    wait_ready,
)
from tests.k8s.cluster import KubeCluster


@pytest.fixture(scope="module")
def mq(node_cluster: KubeCluster, images: E2EImages, operator_release: str) -> Iterator[MQ]:
    kube = node_cluster
    ns = kube.create_namespace("failover")
    names = nameserver_cr("names", replicas=3)
    names["spec"]["controller"] = {"enabled": True}
    kube.apply(names, "-n", ns)
    kube.apply(broker_cr("orders", "names", groups=1, replicas=2, failover={"enabled": True}), "-n", ns)
    try:
        yield MQ(kube, ns, images, names=3)
    finally:
        delete_namespace(kube, ns)


@pytest.mark.timeout(900)
def test_a_deleted_master_pod_is_replaced_by_its_slave_before_it_returns(mq: MQ) -> None:
    kube, ns = mq.kube, mq.ns
    first = wait_elected(kube, ns)
    master, epoch = first["master"]["pod"], first["epoch"]
    other = next(p for p in ("orders-0-0", "orders-0-1") if p != master)
    table = kube.kubectl("get", "broker", "orders", "-n", ns).stdout
    assert "MASTERS" in table and master in table, table
    topic, namesrv = mq.new_topic("Failover"), mq.namesrv_addr()
    before_uid = kube.get("pod", master, "-n", ns)["metadata"]["uid"]

    with Sender(namesrv, topic) as sender:
        sender.wait_for(50)
        kube.kubectl("delete", "pod", master, "-n", ns, "--grace-period=0", "--force", "--wait=false")
        deleted = time.monotonic()
        n = len(sender.acked)
        sender.wait_for(n + 20, timeout=60)
        writable = time.monotonic() - deleted
        back = get(kube, "pod", master, ns)
        assert back is None or back["metadata"]["uid"] == before_uid or not pod_ready(back), \
            "the deleted pod was Ready again before the group took writes"
        kube.wait_until(lambda: first_group(kube, ns).get("master", {}).get("pod") == other, 60,
                        f"{other} master in the status", interval=1)
        assert first_group(kube, ns)["epoch"] > epoch
        events = kube.kubectl("get", "events", "-n", ns, "--field-selector", "reason=MasterElected").stdout
        assert other in events, events
        kube.wait_until(lambda: len(first_group(kube, ns).get("inSync", ())) == 2, 180,
                        "the deleted pod back and in sync", interval=2)

        # a switchover moves the master back, gracefully
        kube.kubectl(
            "annotate", "broker", "orders", "-n", ns, f"pyrocketmq.io/switchover={master}", "--overwrite"
        )
        try:
            kube.wait_until(lambda: first_group(kube, ns).get("master", {}).get("pod") == master, 90,
                            f"{master} master again after the switchover", interval=1)
        except TimeoutError as e:
            status = (get(kube, "broker", "orders", ns) or {}).get("status")
            raise AssertionError(f"{e}; status: {status}") from None
        status = get(kube, "broker", "orders", ns)["status"]
        assert status["switchover"]["result"] == "Done", status["switchover"]
        # the request is spent: naming the same pod again later (after another failover) asks again
        kube.wait_until(lambda: "pyrocketmq.io/switchover"
                        not in get(kube, "broker", "orders", ns)["metadata"].get("annotations", {}),
                        60, "the switchover annotation removed once done", interval=1)  # fmt: skip
        n = len(sender.acked)
        sender.wait_for(n + 20, timeout=60)
    # SEND_OK only: a send the old master answered FLUSH_SLAVE_TIMEOUT while it stepped down was never
    # on the in-sync slave, and its copy is cut when the old master follows the new one
    got = read_until(namesrv, topic, f"GID_CHECK_{secrets.token_hex(3)}", set(sender.ok.values()))
    missing = set(sender.ok.values()) - got
    assert not missing, f"{len(missing)} acknowledged messages missing"
    print(
        f"\nmaster pod force-deleted: writable again on {other} after {writable:.1f} s; "
        f"{len(sender.ok)} SEND_OK, statuses {sender.statuses}, {len(sender.failures)} failed sends, "
        "none lost"
    )


@pytest.mark.timeout(600)
def test_losing_two_controller_pods_at_once_loses_no_committed_change(mq: MQ) -> None:
    kube, ns = mq.kube, mq.ns
    wait_ready(kube, "nameserver", "names", ns, timeout=180)
    claims = {c["metadata"]["name"]: c["status"].get("phase") for c in kube.get("pvc", "-n", ns)["items"]}
    assert all(claims.get(f"controller-names-{i}") == "Bound" for i in range(3)), claims
    namesrv = mq.namesrv_addr()
    before = kube.wait_until(
        lambda: (v := controller_view(namesrv, "orders-0")).get("masterId", -1) > 0 and v,
        60,
        "the controller's view of orders-0",
        interval=2,
    )
    assert int(before["epoch"]) >= 1, before
    uids = {i: kube.get("pod", f"names-{i}", "-n", ns)["metadata"]["uid"] for i in (0, 1)}
    kube.kubectl(
        "delete", "pod", "names-0", "names-1", "-n", ns, "--grace-period=0", "--force", "--wait=false"
    )

    def replaced() -> bool:
        pods = [get(kube, "pod", f"names-{i}", ns) for i in (0, 1)]
        return all(
            p and p["metadata"]["uid"] != uids[i] and pod_ready(p) for i, p in zip((0, 1), pods, strict=True)
        )

    kube.wait_until(replaced, 180, "both name server pods replaced and Ready", interval=2)
    namesrv = mq.namesrv_addr()
    after = kube.wait_until(lambda: (v := controller_view(namesrv, "orders-0")).get("masterId", -1) > 0 and v,
                            120, "the controller's view of orders-0 after the loss", interval=2)
    # the same master at the same or a later epoch: nothing it had committed was forgotten
    assert int(after["epoch"]) >= int(before["epoch"]), (before, after)
    if int(after["epoch"]) == int(before["epoch"]):
        assert after["masterId"] == before["masterId"], (before, after)
