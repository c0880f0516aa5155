"""Deleting a Topic's or ConsumerGroup's RocketMQ side, behind the resource's finalizer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .context import Context, ReconcileError
from .model import ConsumerGroupModel, SpecError, TopicModel
from .reconcile import resolve_cluster
from .rocketmq import RocketMQRefused, RocketMQUnavailable, admin_session, delete_group, delete_topic


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
    try:
        async with admin_session(
            target.admin_addr, ctx.settings.reconcile.admin_timeout, target.security
        ) as admin:
            await delete_topic(admin, model.topic_name, target.cluster_name)
    except RocketMQUnavailable as e:
        if e.reason == "ClusterNotReady":
            ctx.log.info("cluster %s has no broker registered: nothing to delete", target.cluster_name)
            return
        raise ReconcileError(e.reason, f"cannot delete topic {model.topic_name}: {e}") from None
    except RocketMQRefused as e:
        raise ReconcileError("BrokerRefused", f"cannot delete topic {model.topic_name}: {e}") from None
    ctx.event(
        "Normal", "TopicDeleted", f"topic {model.topic_name} deleted from cluster {target.cluster_name}"
    )


async def delete_group_from_brokers(body: Mapping[str, Any], ctx: Context) -> None:
    try:
        model = ConsumerGroupModel.from_body(body)
    except SpecError:
        return
    target = await resolve_cluster(ctx, model.ref.namespace, model.cluster_ref, for_delete=True)
    if target is None:
        return
    try:
        async with admin_session(
            target.admin_addr, ctx.settings.reconcile.admin_timeout, target.security
        ) as admin:
            await delete_group(admin, model.group_name, target.cluster_name)
    except RocketMQUnavailable as e:
        if e.reason == "ClusterNotReady":
            return
        raise ReconcileError(e.reason, f"cannot delete group {model.group_name}: {e}") from None
    except RocketMQRefused as e:
        raise ReconcileError("BrokerRefused", f"cannot delete group {model.group_name}: {e}") from None
    ctx.event(
        "Normal",
        "GroupDeleted",
        f"consumer group {model.group_name} deleted from cluster {target.cluster_name}",
    )
