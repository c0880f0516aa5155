"""What the operator does on the RocketMQ side, through :class:`pyrocketmq.client.Admin`.

Topics and consumer groups are created/updated on every master of a cluster (masters of groups that
are being drained excepted, so a resync never re-opens a topic for writes there), deleted from every
master, and observed (routes, members, lag). Draining a group for a scale-down also lives here:
facts about its master, and making its topics read-only.

Requests the Admin has no method for (all topic configs 21, all group configs 201, delete group 207)
go through its client instance; every failure surfaces as :class:`RocketMQUnavailable` (cannot reach
or the cluster is not there yet: retry later) or :class:`RocketMQRefused` (a broker said no).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from pyrocketmq.client import (
    Admin,
    ClientSettings,
    MQBrokerError,
    MQClientError,
    MQConnectionError,
    MQTimeoutError,
)
from pyrocketmq.client.controller import controller_groups, controller_heard, elect_master
from pyrocketmq.remoting.body import SubscriptionGroupConfig
from pyrocketmq.remoting.names import (
    DLQ_GROUP_TOPIC_PREFIX,
    ORDER_TOPIC_CONFIG_NAMESPACE,
    PERM_WRITE,
    RETRY_GROUP_TOPIC_PREFIX,
)

from .model import BrokerModel, ConsumerGroupModel, OffsetReset, TopicModel
from .plan import DrainFacts, is_user_group, is_user_topic
from .security import ClientSecurity


class RocketMQUnavailable(Exception):
    """The name servers or a broker cannot be reached, or the cluster has no master yet."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class RocketMQRefused(Exception):
    """A broker or name server answered with an error."""


def new_admin(namesrv_addr: str, timeout: float, security: ClientSecurity | None = None) -> Admin:
    """An :class:`Admin` of the operator on ``namesrv_addr``, not started."""
    sec = security or ClientSecurity()
    settings = ClientSettings(
        namesrv_addr=namesrv_addr,
        request_timeout=timeout,
        connect_timeout=min(timeout, 3.0),
        instance_name="pyrocketmq-operator",
        tls=sec.tls,
        access_key=sec.access_key,
        secret_key=sec.secret_key,
    )
    return Admin(namesrv_addr, settings)


@contextlib.asynccontextmanager
async def admin_session(namesrv_addr: str, timeout: float,
                        security: ClientSecurity | None = None) -> AsyncIterator[Admin]:
    """An :class:`Admin` on ``namesrv_addr`` whose errors become the two exceptions above; ``security``:
    TLS and the ACL account of a Broker with spec.tls / spec.acl."""
    admin = new_admin(namesrv_addr, timeout, security)
    try:
        await admin.start()
        yield admin
    except (MQConnectionError, MQTimeoutError, OSError, TimeoutError) as e:
        raise RocketMQUnavailable("Unreachable", f"name servers {namesrv_addr}: {e}") from None
    except MQBrokerError as e:
        raise RocketMQRefused(str(e)) from None
    except MQClientError as e:
        raise RocketMQUnavailable("ClusterNotReady", str(e)) from None
    finally:
        with contextlib.suppress(Exception):
            await admin.shutdown()


async def master_addrs(admin: Admin, cluster: str, exclude: Collection[str] = ()) -> dict[str, str]:
    """brokerName → master address of the cluster's groups (``exclude``: broker names to skip)."""
    info = await admin.cluster_info()
    names = info.cluster_addr_table.get(cluster)
    if not names:
        raise RocketMQUnavailable(
            "ClusterNotReady", f"no broker of cluster {cluster!r} is registered with the name servers yet"
        )
    out: dict[str, str] = {}
    for name in sorted(names):
        if name in exclude:
            continue
        data = info.broker_addr_table.get(name)
        addrs = {int(k): v for k, v in ((data.broker_addrs if data else None) or {}).items()}
        if 0 in addrs:
            out[name] = addrs[0]
    if not out:
        raise RocketMQUnavailable("ClusterNotReady", f"cluster {cluster!r} has no master registered")
    return out


async def registered_groups(admin: Admin, cluster: str) -> dict[str, dict[int, str]]:
    """brokerName → {brokerId: address} of every group of ``cluster`` the name servers know."""
    info = await admin.cluster_info()
    out: dict[str, dict[int, str]] = {}
    for name in info.cluster_addr_table.get(cluster) or ():
        data = info.broker_addr_table.get(name)
        out[name] = {int(k): v for k, v in ((data.broker_addrs if data else None) or {}).items()}
    return out



# -- topics -------------------------------------------------------------------------------------


async def current_layout(admin: Admin, topic: str) -> dict[str, tuple[int, int, int]]:
    """brokerName → (read, write, perm) of the topic as its route shows it ({} when it has none)."""
    try:
        route = await admin.topic_route(topic)
    except MQBrokerError:
        return {}
    return {q.broker_name: (q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas}


async def apply_topic(admin: Admin, model: TopicModel, cluster: str, exclude: Collection[str] = (),
                      applied_type: str | None = None) -> list[str]:
    """Create or update the topic on every master (but ``exclude``) whose copy differs from the spec;
    returns the broker names that hold it. A resync that finds nothing to change sends nothing (an
    update makes the broker persist its table and re-register). ``applied_type``: the message type
    last applied (the status says); another one in the spec updates every master."""
    masters = await master_addrs(admin, cluster, exclude)
    wanted = (model.read_queue_nums, model.write_queue_nums, model.perm)
    layout = await current_layout(admin, model.topic_name)
    retype = applied_type != model.message_type
    stale = {
        name: addr for name, addr in masters.items() if model.order or retype or layout.get(name) != wanted
    }
    await asyncio.gather(
        *(
            admin.create_topic(
                model.topic_name,
                broker_addr=addr,
                read_queues=model.read_queue_nums,
                write_queues=model.write_queue_nums,
                perm=model.perm,
                order=model.order,
                message_type=model.message_type,
            )
            for addr in stale.values()
        )
    )
    if model.order:
        order_conf = ";".join(f"{name}:{model.write_queue_nums}" for name in sorted(masters))
        await admin.put_kv_config(ORDER_TOPIC_CONFIG_NAMESPACE, model.topic_name, order_conf)
    return sorted(masters)


async def topic_brokers(admin: Admin, topic: str) -> list[dict[str, Any]]:
    """Where the topic lives, from its route: one entry per broker name."""
    route = await admin.topic_route(topic)
    addrs = {
        bd.broker_name: {int(k): v for k, v in (bd.broker_addrs or {}).items()} for bd in route.broker_datas
    }
    out = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        out.append(
            {
                "brokerName": qd.broker_name,
                "address": addrs.get(qd.broker_name, {}).get(0, ""),
                "readQueueNums": qd.read_queue_nums,
                "writeQueueNums": qd.write_queue_nums,
                "perm": qd.perm,
            }
        )
    return out


async def delete_topic(admin: Admin, topic: str, cluster: str) -> None:
    await admin.delete_topic(topic, cluster)


# -- consumer groups ----------------------------------------------------------------------------


def group_config(model: ConsumerGroupModel) -> SubscriptionGroupConfig:
    return SubscriptionGroupConfig(
        group_name=model.group_name,
        consume_enable=model.consume_enable,
        consume_from_min_enable=model.consume_from_min_enable,
        consume_broadcast_enable=model.broadcast,
        retry_queue_nums=model.retry_queue_nums,
        retry_max_times=model.retry_max_times,
        broker_id=0,
        which_broker_when_consume_slowly=model.slow_consumer_broker_id,
        notify_consumer_ids_changed_enable=True,
        consume_message_orderly=model.orderly,
    )


async def apply_group(
    admin: Admin, model: ConsumerGroupModel, cluster: str, exclude: Collection[str] = ()
) -> list[str]:
    """Create or update the group on every master (but ``exclude``) whose config differs from the spec."""
    masters = await master_addrs(admin, cluster, exclude)
    wanted = group_config(model)
    current = await asyncio.gather(*(group_configs(admin, addr) for addr in masters.values()))
    stale = [addr for addr, table in zip(masters.values(), current, strict=True)
             if table.get(model.group_name) != wanted]
    await asyncio.gather(
        *(
            admin.create_subscription_group(wanted, broker_addr=addr)
            for addr in stale
        )
    )
    return sorted(masters)


async def reset_group_offsets(
    admin: Admin, group: str, reset: OffsetReset | None, last: Mapping[str, Any] | None, now: str
) -> tuple[Mapping[str, Any] | None, bool]:
    """Do ``spec.resetOffset`` (mqadmin ``resetOffsetByTime``, forced) unless ``last`` (the status's
    ``offsetReset``) has its id: the ``status.offsetReset`` to keep, and whether a reset ran."""
    if reset is None or (last or {}).get("id") == reset.id:
        return last, False
    try:
        table = await admin.reset_offset_by_time(group, reset.topic, reset.timestamp_ms, force=True)
    except MQBrokerError as e:
        raise RocketMQRefused(f"reset of group {group} on topic {reset.topic} to {reset.to}: {e}") from None
    queues = [
        {"brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": off} for mq, off in table.items()
    ]
    return {
        "id": reset.id,
        "topic": reset.topic,
        "to": reset.to,
        "timestamp": reset.timestamp_ms,
        "time": now,
        "queues": queues,
    }, True


async def group_configs(admin: Admin, addr: str) -> dict[str, SubscriptionGroupConfig]:
    return await admin.broker_subscription_groups(addr)


async def delete_group(admin: Admin, group: str, cluster: str) -> None:
    """Delete the group's config from every master, then its retry and DLQ topics (as mqadmin does)."""
    masters = await master_addrs(admin, cluster)
    await asyncio.gather(
        *(admin.delete_subscription_group(group, addr) for addr in masters.values())
    )
    for topic in (RETRY_GROUP_TOPIC_PREFIX + group, DLQ_GROUP_TOPIC_PREFIX + group):
        with contextlib.suppress(MQBrokerError):
            await admin.delete_topic(topic, cluster)


@dataclass(frozen=True, slots=True)
class GroupStats:
    members: tuple[str, ...]
    lag_by_topic: dict[str, int]
    queues: int = 0
    """Queues of the group's topics (retry topics left out): the most members that get work."""

    @property
    def total_lag(self) -> int:
        return sum(self.lag_by_topic.values())


async def group_stats(admin: Admin, group: str) -> GroupStats:
    members = tuple(await admin.consumer_ids(group))
    lag: dict[str, int] = {}
    try:
        table, _ = await admin.consume_stats(group)
    except MQBrokerError:  # the group has no offsets anywhere yet
        table = {}
    for mq, wrapper in table.items():
        lag[mq.topic] = lag.get(mq.topic, 0) + max(
            0, int(wrapper.broker_offset) - max(0, int(wrapper.consumer_offset))
        )
    queues = sum(1 for mq in table if not mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX))
    return GroupStats(members, dict(sorted(lag.items())), queues)


# -- draining a group for a scale-down ------------------------------------------------------------


async def drain_facts(admin: Admin, cluster: str, group: str, served_traffic: bool) -> DrainFacts:
    """What :func:`~.plan.scale_down_decision` needs to know about broker group ``group``."""
    try:
        registered = await registered_groups(admin, cluster)
    except (MQConnectionError, MQTimeoutError, MQClientError, OSError) as e:
        return DrainFacts(group, served_traffic=served_traffic, error=f"name servers: {e}")
    addr = registered.get(group, {}).get(0)
    if addr is None:
        return DrainFacts(group, served_traffic=served_traffic, error="its master is not registered")
    try:
        topics = await user_topics(admin, addr, cluster, frozenset(registered))
        writable = sorted(name for name, perm in topics.items() if perm & PERM_WRITE)
        lag: list[tuple[str, int]] = []
        read: set[str] = set()  # topics some group has offsets for on this master
        for name in sorted(await group_configs(admin, addr)):
            if not is_user_group(name):
                continue
            stats = await admin.broker_consume_stats(addr, name)
            read.update(mq.topic for mq in stats.offset_table)
            behind = sum(
                max(0, w.broker_offset - max(0, w.consumer_offset)) for w in stats.offset_table.values()
            )
            if behind > 0:
                lag.append((name, behind))
        unread: list[tuple[str, int]] = []
        for topic in sorted(set(topics) - read):
            table = (await admin.broker_topic_stats(addr, topic)).offset_table
            stored = sum(max(0, o.max_offset - o.min_offset) for o in table.values())
            if stored > 0:
                unread.append((topic, stored))
    except (MQConnectionError, MQTimeoutError, OSError) as e:
        return DrainFacts(group, served_traffic=True, registered=True, error=str(e))
    return DrainFacts(group, served_traffic=True, registered=True, reachable=True,
                      writable_topics=tuple(writable), lag=tuple(lag), unread_topics=tuple(unread))


async def user_topics(admin: Admin, addr: str, cluster: str, broker_names: frozenset[str]) -> dict[str, int]:
    """The user topics on the broker at ``addr`` with their permissions."""
    table = await admin.broker_topic_configs(addr)
    return {name: cfg.perm for name, cfg in table.items() if is_user_topic(name, cluster, broker_names)}


async def stop_writes(admin: Admin, cluster: str, group: str) -> list[str]:
    """Make every user topic on the group's master read-only (producers then route elsewhere)."""
    registered = await registered_groups(admin, cluster)
    addr = registered.get(group, {}).get(0)
    if addr is None:
        return []
    table = await admin.broker_topic_configs(addr)
    changed = []
    for name, cfg in sorted(table.items()):
        if not is_user_topic(name, cluster, frozenset(registered)) or not cfg.perm & PERM_WRITE:
            continue
        await admin.create_topic(
            name,
            broker_addr=addr,
            read_queues=cfg.read_queue_nums,
            write_queues=cfg.write_queue_nums,
            perm=cfg.perm & ~PERM_WRITE,
            order=cfg.order,
        )
        changed.append(name)
    return changed


ANNOTATION_SWITCHOVER = "pyrocketmq.io/switchover"
"""On a Broker with spec.failover: the pod (``<group>-<ordinal>``) to make its group's master."""


async def controller_views(admin: Admin, controllers: str) -> dict[str, dict[str, Any]]:
    """The controller's view of every group (name → master, epoch, in-sync set)."""
    try:
        return await controller_groups(admin.instance, controllers)
    except MQClientError as e:
        raise RocketMQUnavailable("ControllerUnavailable", str(e)) from None


async def controller_silences(admin: Admin, controllers: str) -> dict[str, dict[str, int]]:
    """What the controller instances, leading or not, last heard of each replica (group → replica id
    → ms ago); empty when none answered."""
    return await controller_heard(admin.instance, controllers)


async def request_switchover(admin: Admin, controllers: str, model: BrokerModel, pod: str) -> dict[str, Any]:
    """Ask the controller to make ``pod`` its group's master; ``{target, result, message}`` for the status."""
    group, _, ordinal = pod.rpartition("-")
    if not ordinal.isdigit() or group not in model.group_names:
        return {"target": pod, "result": "Refused",
                "message": f"{pod!r} is not a pod of this Broker's groups (expected <group>-<ordinal>)"}
    try:
        view = await elect_master(admin.instance, controllers, group, int(ordinal) + 1)
    except MQClientError as e:
        return {"target": pod, "result": "Refused", "message": f"switchover of {group} to {pod} refused: {e}"}
    return {"target": pod, "result": "Done",
            "message": f"{group}: {pod} is master at epoch {view.get('epoch')}"}
