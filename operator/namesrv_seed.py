"""A name server pod that has just started knows no ACL 2.0 user (they live beside its KV config in
the pod): until it is given them it refuses their routes, so clients that reach it through the
Service could not find where their topics moved. The operator seeds it as soon as it runs, before it
is Ready: every User of the Brokers using that NameServer goes onto the pod, then the KV entry
``pyrocketmq``/``authSeeded`` that ``authSeedWaitMs`` waits for (:mod:`pyrocketmq.namesrv.app`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .context import Context, ReconcileError
from .model import GROUP_VERSION, BrokerModel, SpecError
from .reconcile import resolve_cluster
from .rocketmq import RocketMQRefused, RocketMQUnavailable, admin_session
from .user_reconcile import UserReconcile

SEEDED = ("pyrocketmq", "authSeeded")


def starting(pod: Mapping[str, Any]) -> bool:
    """Running with an address and not Ready yet: the moment to seed it."""
    status = pod.get("status") or {}
    conditions = status.get("conditions") or ()
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return bool(status.get("podIP")) and status.get("phase") == "Running" and not ready


async def seed_name_server(ctx: Context, namespace: str, namesrv: str, addr: str) -> int:
    """Every User of the Brokers with spec.auth that use NameServer ``namesrv`` onto the name server at
    ``addr``, then its seeded mark; how many users (ReconcileError when it cannot be reached)."""
    brokers = []
    for body in await ctx.kube.list(GROUP_VERSION, "Broker", namespace):
        try:
            model = BrokerModel.from_body(body)
        except SpecError:
            continue
        if model.auth.enabled and model.namesrv_name == namesrv:
            brokers.append(model.ref.name)
    if not brokers:
        return 0
    seeded, security = 0, None
    for body in await ctx.kube.list(GROUP_VERSION, "User", namespace):
        if (body.get("metadata") or {}).get("deletionTimestamp"):
            continue
        user = UserReconcile(body, ctx)
        try:
            await user.load()
            if user.model.cluster_ref not in brokers:
                continue
            await user.resolve_cluster()
            await user.credentials()
        except (SpecError, ReconcileError) as e:
            ctx.log.info("seeding %s: user %s skipped: %s", addr, body["metadata"].get("name"), e)
            continue
        security = user.target.security
        async with admin_session(addr, ctx.settings.reconcile.admin_timeout, security) as admin:
            await user.apply_on(admin, addr, quotas=False)
        seeded += 1
    if security is None:  # no User: the first Broker's account marks it
        target = await resolve_cluster(ctx, namespace, brokers[0])
        security = target.security if target is not None else None
    try:
        async with admin_session(addr, ctx.settings.reconcile.admin_timeout, security) as admin:
            await admin.put_kv_config(*SEEDED, "true")
    except (RocketMQRefused, RocketMQUnavailable) as e:
        raise ReconcileError("SeedFailed", f"cannot mark name server {addr} seeded: {e}") from None
    return seeded
