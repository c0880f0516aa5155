"""Deleting a Topic's, ConsumerGroup's or User's RocketMQ side, behind the resource's finalizer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pyrocketmq.client import Admin

from .context import Context, ReconcileError
from .model import ConsumerGroupModel, SpecError, TopicModel
from .reconcile import ClusterTarget, resolve_cluster
from .rocketmq import RocketMQRefused, RocketMQUnavailable, admin_session, delete_group, delete_topic


async def delete_on_cluster(ctx: Context, target: ClusterTarget, what: str,
                            action: Callable[[Admin], Awaitable[object]]) -> bool:
    """``action`` with an admin session on the cluster: False when no broker is registered there
    (nothing to delete), a ReconcileError naming ``what`` when it cannot be done."""
    try:
        async with admin_session(target.admin_addr, ctx.settings.reconcile.admin_timeout,
                                 target.security) as admin:  # fmt: skip
            await action(admin)
    except RocketMQUnavailable as e:
        if e.reason == "ClusterNotReady":
            ctx.log.info("cluster %s has no broker registered: nothing to delete", target.cluster_name)
            return False
        raise ReconcileError(e.reason, f"cannot delete {what}: {e}") from None
    except RocketMQRefused as e:
        raise ReconcileError("BrokerRefused", f"cannot delete {what}: {e}") from None
    return True


async def delete_topic_from_brokers(body: Mapping[str, Any], ctx: Context) -> None:
    try:
        model = TopicModel.from_body(body)
    except SpecError:
        return  # never created
    target = await resolve_cluster(ctx, model.ref.namespace, model.cluster_ref, for_delete=True)
    if target is None:
        ctx.log.info("Broker %s is gone or never served: nothing to delete for topic %s", model.cluster_ref,
                     model.topic_name)
        return
    topic = model.topic_name
    if await delete_on_cluster(ctx, target, f"topic {topic}",
                               lambda admin: delete_topic(admin, topic, target.cluster_name)):  # fmt: skip
        ctx.event("Normal", "TopicDeleted", f"topic {topic} deleted from cluster {target.cluster_name}")


async def delete_group_from_brokers(body: Mapping[str, Any], ctx: Context) -> None:
    try:
        model = ConsumerGroupModel.from_body(body)
    except SpecError:
        return
    target = await resolve_cluster(ctx, model.ref.namespace, model.cluster_ref, for_delete=True)
    if target is None:
        return
    group = model.group_name
    if await delete_on_cluster(ctx, target, f"group {group}",
                               lambda admin: delete_group(admin, group, target.cluster_name)):  # fmt: skip
        ctx.event("Normal", "GroupDeleted",
                  f"consumer group {group} deleted from cluster {target.cluster_name}")  # fmt: skip
