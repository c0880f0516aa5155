"""spec.failover.masterService: each group's ``<group>-master`` Service follows the elected master
within a fraction of a second, not a resync later.

The master registers that Service's address with the name servers (``masterServiceAddr``), so a
client's route never changes across a failover: what changes is where the Service leads. The
follower asks each followed cluster's controller for its view every ``interval`` seconds and, when a
group's master changed, writes the Service's EndpointSlice (:func:`.render.broker.master_endpoints`):
the new master at its election (a send that reaches it before it takes writes is refused at once and
retried by the client), no endpoint while none is elected or the master is silent (``SUSPECT_MS``):
connections are then refused, not left hanging.
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
from .nodeloss import master_pods
from .render.broker import master_endpoints
from .rocketmq import RocketMQRefused, RocketMQUnavailable, controller_views, new_admin
from .security import ClientSecurity

log = logging.getLogger("pyrocketmq.operator.master")

INTERVAL_S = 0.25
"""How often each followed controller is asked (one small request)."""
SUSPECT_MS = 1500
"""A master that has not reported to the controller for this long (three reports missed: its
replicas report every 500 ms, see render.broker) is left out of its Service until it reports again
or another is elected: new connections are refused at once, and a client retries until the Service
leads to the new master, instead of waiting on a connection to a frozen host (the controller
declares it dead after 3 s, ``controllerBrokerTimeoutMs``). Shorter silences happen on a busy
machine (measured: over 1 s, now and then, with two producers at full speed on 2 cores)."""


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

    async def _views(self, followed: Followed) -> dict[str, dict[str, Any]]:
        admin = self._admins.get(followed.admin_addr)
        if admin is None:
            admin = new_admin(followed.admin_addr, self.timeout, followed.security)
            await admin.start()
            self._admins[followed.admin_addr] = admin
        try:
            return await controller_views(admin, followed.admin_addr)
        except RocketMQUnavailable:
            del self._admins[followed.admin_addr]  # a fresh session next round
            with contextlib.suppress(Exception):
                await admin.shutdown()
            raise

    async def _point(self, followed: Followed, views: Mapping[str, Mapping[str, Any]]) -> None:
        model = followed.model
        pods = master_pods(followed.services, True, views)
        for group, service in followed.services.items():
            view = views.get(group)
            if view is None:  # the controller does not know the group yet
                continue
            addr = str(view.get("masterAddr") or "") if pods[group] and not _suspect(view) else ""
            key = (model.ref.namespace, group)
            if self.written.get(key) == addr and key not in self._stale:
                continue
            slice_ = master_endpoints(service, model, group, addr, pods[group])
            await self.kube.apply(slice_, self.field_manager)
            self._stale.discard(key)
            if self.written.get(key, "") != addr:
                log.info("%s/%s: the master Service leads to %s", model.ref.namespace, group,
                         f"{pods[group]} ({addr})" if addr else "no pod (no master, or a silent one)")
            self.written[key] = addr


def _suspect(view: Mapping[str, Any]) -> bool:
    """The elected master has been silent to the controller for ``SUSPECT_MS`` (see there)."""
    master = (view.get("replicas") or {}).get(str(view.get("masterId"))) or {}
    return int(master.get("silentMs") or 0) > SUSPECT_MS
