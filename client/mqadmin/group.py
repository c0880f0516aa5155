"""Verbs on consumer and producer groups: create or delete a group, its members and subscriptions, its
offsets (progress and lag, reset to a time, copy to another group, what the online consumers hold)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

import orjson

from pyrocketmq.remoting.body import SubscriptionGroupConfig
from pyrocketmq.remoting.command import version_desc
from pyrocketmq.remoting.names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

from ..cli_common import _bool, _timestamp, fmt_ms, table, to_jsonable
from ..errors import MQBrokerError, MQClientError
from .verb import TOPIC, WHERE, Verb, one_of, opt

if TYPE_CHECKING:
    from ..admin import Admin


async def update_sub_group(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    config = SubscriptionGroupConfig(
        group_name=args.group, retry_queue_nums=args.retryQueueNums, retry_max_times=args.retryMaxTimes,
        consume_enable=args.consumeEnable, consume_from_min_enable=args.consumeFromMinEnable,
        consume_broadcast_enable=args.consumeBroadcastEnable, broker_id=args.brokerId,
        which_broker_when_consume_slowly=args.whichBrokerWhenConsumeSlowly,
        notify_consumer_ids_changed_enable=args.notifyConsumerIdsChanged,
    )
    for addr in await admin.create_subscription_group(config, broker_addr=args.broker, cluster=args.cluster):
        out.write(f"create subscription group to {addr} success.\n")
    out.write(orjson.dumps(to_jsonable(config)).decode() + "\n")


async def delete_sub_group(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    """As mqadmin: from each broker; with -c also the group's %RETRY% and %DLQ% topics."""
    for addr in await admin.target_brokers(args.broker, args.cluster):
        await admin.delete_subscription_group(args.group, addr)
        where = f" in cluster [{args.cluster}]" if args.cluster else ""
        out.write(f"delete subscription group [{args.group}] from broker [{addr}]{where} success.\n")
    if not args.cluster:
        return
    for topic in (RETRY_GROUP_TOPIC_PREFIX + args.group, DLQ_GROUP_TOPIC_PREFIX + args.group):
        try:
            await admin.delete_topic(topic, args.cluster)
        except (MQBrokerError, MQClientError) as e:
            out.write(f"delete topic [{topic}] from cluster [{args.cluster}] failed: {e}\n")
            continue
        out.write(f"delete topic [{topic}] from cluster [{args.cluster}] success.\n")
        out.write(f"delete topic [{topic}] from NameServer success.\n")


async def consumer_progress(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    table_, tps = await admin.consume_stats(args.group, args.topic)
    rows: list[list[object]] = [
        ["#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime"]
    ]
    diff_total = 0
    for mq, w in table_.items():
        diff = w.broker_offset - w.consumer_offset
        diff_total += diff
        rows.append([mq.topic, mq.broker_name, mq.queue_id, w.broker_offset, w.consumer_offset, diff,
                     fmt_ms(w.last_timestamp)])
    table(rows, [32, 22, 4, 16, 16, 10, 0], out)
    out.write("\n")
    out.write(f"Consume TPS: {tps:.2f}\n")
    out.write(f"Consume Diff Total: {diff_total}\n")


async def consumer_connection(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    conn = await admin.consumer_connection(args.group)
    rows: list[list[object]] = [["#", "#ClientId", "#ClientAddr", "#Language", "#Version"]]
    for i, c in enumerate(conn.connection_set, 1):
        rows.append([f"{i:03d}", c.client_id, c.client_addr or "N/A", c.language, version_desc(c.version)])
    table(rows, [3, 36, 22, 10, 0], out)
    if conn.subscription_table:
        out.write("\nBelow is subscription:\n")
        for i, (topic, sub) in enumerate(sorted(conn.subscription_table.items()), 1):
            out.write(f"{i:03d}  Topic: {topic:<40} SubExpression: {sub.sub_string}\n")
    if conn.consume_type:
        out.write(f"\nConsumeType: {conn.consume_type}\nMessageModel: {conn.message_model}\n"
                  f"ConsumeFromWhere: {conn.consume_from_where}\n")


async def reset_offset_by_time(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    offsets = await admin.reset_offset_by_time(args.group, args.topic, args.timestamp, force=args.force)
    out.write(
        f"rollback consumer offset by specified consumerGroup[{args.group}], topic[{args.topic}], "
        f"force[{str(args.force).lower()}], timestamp(string)[{fmt_ms(args.timestamp)}], "
        f"timestamp(long)[{args.timestamp}]\n"
    )
    rows: list[list[object]] = [["#brokerName", "#queueId", "#offset"]]
    rows += [[mq.broker_name, mq.queue_id, off] for mq, off in offsets.items()]
    table(rows, [32, 16, 0], out)


async def clone_group_offset(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    await admin.clone_group_offset(args.src, args.dest, args.topic, offline=args.offline)
    out.write(f"clone group offset success. srcGroup[{args.src}], destGroup={args.dest}, "
              f"topic[{args.topic}]\n")


async def get_consumer_status(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    held = await admin.consumer_status(args.group, args.topic, args.client_id)
    out.write(f"get consumer status from client. group={args.group}, topic={args.topic}, "
              f"originClientId={args.client_id}\n")
    out.write(f"{'#clientId':<50}  {'#brokerName':<15}  {'#queueId':<15}  {'#offset':<20}\n")
    for client_id, queues in sorted(held.items()):
        for mq, offset in sorted(queues.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id)):
            out.write(f"{client_id:<50}  {mq.broker_name:<15}  {mq.queue_id:<15}  {offset:<20}\n")


async def producer_connection(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    conn = await admin.producer_connection(args.group, args.topic)
    for i, c in enumerate(conn.connection_set, 1):
        out.write(f"{i:04d}  {c.client_id:<32} {c.client_addr:<22} {c.language:<8} "
                  f"{version_desc(c.version)}\n")


VERBS = (
    Verb("updateSubGroup", "create or update a consumer group", update_sub_group, (
        one_of(opt("-c", "--clusterName", dest="cluster",
                   help="create the group on every master of this cluster"),
               opt("-b", "--brokerAddr", dest="broker", help="create the group on this broker (host:port)")),
        opt("-g", "--groupName", dest="group", required=True, help="consumer group name"),
        opt("-s", "--consumeEnable", type=_bool, default=True, help="consumption allowed (default true)"),
        opt("-m", "--consumeFromMinEnable", type=_bool, default=True,
            help="start from the min offset (default true)"),
        opt("-d", "--consumeBroadcastEnable", type=_bool, default=True,
            help="broadcasting allowed (default true)"),
        opt("-q", "--retryQueueNums", type=int, default=1, help="retry queues (default 1)"),
        opt("-r", "--retryMaxTimes", type=int, default=16, help="retries before the DLQ (default 16)"),
        opt("-i", "--brokerId", type=int, default=0, help="broker id to consume from (default 0)"),
        opt("-w", "--whichBrokerWhenConsumeSlowly", type=int, default=1,
            help="broker id when lagging (default 1)"),
        opt("-a", "--notifyConsumerIdsChanged", type=_bool, default=True,
            help="notify members on change (default true)"),
    )),
    Verb("deleteSubGroup", "delete a consumer group from a broker (-b) or a cluster (-c)", delete_sub_group, (
        *WHERE,
        opt("-g", "--groupName", dest="group", required=True, help="consumer group"),
    )),
    Verb("consumerProgress", "a consumer group's offsets and lag per queue", consumer_progress, (
        opt("-g", "--groupName", dest="group", required=True, help="consumer group name"),
        opt("-t", "--topicName", dest="topic", help="only this topic"),
    )),
    Verb("consumerConnection", "the members of a consumer group and their subscriptions",
         consumer_connection, (
        opt("-g", "--consumerGroup", dest="group", required=True, help="consumer group name"),
    )),
    Verb("resetOffsetByTime", "move a consumer group's offsets on a topic to a point in time",
         reset_offset_by_time, (
        opt("-g", "--group", required=True, help="consumer group name"),
        TOPIC,
        opt("-s", "--timestamp", required=True, type=_timestamp,
            help="now, ms since the epoch, yyyy-MM-dd#HH:mm:ss:SSS (local time), or -1 for the end"),
        opt("-f", "--force", type=_bool, default=True,
            help="also move offsets that are already before the time (default true)"),
        opt("-c", "--cplus", switch=True, help=argparse.SUPPRESS),
    )),
    Verb("cloneGroupOffset", "copy a group's committed offsets on a topic to another group",
         clone_group_offset, (
        opt("-s", "--srcGroup", dest="src", required=True, help="group to copy from"),
        opt("-d", "--destGroup", dest="dest", required=True, help="group to copy to"),
        opt("-t", "--topic", required=True, help="topic"),
        opt("-o", "--offline", type=_bool, default=False, help="the source group is offline (default false)"),
    )),
    Verb("getConsumerStatus", "the offsets a group's online consumers hold on a topic", get_consumer_status, (
        opt("-g", "--group", required=True, help="consumer group"),
        opt("-t", "--topic", required=True, help="topic"),
        opt("-i", "--originClientId", dest="client_id", default="", help="only this client id"),
    )),
    Verb("producerConnection", "the producers of a group connected to a topic's broker",
         producer_connection, (
        opt("-g", "--producerGroup", dest="group", required=True, help="producer group"),
        opt("-t", "--topic", required=True, help="a topic the group sends to"),
    )),
)
