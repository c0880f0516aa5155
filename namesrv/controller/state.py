"""The controller's state of every broker group (pure: no I/O, no clock of its own).

Per group (cluster, broker name) it keeps the replicas (id → remoting and HA address, last
reported max offset and epoch, last heartbeat), the master's replica id, the **master epoch**
(raised by every election), the **epoch history** ``[(epoch, start offset)]`` (where in the
commitlog each master's writes begin, reported by the master before it takes a write), and the
**SyncStateSet** (replicas that hold every acknowledged message) with its own epoch.

Rules, which are what makes a failover lose nothing acknowledged:

- The first replica to report for a new group becomes its master (epoch 1, set = itself).
- A master is dead when silent for ``timeout_ms`` or as soon as its connection to the controller
  closes; then the live members of the SyncStateSet are the only candidates and the one with the
  highest max offset wins (ties: the lowest id). Nobody eligible → the group has no master until an
  eligible replica reports (a replica outside the set never becomes master: it may miss acknowledged
  messages).
- An election raises the epoch, appends ``(epoch, -1)`` to the history (the start is filled by the
  new master's next report) and resets the set to the new master.
- Only the current master, naming the current epoch and set epoch, changes the set; a stale request
  (a deposed master) is refused, which is the fencing a SYNC_MASTER relies on.
- A switchover names a live member of the set; it is an election with that winner.

A replica cuts its log before following a master where the history says its epoch ended (the
start of the next epoch), so it follows a new master only once that master's start is recorded:
``pyrocketmq.broker.ha.replica.truncate_point``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NO_MASTER = -1


@dataclass(slots=True)
class Replica:
    replica_id: int
    addr: str = ""
    ha_addr: str = ""
    max_offset: int = 0
    epoch: int = 0
    """The epoch whose history the replica's log follows (its own report)."""
    last_seen_ms: int = 0
    closed: bool = False
    """Its connection to the controller closed since its last report."""


@dataclass(slots=True)
class Group:
    cluster: str
    name: str
    replicas: dict[int, Replica] = field(default_factory=dict)
    master: int = NO_MASTER
    epoch: int = 0
    history: list[tuple[int, int]] = field(default_factory=list)
    sync_set: set[int] = field(default_factory=set)
    sync_epoch: int = 0
    elections: int = 0

    @property
    def epoch_start(self) -> int:
        """Start offset of the current epoch (-1 until the master reported it)."""
        return self.history[-1][1] if self.history and self.history[-1][0] == self.epoch else -1

    def view(self, now_ms: int | None = None) -> dict[str, Any]:
        """What a replica (or an operator) is told: the JSON body of the controller's answers. With
        ``now_ms`` (the metadata an operator reads), each replica's silence so far too (``silentMs``:
        a master silent for a while is suspect before it is declared dead)."""
        m = self.replicas.get(self.master)
        replicas = {}
        for r in self.replicas.values():
            replicas[str(r.replica_id)] = {"addr": r.addr, "haAddr": r.ha_addr, "maxOffset": r.max_offset,
                                           "epoch": r.epoch}
            if now_ms is not None:
                replicas[str(r.replica_id)]["silentMs"] = max(0, now_ms - r.last_seen_ms)
        return {
            "clusterName": self.cluster, "brokerName": self.name, "masterId": self.master,
            "masterAddr": m.addr if m else "", "masterHaAddr": m.ha_addr if m else "",
            "epoch": self.epoch, "epochStart": self.epoch_start,
            "history": [[e, s] for e, s in self.history],
            "syncStateSet": sorted(self.sync_set), "syncStateSetEpoch": self.sync_epoch,
            "replicas": replicas,
            "elections": self.elections,
        }


class ControllerState:
    """See the module docstring. Example::

        s = ControllerState(timeout_ms=3000)
        s.report("c", "broker-a", 1, addr="a:1", ha_addr="a:2", epoch=0, max_offset=0, now_ms=0)
        s.groups["broker-a"].master   # 1
    """

    def __init__(self, timeout_ms: int = 3000) -> None:
        self.timeout_ms = timeout_ms
        self.groups: dict[str, Group] = {}
        self.events: list[str] = []
        """Elections and set changes since the caller last drained it (logged, turned into Events)."""

    # -- replicas -------------------------------------------------------------------------------
    def report(self, cluster: str, name: str, replica_id: int, *, addr: str, ha_addr: str, epoch: int,
               max_offset: int, now_ms: int, epoch_start: int = -1) -> Group:
        """A replica's heartbeat. A master also reports where its epoch starts (once known)."""
        if replica_id < 0:
            raise ValueError(f"replica id {replica_id} is negative")
        g = self.groups.get(name)
        if g is None:
            g = self.groups[name] = Group(cluster, name)
        r = g.replicas.get(replica_id)
        if r is None:
            r = g.replicas[replica_id] = Replica(replica_id)
        r.addr, r.ha_addr, r.epoch, r.max_offset = addr, ha_addr, epoch, max_offset
        r.last_seen_ms, r.closed = now_ms, False
        if g.master == replica_id and epoch == g.epoch and epoch_start >= 0 and g.epoch_start < 0:
            g.history[-1] = (g.epoch, epoch_start)
            self.events.append(f"{name}: master {replica_id} starts epoch {g.epoch} at offset {epoch_start}")
        if g.master == NO_MASTER:
            if not g.history:
                self._install(g, replica_id, "first replica of the group")
            else:
                self.elect(g, now_ms, reason="a replica reported while the group had no master")
        return g

    def closed(self, name: str, replica_id: int) -> None:
        """The replica's connection closed: a master is replaced at the next :meth:`expire`."""
        g = self.groups.get(name)
        if g is not None and replica_id in g.replicas:
            g.replicas[replica_id].closed = True

    def alive(self, r: Replica, now_ms: int) -> bool:
        return not r.closed and now_ms - r.last_seen_ms <= self.timeout_ms

    def expire(self, now_ms: int) -> list[str]:
        """Elect a new master for every group whose master is dead; the groups that changed."""
        changed = []
        for g in self.groups.values():
            m = g.replicas.get(g.master)
            if m is not None and not self.alive(m, now_ms):
                why = "its connection closed" if m.closed else f"silent for {now_ms - m.last_seen_ms} ms"
                if self.elect(g, now_ms, reason=f"master {g.master} is dead ({why})"):
                    changed.append(g.name)
        return changed

    # -- elections ------------------------------------------------------------------------------
    def elect(self, g: Group, now_ms: int, *, reason: str, prefer: int | None = None) -> bool:
        """Make the best live member of the set master (``prefer`` when it is one); False, with the
        group left without a master if its master is dead, when no member is eligible."""
        live = [r for rid, r in g.replicas.items() if rid in g.sync_set and self.alive(r, now_ms)]
        if prefer is not None:
            live = [r for r in live if r.replica_id == prefer]
        else:
            live = [r for r in live if r.replica_id != g.master]
        if not live:
            m = g.replicas.get(g.master)
            if m is not None and not self.alive(m, now_ms):
                self.events.append(f"{g.name}: no eligible replica in the in-sync set {sorted(g.sync_set)} "
                                   f"({reason}); the group has no master")
                g.master = NO_MASTER
            return False
        best = max(live, key=lambda r: (r.max_offset, -r.replica_id))
        self._install(g, best.replica_id, reason)
        return True

    def _install(self, g: Group, replica_id: int, reason: str) -> None:
        g.master = replica_id
        g.epoch += 1
        g.history.append((g.epoch, -1))
        g.sync_set = {replica_id}
        g.sync_epoch += 1
        g.elections += 1
        self.events.append(f"{g.name}: replica {replica_id} elected master at epoch {g.epoch} ({reason})")

    def switchover(self, name: str, target: int, now_ms: int) -> str | None:
        """Move the master to ``target`` (a live member of the set); None when done, else why not."""
        g = self.groups.get(name)
        if g is None:
            return f"no broker group {name!r}"
        if target == g.master:
            return None
        if target not in g.sync_set:
            return f"replica {target} is not in the in-sync set {sorted(g.sync_set)}"
        if not self.elect(g, now_ms, reason="switchover", prefer=target):
            return f"replica {target} is not alive"
        return None

    def alter_sync_set(
        self, name: str, replica_id: int, epoch: int, sync_epoch: int, members: set[int]
    ) -> str | None:
        """The master's request to change the set; None when applied, else why it is refused."""
        g = self.groups.get(name)
        if g is None:
            return f"no broker group {name!r}"
        if replica_id != g.master or epoch != g.epoch:
            return (f"replica {replica_id} at epoch {epoch} is not the master "
                    f"(master {g.master}, epoch {g.epoch})")
        if sync_epoch != g.sync_epoch:
            return f"set epoch {sync_epoch} is stale (current {g.sync_epoch})"
        if replica_id not in members or not members <= set(g.replicas):
            return f"set {sorted(members)} must hold the master and only known replicas"
        if members != g.sync_set:
            self.events.append(f"{name}: in-sync set {sorted(g.sync_set)} → {sorted(members)}")
            g.sync_set = set(members)
            g.sync_epoch += 1
        return None

    # -- persistence ----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"groups": [{
            "cluster": g.cluster, "name": g.name, "master": g.master, "epoch": g.epoch,
            "history": [[e, s] for e, s in g.history], "syncStateSet": sorted(g.sync_set),
            "syncStateSetEpoch": g.sync_epoch, "elections": g.elections,
            # max offsets move with every heartbeat: not saved (a replica reports it again within a second)
            "replicas": [{"id": r.replica_id, "addr": r.addr, "haAddr": r.ha_addr, "epoch": r.epoch}
                         for r in g.replicas.values()],
        } for g in self.groups.values()]}

    def load_json(
        self, data: dict[str, Any], now_ms: int, heard: dict[tuple[str, int], int] | None = None
    ) -> None:
        """Restore saved state. A replica counts as last seen when ``heard`` (group, replica id → ms) says
        this instance last heard it, or else just now (it has ``timeout_ms`` to report)."""
        heard = heard or {}
        self.groups.clear()
        for d in data.get("groups", []):
            g = Group(
                str(d["cluster"]),
                str(d["name"]),
                master=int(d["master"]),
                epoch=int(d["epoch"]),
                history=[(int(e), int(s)) for e, s in d["history"]],
                sync_set={int(x) for x in d["syncStateSet"]},
                sync_epoch=int(d["syncStateSetEpoch"]),
                elections=int(d.get("elections", 0)),
            )
            for r in d["replicas"]:
                rid = int(r["id"])
                seen = min(now_ms, heard.get((g.name, rid), now_ms))
                g.replicas[rid] = Replica(rid, str(r["addr"]), str(r["haAddr"]), int(r.get("maxOffset", 0)),
                                          int(r["epoch"]), seen)
            self.groups[g.name] = g
