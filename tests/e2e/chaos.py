"""A chaos run on the node cluster, OpenChaos as the model: producers on a plain topic and on an
orderly one (sharding keys) send throughout while faults are injected one at a time from a seeded
schedule; each fault is held, undone, and the group waited for until it is whole again: a killed
pod replaced and Ready, the controller itself naming a master and every replica in sync, every pod
of the group Ready, and the operator's status saying the same (it is what picks the next target).
Afterwards both topics are read back and checked (:mod:`.chaos_check`).

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
    controller_view,
    first_group,
    get,
    master_off_operator_node,
    node_of,
    pod_ready,
    pods,
    wait_ready,
)
from tests.e2e.java_sender import JavaSender

KINDS = ("pod-kill", "node-freeze", "node-partition", "drain", "controller-kill")
NODE_FAULTS = {"node-freeze": "freeze", "node-partition": "isolate", "drain": "drain"}
"""Faults done to the master's node: the NodeFaults action (a drain is undone at once, when it is done)."""


@dataclass
class Chaos:
    mq: MQ
    hold: float = 15.0
    whole_timeout: float = 300.0
    group: str = "orders-0"
    faults: NodeFaults = field(init=False)
    """What was done to nodes, undone by :meth:`restore` if a run stops half-way."""

    def __post_init__(self) -> None:
        self.faults = NodeFaults(self.mq.kube)

    def _node_fault(self, node: str, action: str, hold: float) -> None:
        self.faults.do(node, action)
        time.sleep(hold)
        self.faults.undo(node)

    def _kill(self, pod: str) -> None:
        """``pod`` deleted at once (no grace), as a crash; back when its replacement is Ready."""
        kube, ns = self.mq.kube, self.mq.ns
        uid = ((get(kube, "pod", pod, ns) or {}).get("metadata") or {}).get("uid")
        kube.kubectl("delete", "pod", pod, "-n", ns, "--grace-period=0", "--force", "--wait=false")

        def replaced() -> bool:
            new = get(kube, "pod", pod, ns)
            return bool(new) and new["metadata"]["uid"] != uid and pod_ready(new)

        kube.wait_until(replaced, self.whole_timeout, f"{pod} replaced and Ready", interval=1)

    def inject(self, kind: str, rng: random.Random) -> FaultRecord:
        if kind not in KINDS:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(KINDS)}")
        target = self.wait_whole()
        if kind in NODE_FAULTS:  # on a node without the operator (switched over first if needed)
            target = master_off_operator_node(self.mq.kube, self.mq.ns)
        began = time.monotonic()
        if kind == "pod-kill":
            self._kill(target)
        elif kind == "controller-kill":
            target = f"names-{rng.randrange(self.mq.names)}"
            self._kill(target)
        else:
            target = node_of(self.mq.kube, self.mq.ns, target)
            self._node_fault(target, NODE_FAULTS[kind], 0.0 if kind == "drain" else self.hold)
        self.wait_whole()
        return FaultRecord(kind, target, began, time.monotonic())

    def whole(self) -> str | None:
        """The master's pod if the group is whole now (see the module docstring), else None."""
        kube, ns = self.mq.kube, self.mq.ns
        replicas = int(kube.get("statefulset", self.group, "-n", ns)["spec"]["replicas"])
        ready = [
            p for p in pods(kube, ns) if p["metadata"]["name"].startswith(f"{self.group}-") and pod_ready(p)
        ]
        if len(ready) != replicas:
            return None
        try:
            namesrv = self.mq.namesrv_addr()
        except KeyError:  # a name server pod without an address yet
            return None
        view = controller_view(namesrv, self.group)
        if int(view.get("masterId") or 0) <= 0 or len(view.get("syncStateSet") or ()) != replicas:
            return None
        master = f"{self.group}-{int(view['masterId']) - 1}"
        status = first_group(kube, ns)
        in_step = status.get("master", {}).get("pod") == master and len(status.get("inSync", ())) == replicas
        return master if in_step else None

    def wait_whole(self) -> str:
        """Until the group is whole and the name servers Ready; its master's pod."""
        master = self.mq.kube.wait_until(self.whole, self.whole_timeout, "the group whole again", interval=2)
        wait_ready(self.mq.kube, "nameserver", "names", self.mq.ns, timeout=self.whole_timeout)
        return str(master)

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
    chaos = Chaos(mq, hold=hold)
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
                say(
                    f"fault {i + 1}/{faults}: {r.kind} {r.target}: "
                    f"whole again after {r.recovered - r.began:.0f} s"
                )
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
    return {
        "seed": seed,
        "faults": [asdict(r) for r in records],
        "table": table,
        "unavailable": gaps,
        "verdicts": {k: asdict(v) for k, v in verdicts.items()},
        "ok": all(v.ok for v in verdicts.values()),
        "ok_times": ok_times, "wall_minus_mono": time.time() - time.monotonic(),
    }
