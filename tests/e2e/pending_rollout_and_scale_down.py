"""NOT COLLECTED YET (the file name does not start with ``test_``): both tests fail on real pods today,
for reasons that are open work of the Kubernetes issue, not test problems:

- e: the roll order holds (each group's slave before its master, one pod of a group at a time), but
  the producer on the node gets "connection refused" from the restarting master instead of retrying
  on the other group's broker;
- f: after the group has read everything, the operator does not remove the drained group within
  240 s on pods (the same drain passes against loopback brokers in tests/k8s).

Rename to ``test_rollout_and_scale_down.py`` once both are fixed.

A rolling config change and a scale-down on real pods, each against its own fresh NameServer and
Broker (2 groups × master + slave), so that no other test's consumer groups hold the drain up.
A client sends from the node throughout the rollout."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator

import pytest

from pyrocketmq.client import Message, SyncAdmin, SyncProducer
from tests.e2e.conftest import E2EImages
from tests.e2e.helpers import broker_cr, get, group_cr, nameserver_cr, pod_ready, pods, topic_cr, wait_ready
from tests.e2e.test_rocketmq_on_pods import MQ, Sender, read_all
from tests.k8s.cluster import KubeCluster

BROKER_SELECTOR = "app.kubernetes.io/component=broker"


@pytest.fixture(scope="module")
def mq(node_cluster: KubeCluster, images: E2EImages, operator_release: str) -> Iterator[MQ]:
    kube = node_cluster
    ns = kube.create_namespace("e2e-roll")
    kube.apply(nameserver_cr("names"), "-n", ns)
    kube.apply(broker_cr("orders", "names"), "-n", ns)
    try:
        wait_ready(kube, "nameserver", "names", ns, timeout=180)
        wait_ready(kube, "broker", "orders", ns, timeout=240)
        yield MQ(kube, ns, images)
    finally:
        kube.kubectl("delete", "namespace", ns, "--timeout=180s", check=False, timeout=200)


class PodWatch:
    """Polls the broker pods: when each was replaced, and how many of a group were not Ready at once."""

    def __init__(self, kube: KubeCluster, ns: str) -> None:
        self.kube, self.ns = kube, ns
        self.replaced: dict[str, float] = {}
        self.max_not_ready_per_group: dict[str, int] = {}
        self.max_not_ready = 0
        self._uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(kube, ns, BROKER_SELECTOR)}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PodWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                current = pods(self.kube, self.ns, BROKER_SELECTOR)
            except Exception:  # noqa: BLE001 — a failed poll is retried
                time.sleep(0.5)
                continue
            seen = {p["metadata"]["name"]: p for p in current}
            not_ready = [n for n in self._uids if n not in seen or not pod_ready(seen[n])]
            self.max_not_ready = max(self.max_not_ready, len(not_ready))
            for group in {n.rsplit("-", 1)[0] for n in self._uids}:
                down = sum(n.rsplit("-", 1)[0] == group for n in not_ready)
                self.max_not_ready_per_group[group] = max(self.max_not_ready_per_group.get(group, 0), down)
            for name, pod in seen.items():
                if pod["metadata"]["uid"] != self._uids.get(name) and name not in self.replaced:
                    self.replaced[name] = time.monotonic()
            time.sleep(0.5)


def condition_status(obj: dict | None, kind: str) -> str:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c.get("type") == kind:
            return c.get("status", "")
    return ""


@pytest.mark.timeout(900)
def test_e_a_config_change_rolls_each_group_slave_first_one_pod_at_a_time(mq: MQ):
    kube, ns = mq.kube, mq.ns
    topic = f"Roll_{secrets.token_hex(3)}"
    kube.apply(topic_cr("roll-topic", topic, "orders"), "-n", ns)
    wait_ready(kube, "topic", "roll-topic", ns, timeout=60)
    namesrv = mq.namesrv_addr()
    with Sender(namesrv, topic, pause=0.05) as sender, PodWatch(kube, ns) as watch:
        sender.wait_for(20)
        kube.kubectl("patch", "broker", "orders", "-n", ns, "--type=merge", "-p",
                     '{"spec": {"config": {"mappedFileSizeCommitLog": "67108864", "fileReservedTime": "48"}}}')
        kube.wait_until(lambda: len(watch.replaced) == 4, 480, "every broker pod replaced", interval=1)
        wait_ready(kube, "broker", "orders", ns, timeout=180)
        n = len(sender.acked)
        sender.wait_for(n + 20)
    order = sorted(watch.replaced, key=watch.replaced.get)
    for g in (0, 1):
        assert order.index(f"orders-{g}-1") < order.index(f"orders-{g}-0"), order  # slave first
    # Within a group one pod at a time, each Ready before the next (the groups roll side by side).
    assert watch.max_not_ready_per_group == {"orders-0": 1, "orders-1": 1}, watch.max_not_ready_per_group
    assert sender.failures == [], sender.failures[:5]
    got = read_all(namesrv, topic, f"GID_ROLL_{secrets.token_hex(3)}", len(sender.acked))
    assert set(sender.acked.values()) <= set(got), f"{len(set(sender.acked.values()) - set(got))} missing"


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
    kube.kubectl("patch", "broker", "orders", "-n", ns, "--type=merge", "-p", '{"spec": {"groups": 1}}')
    # The group has read nothing: orders-1 must stay, read-only, until it has.
    obj = kube.wait_until(
        lambda: condition_status(get(kube, "broker", "orders", ns), "ScaleDownPending") == "True"
        and get(kube, "broker", "orders", ns), 120, "ScaleDownPending", interval=1)  # fmt: skip
    assert "orders-1" in {s["metadata"]["name"] for s in kube.get("statefulsets", "-n", ns)["items"]}, obj
    got = read_all(namesrv, topic, group, 100)  # the group catches up (and commits)
    assert sorted(got) == sorted(f"s{i}".encode() for i in range(100))
    kube.wait_until(
        lambda: {s["metadata"]["name"] for s in kube.get("statefulsets", "-n", ns)["items"]} == {"orders-0"},
        240, "orders-1 removed after the drain", interval=2)  # fmt: skip
    kube.wait_until(lambda: not [p for p in pods(kube, ns, BROKER_SELECTOR) if p["metadata"]["name"].startswith("orders-1")],
                    120, "orders-1 pods gone", interval=1)  # fmt: skip
    with SyncAdmin(namesrv) as admin:
        kube.wait_until(lambda: {q.broker_name for q in admin.topic_route(topic).queue_datas} == {"orders-0"}, 120,
                        "route without orders-1")  # fmt: skip
    with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv) as producer:
        assert producer.send(Message(topic, b"after")).message_queue.broker_name == "orders-0"
