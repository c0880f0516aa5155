"""Reconciling a ``User`` (see :mod:`.users`): load → resolve_cluster → credentials → apply_on_brokers
→ update_status, and removing it from the brokers behind its finalizer.

The password lives in a Secret (``spec.authentication.secretName``, by default the User's name, keys
``username`` and ``password``): one the user brought is used as it is; otherwise the operator
creates it with a random password, owned by the User. A ``tls`` User's Secret holds instead a client
certificate the operator issues from the namespace's clients CA and renews (the Broker must have
``spec.tls.managed``; :mod:`.managed_tls`). Every broker of the cluster the name servers
know (masters and slaves) and, when they check ACL 2.0 too, every name server is brought to the
User's spec, and users no User declares are removed.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping
from typing import Any, NamedTuple

from pyrocketmq.client import Admin

from .context import Context, ReconcileError, run_steps, write_status
from .deletion import delete_on_cluster
from .kubeapi import KubeError
from .managed_tls import ensure_client_certificate
from .model import GROUP_VERSION, BrokerModel, NameServerModel, SpecError
from .names import namesrv_addresses
from .reconcile import ClusterTarget, resolve_cluster
from .render.common import owner_labels, owner_reference
from .rocketmq import admin_session, registered_groups
from .status import Condition, merge_conditions, now_rfc3339
from .tls_spec import Tls
from .users import QUOTA_KEYS, UserModel, broker_changes, quota_change, undeclared_users

RBAC_HINT = "install the chart with rbac.manageSecrets=true (User resources need it)"


class UserReconcile:
    def __init__(self, body: Mapping[str, Any], ctx: Context) -> None:
        self.body, self.ctx = body, ctx
        self.previous: Mapping[str, Any] = body.get("status") or {}
        self.changed: list[str] = []
        self.pruned: list[str] = []

    async def run(self) -> None:
        await run_steps([self.load, self.resolve_cluster, self.credentials, self.apply_on_brokers,
                         self.update_status])

    async def load(self) -> None:
        self.model = UserModel.from_body(self.body)
        if not self.model.cluster_ref:
            raise SpecError("spec.clusterRef.name: name the Broker whose brokers this user signs in to")

    async def resolve_cluster(self) -> None:
        found = await auth_cluster(self.ctx, self.model.ref.namespace, self.model.cluster_ref)
        assert found.target is not None  # None only for a deletion
        self.target: ClusterTarget = found.target
        self.keep, self.name_servers, self.tls = found.keep, found.name_servers, found.tls

    async def credentials(self) -> None:
        """A TLS user's certificate, issued or renewed; else the Secret's password (a new Secret with a
        random one when there is none)."""
        ref, name = self.model.ref, self.model.secret_name
        self.password: str | None = None
        if self.model.by_certificate:
            if not self.tls.managed:
                raise ReconcileError("TlsNotManaged", f"Broker {self.model.cluster_ref!r} has no spec.tls."
                                     "managed: a tls User's certificate comes from the operator's clients CA")
            await ensure_client_certificate(self.ctx, ref, name, self.model.username, self.tls)
            return
        try:
            secret = await self.ctx.kube.get("v1", "Secret", ref.namespace, name)
            if secret is None:
                secret = await self._new_secret()
        except KubeError as e:
            if e.status == 403:
                raise ReconcileError("SecretForbidden", f"the operator may not read or create Secret "
                                     f"{name!r} in {ref.namespace}: {RBAC_HINT}") from None
            raise
        data = secret.get("data") or {}
        password = base64.b64decode(data.get("password") or "").decode()
        if not password:
            raise ReconcileError("SecretIncomplete", f"Secret {name!r} has no password: give one, or delete "
                                 "the Secret and the operator creates it with a random password")
        self.password = password

    async def _new_secret(self) -> dict[str, Any]:
        ref = self.model.ref
        b64 = {k: base64.b64encode(v.encode()).decode()
               for k, v in (("username", self.model.username), ("password", secrets.token_urlsafe(24)))}
        meta = {"name": self.model.secret_name, "namespace": ref.namespace,
                "labels": owner_labels(ref, "user"), "ownerReferences": [owner_reference(ref)]}
        stored = await self.ctx.kube.create({"apiVersion": "v1", "kind": "Secret", "metadata": meta,
                                             "type": "Opaque", "data": b64})
        if stored is None:  # created meanwhile by someone else: theirs
            raise ReconcileError("SecretConflict", f"Secret {self.model.secret_name} appeared meanwhile")
        self.ctx.event("Normal", "SecretCreated", f"Secret {self.model.secret_name} holds the password of "
                       f"user {self.model.username}")
        return stored

    async def apply_on_brokers(self) -> None:
        model, target = self.model, self.target
        declared = await declared_users(self.ctx, model.ref.namespace, model.cluster_ref)
        async with admin_session(target.admin_addr, self.ctx.settings.reconcile.admin_timeout,
                                 target.security) as admin:
            brokers = await broker_addrs(admin, target.cluster_name)
            self.addrs = brokers + self.name_servers
            for addr in self.addrs:
                quotas = addr in brokers  # the name servers serve no traffic to limit
                if await self.apply_on(admin, addr, quotas):
                    self.changed.append(addr)
                self.pruned += await prune(admin, addr, declared | {model.username}, self.keep, quotas)
        if self.changed:
            self.ctx.event("Normal", "UserApplied", f"user {model.username} and its ACL on "
                           f"{', '.join(self.changed)}")
        if self.pruned:
            self.ctx.event("Normal", "UsersRemoved", "users no User declares removed: "
                           + ", ".join(sorted(set(self.pruned))))

    async def apply_on(self, admin: Admin, addr: str, quotas: bool) -> bool:
        model = self.model
        quota = quota_change(model, await admin.get_user_quota(model.username, broker_addr=addr)) \
            if quotas else None
        if quota == "set":  # every limit, 0 for those not given: one not given any more goes
            limits = {k: float(v) for k, v in model.quotas}
            produced, consumed, requests = (limits.get(k, 0.0) for k in QUOTA_KEYS)
            await admin.set_user_quota(model.username, produced_bytes_per_second=produced,
                                       consumed_bytes_per_second=consumed, requests_per_second=requests,
                                       broker_addr=addr)
        elif quota == "delete":
            await admin.delete_user_quota(model.username, broker_addr=addr)
        have_user = await admin.get_user(model.username, broker_addr=addr)
        # a server answers no ACL of a user it does not know (Apache: "The subject is not exist.")
        have_acl = await admin.get_acl(model.subject, broker_addr=addr) if have_user is not None else None
        change = broker_changes(model, self.password, have_user, have_acl)
        if change.user == "create":  # a TLS user's password: random, handed to nobody
            await admin.create_user(model.username, self.password or secrets.token_urlsafe(24),
                                    model.user_type, broker_addr=addr)
        elif change.user == "update":
            await admin.update_user(model.username, self.password, model.user_type, "enable",
                                    broker_addr=addr)
        if change.put:
            await admin.put_acl(model.acl_info(change.put), broker_addr=addr, update=not change.new_acl)
        for resource in change.stale:
            await admin.delete_acl(model.subject, resource, broker_addr=addr)
        return not change.empty or quota is not None

    async def update_status(self) -> None:
        ref, model = self.model.ref, self.model
        conds = [Condition("Ready", bool(self.addrs), "UserApplied" if self.addrs else "NoBrokers",
                           f"on {len(self.addrs)} brokers of cluster {self.target.cluster_name}"),
                 Condition("Reconciling", False, "Reconciled", "")]
        await write_status(self.ctx, self.body, {
            "observedGeneration": ref.generation,
            "username": model.username,
            "secretName": model.secret_name,
            "clusterName": self.target.cluster_name,
            "brokers": self.addrs,
            "conditions": merge_conditions(self.previous.get("conditions"), conds, ref.generation,
                                           now_rfc3339()),
        })


class AuthCluster(NamedTuple):
    target: ClusterTarget | None
    keep: set[str]
    """Users kept whatever the User resources say (the cluster's super user)."""
    name_servers: list[str]
    """Its name servers that check ACL 2.0 too."""
    tls: Tls
    """The Broker's spec.tls (a managed one issues TLS Users' certificates)."""


async def auth_cluster(ctx: Context, namespace: str, broker: str, *, for_delete: bool = False) -> AuthCluster:
    """The Broker cluster of a User (it must have spec.auth)."""
    target = await resolve_cluster(ctx, namespace, broker, for_delete=for_delete)
    if target is None:
        return AuthCluster(None, set(), [], Tls())
    body = await ctx.kube.get(GROUP_VERSION, "Broker", namespace, broker) or {}
    model = BrokerModel.from_body(body)
    if not model.auth.enabled:
        raise ReconcileError("AuthNotEnabled", f"Broker {broker!r} has no spec.auth: turn ACL 2.0 on there "
                             "(spec.auth.secretName) for its brokers to know users")
    return AuthCluster(target, {target.security.access_key},
                       await auth_name_servers(ctx, namespace, model.namesrv_name), model.tls)


async def auth_name_servers(ctx: Context, namespace: str, name: str | None) -> list[str]:
    """The addresses of NameServer ``name`` (of this namespace) when it checks ACL 2.0 (spec.auth):
    they know the users too."""
    ns_body = await ctx.kube.get(GROUP_VERSION, "NameServer", namespace, name) if name else None
    if ns_body is None:
        return []
    model = NameServerModel.from_body(ns_body)
    if not model.auth.enabled:
        return []
    return namesrv_addresses(model.ref.name, namespace, model.replicas, ctx.settings.render.cluster_domain)


async def declared_users(ctx: Context, namespace: str, broker: str) -> set[str]:
    """The usernames the User resources of ``broker`` declare (those being deleted excepted)."""
    found = set()
    for body in await ctx.kube.list(GROUP_VERSION, "User", namespace):
        if (body.get("metadata") or {}).get("deletionTimestamp"):
            continue
        try:
            model = UserModel.from_body(body)
        except SpecError:
            continue
        if model.cluster_ref == broker:
            found.add(model.username)
    return found


async def broker_addrs(admin: Admin, cluster: str) -> list[str]:
    """Every broker (master and slave) of ``cluster`` the name servers know."""
    groups = await registered_groups(admin, cluster)
    return [addr for _, ids in sorted(groups.items()) for _, addr in sorted(ids.items())]


async def prune(admin: Admin, addr: str, declared: set[str], keep: set[str],
                quotas: bool = False) -> list[str]:
    """Remove from the broker at ``addr`` the users (and ACLs, and with ``quotas`` their quotas) not
    declared; returns their names."""
    listed = await admin.list_users(broker_addr=addr)
    # ACLs of users no longer there too (a broker drops a user's ACL with the user)
    listed += [{"username": s.partition(":")[2]} for a in await admin.list_acls(broker_addr=addr)
               if (s := str(a.get("subject") or "")).startswith("User:")]
    if quotas:
        listed += [{"username": q.get("username")} for q in await admin.list_user_quotas(broker_addr=addr)]
    gone = undeclared_users(listed, declared, keep)
    for name in gone:
        await admin.delete_user(name, broker_addr=addr)
        if quotas:
            await admin.delete_user_quota(name, broker_addr=addr)
    return gone


async def delete_user_from_brokers(body: Mapping[str, Any], ctx: Context) -> None:
    """Behind the finalizer: the user and its ACL leave every broker of the cluster."""
    try:
        model = UserModel.from_body(body)
    except SpecError:
        return
    try:
        target, keep, name_servers, _ = await auth_cluster(ctx, model.ref.namespace, model.cluster_ref,
                                                           for_delete=True)
    except ReconcileError:
        return  # the Broker has no ACL 2.0 (any more): no broker holds the user
    if target is None or model.username in keep:
        return

    async def remove(admin: Admin) -> None:
        brokers = await broker_addrs(admin, target.cluster_name)
        for addr in brokers + name_servers:
            await admin.delete_user(model.username, broker_addr=addr)  # and its ACL (if any)
            if addr in brokers:
                await admin.delete_user_quota(model.username, broker_addr=addr)

    if await delete_on_cluster(ctx, target, f"user {model.username}", remove):
        ctx.event("Normal", "UserDeleted",
                  f"user {model.username} deleted from cluster {target.cluster_name}")  # fmt: skip


async def reconcile_user(body: Mapping[str, Any], ctx: Context) -> None:
    await UserReconcile(body, ctx).run()
