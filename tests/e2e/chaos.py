"""A chaos run on the node cluster, OpenChaos as the model: producers on a plain topic and on an
orderly one (sharding keys) send throughout while faults are injected one at a time from a seeded
schedule; each fault is held, undone, and the group waited for until it is whole again (a master,
every replica in sync). Afterwards both topics are read back and checked (:mod:`.chaos_check`).

Faults, each aimed at the master of Broker ``orders``'s first group (or its node):

- ``pod-kill``: the master pod deleted at once (no grace), as a crash;
- ``node-freeze``: its node frozen (kubelet, runtime, every pod process), then thawed;
- ``node-partition``: its node cut off from the other nodes, then healed;
- ``drain``: ``kubectl drain`` of its node, then uncordoned;
- ``controller-kill``: a name server pod (each runs a controller) deleted at once.

Node faults are aimed at a master on a node without the operator (switched over first if needed).
Used by ``tests/e2e/test_chaos.py`` (a short schedule) and ``python -m bench chaos`` (a long one).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pyrocketmq.client import SyncPullConsumer
from tests.e2e.chaos_check import FaultRecord, Msg, Verdict, report, unavailable, verdict
from tests.e2e.helpers import (
    MQ,
    NodeFaults,
    Sender,
    first_group,
    master_off_operator_node,
    node_of,
    wait_ready,
)
from tests.e2e.java_sender import JavaSender
from tests.k8s.cluster import KubeCluster

KINDS = ("pod-kill", "node-freeze", "node-partition", "drain", "controller-kill")
NODE_FAULTS = {"node-freeze": "freeze", "node-partition": "isolate", "drain": "drain"}
"""Faults done to the master's node: the NodeFaults action (a drain is undone at once, when it is done)."""


@dataclass
class Chaos:
    kube: KubeCluster
    ns: str
    hold: float = 15.0
    whole_timeout: float = 300.0
    faults: NodeFaults = field(init=False)
    """What was done to nodes, undone by :meth:`restore` if a run stops half-way."""

    def __post_init__(self) -> None:
        self.faults = NodeFaults(self.kube)

    def _master(self, on_a_node_alone: bool) -> str:
        if on_a_node_alone:
            return master_off_operator_node(self.kube, self.ns)
        return str(first_group(self.kube, self.ns)["master"]["pod"])

    def _node_fault(self, node: str, action: str, hold: float) -> None:
        self.faults.do(node, action)
        time.sleep(hold)
        self.faults.undo(node)

    def inject(self, kind: str, rng: random.Random) -> FaultRecord:
        kube, ns = self.kube, self.ns
        self.wait_whole()
        target = self._master(kind in NODE_FAULTS)
        began = time.monotonic()
        if kind == "pod-kill":
            kube.kubectl("delete", "pod", target, "-n", ns, "--grace-period=0", "--force", "--wait=false")
        elif kind in NODE_FAULTS:
            target = node_of(kube, ns, target)
            self._node_fault(target, NODE_FAULTS[kind], 0.0 if kind == "drain" else self.hold)
        elif kind == "controller-kill":
            target = f"names-{rng.randrange(3)}"
            kube.kubectl("delete", "pod", target, "-n", ns, "--grace-period=0", "--force", "--wait=false")
        else:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(KINDS)}")
        self.wait_whole()
        return FaultRecord(kind, target, began, time.monotonic())

    def wait_whole(self) -> None:
        """A master elected and every replica of the group in sync, and the name servers Ready."""
        def whole() -> bool:
            g = first_group(self.kube, self.ns)
            return bool(g.get("master", {}).get("pod")) and len(g.get("inSync", ())) == 2

        self.kube.wait_until(whole, self.whole_timeout, "the group whole again", interval=1)
        wait_ready(self.kube, "nameserver", "names", self.ns, timeout=self.whole_timeout)

    def restore(self) -> None:
        self.faults.restore()


def read_log(namesrv: str, topic: str, want: set[bytes], timeout: float = 120) -> list[bytes]:
    """Every body of ``topic`` from the start, in queue order, until ``want`` was all seen and a poll
    came back empty (so copies stored later are read too), or ``timeout``."""
    got: list[bytes] = []
    with SyncPullConsumer(f"GID_CHAOS_{random.randrange(1 << 24):06x}", namesrv) as consumer:
        consumer.assign(consumer.fetch_queues(topic))
        consumer.seek_to_begin()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            batch = [m.body for m in consumer.poll(timeout=2)]
            got.extend(batch)
            if not batch and want <= set(got):
                break
    return got


def _keyed(body: bytes) -> Msg:
    text = body.decode()
    _, key, seq = text.split("|")
    return Msg(text, key, int(seq))


def run(mq: MQ, faults: int, seed: int, kinds: Sequence[str] = KINDS, hold: float = 15.0,
        say: Callable[[str], None] = print, java: bool = False) -> dict[str, Any]:
    """Deploy two topics on Broker ``orders`` of ``mq``, send throughout ``faults`` faults, check.
    ``java``: the Apache RocketMQ 4.9 Java producer sends to the plain topic too."""
    rng = random.Random(seed)
    plain, orderly = mq.new_topic("ChaosPlain", queues=4), mq.new_topic("ChaosOrderly", queues=4)
    namesrv = mq.namesrv_addr()
    chaos = Chaos(mq.kube, mq.ns, hold=hold)
    records: list[FaultRecord] = []
    j = JavaSender(namesrv, plain) if java else None
    try:
        with Sender(namesrv, plain, send_timeout=10.0) as p, Sender(namesrv, orderly, keys=8) as o, \
                j or contextlib.nullcontext():  # fmt: skip
            p.wait_for(50)
            o.wait_for(50)
            if j:
                time.sleep(5)  # the JVM starts, reads its route and sends before the first fault
            for i in range(faults):
                kind = rng.choice(list(kinds))
                records.append(chaos.inject(kind, rng))
                r = records[-1]
                say(f"fault {i + 1}/{faults}: {r.kind} {r.target}: whole again after {r.recovered - r.began:.0f} s")
            time.sleep(2)
    finally:
        chaos.restore()
    namesrv = mq.namesrv_addr()  # pods may have moved
    plain_ok = [*p.ok.values(), *(j.ok.values() if j else ())]
    verdicts: dict[str, Verdict] = {
        "plain": verdict([Msg(b.decode()) for b in plain_ok],
                         [Msg(b.decode()) for b in read_log(namesrv, plain, set(plain_ok))]),
        "orderly": verdict([_keyed(b) for b in o.ok.values()],
                           [_keyed(b) for b in read_log(namesrv, orderly, set(o.ok.values()))]),
    }
    ok_times = {"python": sorted(p.ok_at), **({"java": j.ok_at} if j else {})}
    table = report(records, ok_times, verdicts, len(p.failures) + len(o.failures) + (j.failures if j else 0))
    say(table)
    gaps = {c: [round(unavailable(t, r), 1) for r in records] for c, t in ok_times.items()}
    return {"seed": seed, "faults": [asdict(r) for r in records], "table": table, "unavailable": gaps,
            "verdicts": {k: asdict(v) for k, v in verdicts.items()}, "ok": all(v.ok for v in verdicts.values())}
