"""A rolling config change on real pods against a fresh NameServer and Broker (2 groups × master +
slave), with a client sending from the node throughout: the groups roll one after the other."""

from __future__ import annotations

import secrets
import threading
import time

import pytest

from tests.e2e.helpers import (
    BROKER_SELECTOR,
    MQ,
    Sender,
    mq_fixture,
    pod_ready,
    pods,
    read_all,
    topic_cr,
    wait_ready,
)
from tests.k8s.cluster import KubeCluster

mq = mq_fixture("e2e-roll", wait=True)


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


@pytest.mark.timeout(900)
def test_e_a_config_change_rolls_each_group_slave_first_one_pod_at_a_time(mq: MQ):
    kube, ns = mq.kube, mq.ns
    topic = f"Roll_{secrets.token_hex(3)}"
    kube.apply(topic_cr("roll-topic", topic, "orders"), "-n", ns)
    wait_ready(kube, "topic", "roll-topic", ns, timeout=60)
    namesrv = mq.namesrv_addr()
    with Sender(namesrv, topic, pause=0.05) as sender, PodWatch(kube, ns) as watch:
        sender.wait_for(20)
        config = {"mappedFileSizeCommitLog": "67108864", "fileReservedTime": "48"}
        kube.merge_patch("broker", "orders", ns, {"spec": {"config": config}})
        kube.wait_until(lambda: len(watch.replaced) == 4, 480, "every broker pod replaced", interval=1)
        wait_ready(kube, "broker", "orders", ns, timeout=180)
        n = len(sender.acked)
        sender.wait_for(n + 20)
    order = sorted(watch.replaced, key=watch.replaced.get)
    for g in (0, 1):
        assert order.index(f"orders-{g}-1") < order.index(f"orders-{g}-0"), order  # slave first
    # One broker pod at a time, each Ready before the next: one group after the other.
    assert watch.max_not_ready == 1, (watch.max_not_ready, watch.max_not_ready_per_group)
    first = min((0, 1), key=lambda g: watch.replaced[f"orders-{g}-0"])
    assert watch.replaced[f"orders-{first}-0"] < min(
        watch.replaced[f"orders-{1 - first}-{i}"] for i in (0, 1)
    ), order
    assert sender.failures == [], sender.failures[:5]
    got = read_all(namesrv, topic, f"GID_ROLL_{secrets.token_hex(3)}", len(sender.acked))
    assert set(sender.acked.values()) <= set(got), f"{len(set(sender.acked.values()) - set(got))} missing"
