"""spec.failover.masterService: each group's ``<group>-master`` Service follows the elected master
within a fraction of a second, not a resync later.

The master registers that Service's address with the name servers (``masterServiceAddr``), so a
client's route never changes across a failover: what changes is where the Service leads. The
follower asks each followed cluster's controller for its view every ``interval`` seconds and, when a
group's master changed, writes the Service's EndpointSlice (:func:`.render.broker.master_endpoints`):
the new master at its election (a send that reaches it before it takes writes is refused at once and
retried by the client); while the master is silent (``SUSPECT_MS``) or none is elected, the replica
the controller would elect next, which refuses sends until it is (:func:`service_target`): new
connections are refused at once, not left hanging on a frozen host.
kube-proxy then sends new connections to the new master; a client's connection to the old one times
out (a 4.x client closes it after its request timeout) and reconnects there.

The reconcile of a Broker hands the follower what to follow (``follow``) after applying the Services,
and takes it back when the Broker goes or drops the option (``forget``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyrocketmq.client import Admin

from .kubeapi import KubeClient, KubeError
from .model import BrokerModel
from .names import master_service_name
from .render.broker import master_endpoints
from .rocketmq import RocketMQRefused, RocketMQUnavailable, controller_silences, controller_views, new_admin
from .security import ClientSecurity

log = logging.getLogger("pyrocketmq.operator.master")

INTERVAL_S = 0.25
"""How often each followed controller is asked (one small request)."""
SUSPECT_MS = 1000
"""A master that has not reported to the controller for this long (its replicas report every 500 ms,
see render.broker) is replaced in its Service by its likely successor until it reports again or
another is elected (:func:`service_target`): new connections are refused at once, and a client
retries until the successor is elected, instead of waiting on a connection to a frozen host (the
controller declares it dead after 3 s, ``controllerBrokerTimeoutMs``). The move must be in every
node's data plane before a 4.x client's request caught by the freeze times out (3 s after it was
sent) and the client reconnects: kube-proxy applies an EndpointSlice change within its 1 s
``minSyncPeriod``, later on a loaded machine. A busy machine now and then delays a report past 1 s:
new connections are then refused for a moment; existing ones carry on."""


ELECTABLE_MS = 3000
"""A replica heard this recently can still be elected (the controller's default expiry,
``controllerBrokerTimeoutMs``): a successor the Service may lead to (reports may pause while the
controllers elect a leader)."""


@dataclass(slots=True)
class Followed:
    """One Broker's master Services: ``services`` maps each group to its Service as stored."""

    model: BrokerModel
    admin_addr: str
    security: ClientSecurity
    services: Mapping[str, Mapping[str, Any]]


@dataclass(slots=True)
class MasterFollower:
    kube: KubeClient
    field_manager: str
    timeout: float = 1.0
    """Of a request to the controller (it answers the metadata at once; a frozen one holds a round up)."""
    interval: float = INTERVAL_S
    followed: dict[str, Followed] = field(default_factory=dict)
    """By Broker (``namespace/name``)."""
    written: dict[tuple[str, str], str] = field(default_factory=dict)
    """(namespace, group) -> the master address its EndpointSlice holds."""
    _admins: dict[str, Admin] = field(default_factory=dict)
    _last_views: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """By controller addresses: the views of the last answer of a leading controller."""
    _stale: set[tuple[str, str]] = field(default_factory=set)
    """Slices to write whatever ``written`` says (drift repaired at each reconcile)."""

    def update(self, model: BrokerModel, admin_addr: str, security: ClientSecurity,
               stored: Mapping[tuple[str, str], Mapping[str, Any]]) -> None:
        """After a Broker's objects were applied (``stored``: by kind and name, as stored): follow its
        groups' master Services, or forget it when it has none."""
        key = f"{model.ref.namespace}/{model.ref.name}"
        services = {g: s for g in model.group_names if (s := stored.get(("Service", master_service_name(g))))}
        if not model.master_service or not services:
            self.forget(key)
            return
        self.follow(key, Followed(model, admin_addr, security, services))  # rewritten: drift repaired

    def follow(self, key: str, followed: Followed) -> None:
        """Follow (again) a Broker's groups; their EndpointSlices are written (again) next round."""
        self.followed[key] = followed
        self._stale.update((followed.model.ref.namespace, group) for group in followed.services)

    def forget(self, key: str) -> None:
        gone = self.followed.pop(key, None)
        if gone is not None:
            for group in gone.services:
                self.written.pop((gone.model.ref.namespace, group), None)
                self._stale.discard((gone.model.ref.namespace, group))
            if all(f.admin_addr != gone.admin_addr for f in self.followed.values()):
                self._last_views.pop(gone.admin_addr, None)  # a cluster made again there starts afresh

    def leading(self, namespace: str, groups: set[str], views: Mapping[str, Mapping[str, Any]]) -> set[str]:
        """Of ``groups``, those whose master Service leads to the master ``views`` name."""
        return {g for g in groups
                if (addr := str((views.get(g) or {}).get("masterAddr") or ""))
                and self.written.get((namespace, g)) == addr}  # fmt: skip

    async def run(self) -> None:
        """Rounds until cancelled; a round's failure is logged and the next round tries again."""
        try:
            while True:
                try:
                    await self.round()
                except (RocketMQUnavailable, RocketMQRefused, KubeError, OSError) as e:
                    log.info("following the masters: %s", e)
                await asyncio.sleep(self.interval)
        finally:
            for admin in self._admins.values():
                with contextlib.suppress(Exception):
                    await admin.shutdown()
            self._admins.clear()

    async def round(self) -> None:
        views_by_addr: dict[str, dict[str, dict[str, Any]]] = {}
        for followed in list(self.followed.values()):
            addr = followed.admin_addr
            if addr not in views_by_addr:
                views_by_addr[addr] = await self._views(followed)
            await self._point(followed, views_by_addr[addr])

    async def _admin(self, followed: Followed) -> Admin:
        admin = self._admins.get(followed.admin_addr)
        if admin is None:
            admin = new_admin(followed.admin_addr, self.timeout, followed.security)
            await admin.start()
            self._admins[followed.admin_addr] = admin
        return admin

    async def _views(self, followed: Followed) -> dict[str, dict[str, Any]]:
        """The leading controller's views; while none leads, the last ones with each replica's silence
        as the instances that answered heard it (see :func:`with_heard`)."""
        admin = await self._admin(followed)
        try:
            views = await controller_views(admin, followed.admin_addr)
        except (RocketMQUnavailable, RocketMQRefused):
            last = self._last_views.get(followed.admin_addr)
            heard = await controller_silences(admin, followed.admin_addr) if last else {}
            if not heard:
                self._admins.pop(followed.admin_addr, None)  # a fresh session next round
                with contextlib.suppress(Exception):
                    await admin.shutdown()
                raise
            return with_heard(last or {}, heard)
        self._last_views[followed.admin_addr] = views
        return views

    async def _point(self, followed: Followed, views: Mapping[str, Mapping[str, Any]]) -> None:
        model = followed.model
        for group, service in followed.services.items():
            view = views.get(group)
            if view is None:  # the controller does not know the group yet
                continue
            target = service_target(view)
            rid, addr = target if target else (0, "")
            key = (model.ref.namespace, group)
            if self.written.get(key) == addr and key not in self._stale:
                continue
            pod = f"{group}-{rid - 1}" if addr else ""  # replica id = ordinal + 1
            await self.kube.apply(master_endpoints(service, model, group, addr, pod), self.field_manager)
            self._stale.discard(key)
            if self.written.get(key, "") != addr:
                role = "the master" if rid == view.get("masterId") else "its successor (the master is silent)"
                log.info("%s/%s: the master Service leads to %s", model.ref.namespace, group,
                         f"{pod} ({addr}), {role}" if addr else "no pod (no replica to lead to)")
            self.written[key] = addr


def with_heard(views: Mapping[str, Mapping[str, Any]], heard: Mapping[str, Mapping[str, int]]
               ) -> dict[str, dict[str, Any]]:
    """``views`` (a leading controller's last answer) with each replica's ``silentMs`` as ``heard``
    says (a replica no instance heard: silent for ever): while the controllers elect a leader, a
    master frozen with the last one is still led away from.

    >>> with_heard({"g": {"masterId": 1, "replicas": {"1": {"silentMs": 5}, "2": {}}}}, {"g": {"2": 40}})
    {'g': {'masterId': 1, 'replicas': {'1': {'silentMs': 2147483647}, '2': {'silentMs': 40}}}}
    """
    out: dict[str, dict[str, Any]] = {}
    for group, view in views.items():
        known = heard.get(group) or {}
        replicas = {rid: {**r, "silentMs": int(known.get(rid, 2**31 - 1))}
                    for rid, r in (view.get("replicas") or {}).items()}  # fmt: skip
        out[group] = {**view, "replicas": replicas}
    return out


def service_target(view: Mapping[str, Any]) -> tuple[int, str] | None:
    """``(replica id, address)`` the master Service of the group in ``view`` (the controller's
    metadata) leads to: the elected master while it reports; while it has been silent for
    ``SUSPECT_MS``, or none is elected, the live member of the in-sync set the controller would elect
    (the highest offset, then the lowest id). That replica refuses sends (and closes the connection)
    until it is elected, and then takes them on the same address: every move is between two
    addresses, a change of kube-proxy's NAT rules alone. An empty Service instead has kube-proxy swap
    a REJECT rule (filter table) for a NAT rule (nat table), one table after the other, and a
    connection opened between the two goes unanswered for the client's whole connect timeout
    (measured: a third of such changes, 3 s each). None when no replica qualifies.

    >>> view = {"masterId": 1, "syncStateSet": [1, 2], "replicas": {
    ...     "1": {"addr": "a:1", "maxOffset": 9, "silentMs": 1200},
    ...     "2": {"addr": "b:1", "maxOffset": 8, "silentMs": 100}}}
    >>> service_target(view)
    (2, 'b:1')
    """
    replicas: Mapping[str, Mapping[str, Any]] = view.get("replicas") or {}
    master = str(view.get("masterId"))

    def live(rid: str, within_ms: int) -> bool:
        r = replicas.get(rid) or {}
        return bool(r.get("addr")) and int(r.get("silentMs") or 0) <= within_ms

    if live(master, SUSPECT_MS):
        return int(master), str(replicas[master]["addr"])
    in_sync = {str(x) for x in view.get("syncStateSet") or ()}
    candidates = [rid for rid in replicas if rid != master and rid in in_sync and live(rid, ELECTABLE_MS)]
    if not candidates:
        return None
    best = max(candidates, key=lambda rid: (int(replicas[rid].get("maxOffset") or 0), -int(rid)))
    return int(best), str(replicas[best]["addr"])
