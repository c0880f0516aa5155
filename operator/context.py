"""What every reconcile shares: the context it runs in, the error that stops it, its steps'
runner, status writing, and the lookups several resources need (nodes, a Broker's name servers
and Secrets)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .apply import ApplyResult
from .kubeapi import KubeClient, KubeError
from .master_follower import MasterFollower
from .model import GROUP_VERSION, BrokerModel, NameServerModel, ObjectRef, SpecError
from .names import namesrv_addresses
from .rocketmq import RocketMQRefused, RocketMQUnavailable
from .security import ClientSecurity, SecretError, read_broker_secrets
from .settings import OperatorSettings
from .status import condition_of, failure_conditions, merge_conditions, now_rfc3339

EventFn = Callable[[str, str, str], None]
"""``event(type, reason, message)`` with type ``Normal`` or ``Warning``."""


class ReconcileError(Exception):
    """A reconcile cannot finish now. ``reason`` goes to the Ready condition; ``retry`` says whether
    waiting may help (False: only a spec change will)."""

    def __init__(self, reason: str, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.reason, self.message, self.retry = reason, message, retry
        self.step: str | None = None


@dataclass(slots=True)
class Context:
    kube: KubeClient
    settings: OperatorSettings
    event: EventFn
    log: logging.Logger | logging.LoggerAdapter[Any]
    follower: MasterFollower | None = None
    """spec.failover.masterService: what points each group's master Service at its master."""


async def run_steps(steps: list[Callable[[], Awaitable[None]]]) -> None:
    """Run the steps in order; a failure is tagged with the step's name."""
    for step in steps:
        try:
            await step()
        except ReconcileError as e:
            e.step = e.step or step.__name__
            raise
        except SpecError as e:
            err = ReconcileError("InvalidSpec", str(e), retry=False)
            err.step = step.__name__
            raise err from None
        except RocketMQUnavailable as e:
            err = ReconcileError(e.reason, str(e))
            err.step = step.__name__
            raise err from None
        except RocketMQRefused as e:
            err = ReconcileError("BrokerRefused", str(e))
            err.step = step.__name__
            raise err from None


async def write_status(ctx: Context, body: Mapping[str, Any], status: dict[str, Any]) -> None:
    ref = ObjectRef.from_body(body)
    await ctx.kube.patch_status(GROUP_VERSION, ref.kind, ref.namespace, ref.name, status)


async def report_failure(
    ctx: Context, body: Mapping[str, Any], reason: str, message: str, step: str | None
) -> None:
    """Ready=False with the reason, on the status; a Warning Event when the reason is new."""
    ref = ObjectRef.from_body(body)
    previous = body.get("status") or {}
    before = condition_of(previous, "Ready")
    conditions = merge_conditions(previous.get("conditions"), failure_conditions(reason, message, step),
                                  ref.generation, now_rfc3339())
    try:
        await write_status(ctx, body, {"observedGeneration": ref.generation, "conditions": conditions})
    except KubeError as e:
        ctx.log.warning("cannot write the status of %s/%s: %s", ref.namespace, ref.name, e)
    if before is None or before.get("reason") != reason or before.get("status") != "False":
        ctx.event("Warning", reason, message[:1000])


async def broker_name_servers(ctx: Context, model: BrokerModel) -> tuple[list[str], bool]:
    """The name servers of a Broker by stable DNS names (or as given in ``nameServer.addresses``),
    and whether they run a controller (unknown, so False, for addresses given)."""
    if model.namesrv_addresses:
        return list(model.namesrv_addresses), False
    assert model.namesrv_name is not None
    ns = await ctx.kube.get(GROUP_VERSION, "NameServer", model.ref.namespace, model.namesrv_name)
    if ns is None:
        raise ReconcileError(
            "NameServerNotFound",
            f"NameServer {model.namesrv_name!r} not found in namespace {model.ref.namespace}",
        )
    names = NameServerModel.from_body(ns)
    addrs = namesrv_addresses(
        model.namesrv_name, model.ref.namespace, names.replicas, ctx.settings.render.cluster_domain
    )
    return addrs, names.controller


def repair_events(ctx: Context, result: ApplyResult, first_time: bool) -> None:
    for _, name in result.recreated:
        ctx.event(
            "Normal",
            "StatefulSetReplaced",
            f"StatefulSet {name} recreated for a change it cannot take in place "
            "(its claim templates); its pods were kept and are replaced one by one",
        )
    if first_time or not result.created:
        return
    shown = ", ".join(f"{kind} {name}" for kind, name in result.created)
    ctx.event("Normal", "Recreated", f"recreated missing objects: {shown}")


async def cluster_nodes(kube: KubeClient) -> list[dict[str, Any]] | None:
    """Every Node of the cluster, or None when the operator may not list them (RBAC)."""
    try:
        return await kube.list("v1", "Node", "")
    except KubeError as e:
        if e.status in (401, 403):
            return None
        raise


async def broker_secrets(ctx: Context, model: BrokerModel) -> tuple[BrokerModel, ClientSecurity]:
    """``model`` with the hash of its Secrets, and how to reach its brokers (see :mod:`.security`)."""
    try:
        return await read_broker_secrets(ctx.kube.get, model)
    except SecretError as e:
        raise ReconcileError(e.reason, str(e)) from None
