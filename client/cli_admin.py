"""``pyrocketmq admin <command>``: mqadmin's names, flags and table layouts over :class:`~.admin.Admin`."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TextIO

import orjson

from pyrocketmq.remoting.body import SubscriptionGroupConfig
from pyrocketmq.remoting.command import version_desc

from . import cli_controller, cli_query, cli_tools
from .cli_common import (
    Parser,
    _add_ns,
    _bool,
    _timestamp,
    client_settings,
    fmt_ms,
    table,
    to_jsonable,
)
from .errors import MQClientError, MQError

if TYPE_CHECKING:
    from .admin import Admin


def _admin_parsers(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser("updateTopic", help="create or update a topic on a broker or on every master of a cluster")
    _add_ns(p)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("-c", "--clusterName", dest="cluster", help="create the topic on every master of this cluster")
    g.add_argument("-b", "--brokerAddr", dest="broker", help="create the topic on this broker (host:port)")
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p.add_argument("-r", "--readQueueNums", dest="read", type=int, default=8, help="read queues (default 8)")
    p.add_argument("-w", "--writeQueueNums", dest="write", type=int, default=8, help="write queues (default 8)")
    p.add_argument("-p", "--perm", type=int, default=6, help="permission: 2 W, 4 R, 6 RW (default 6)")
    p.add_argument("-o", "--order", type=_bool, default=False, help="ordered topic: true|false (default false)")
    p.add_argument("-s", "--hasUnitSub", type=_bool, default=False, help=argparse.SUPPRESS)
    p.add_argument("-u", "--unit", type=_bool, default=False, help=argparse.SUPPRESS)
    p.add_argument("-a", "--attributes", type=_message_type, default=None,
                   help="RocketMQ 5 attributes: +message.type=NORMAL|FIFO|DELAY|TRANSACTION|MIXED")

    p = sub.add_parser("deleteTopic", help="delete a topic from a cluster's brokers and the name servers")
    _add_ns(p)
    p.add_argument("-c", "--clusterName", dest="cluster", required=True, help="cluster to delete the topic from")
    p.add_argument("-t", "--topic", required=True, help="topic name")

    p = sub.add_parser("topicList", help="list every topic")
    _add_ns(p)
    p.add_argument("-c", "--clusterModel", dest="cluster_model", action="store_true", help=argparse.SUPPRESS)

    p = sub.add_parser("topicRoute", help="print a topic's route (JSON)")
    _add_ns(p)
    p.add_argument("-t", "--topic", required=True, help="topic name")

    p = sub.add_parser("topicStatus", help="min/max offset of every queue of a topic")
    _add_ns(p)
    p.add_argument("-t", "--topic", required=True, help="topic name")

    p = sub.add_parser("clusterList", help="brokers of every cluster")
    _add_ns(p)
    p.add_argument("-m", "--moreStats", action="store_true", help=argparse.SUPPRESS)

    p = sub.add_parser("updateSubGroup", help="create or update a consumer group")
    _add_ns(p)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("-c", "--clusterName", dest="cluster", help="create the group on every master of this cluster")
    g.add_argument("-b", "--brokerAddr", dest="broker", help="create the group on this broker (host:port)")
    p.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group name")
    p.add_argument("-s", "--consumeEnable", type=_bool, default=True, help="consumption allowed (default true)")
    p.add_argument("-m", "--consumeFromMinEnable", type=_bool, default=True, help="start from the min offset (default true)")
    p.add_argument("-d", "--consumeBroadcastEnable", type=_bool, default=True, help="broadcasting allowed (default true)")
    p.add_argument("-q", "--retryQueueNums", type=int, default=1, help="retry queues (default 1)")
    p.add_argument("-r", "--retryMaxTimes", type=int, default=16, help="retries before the DLQ (default 16)")
    p.add_argument("-i", "--brokerId", type=int, default=0, help="broker id to consume from (default 0)")
    p.add_argument("-w", "--whichBrokerWhenConsumeSlowly", type=int, default=1, help="broker id when lagging (default 1)")
    p.add_argument("-a", "--notifyConsumerIdsChanged", type=_bool, default=True, help="notify members on change (default true)")

    p = sub.add_parser("consumerProgress", help="a consumer group's offsets and lag per queue")
    _add_ns(p)
    p.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group name")
    p.add_argument("-t", "--topicName", dest="topic", help="only this topic")

    p = sub.add_parser("consumerConnection", help="the members of a consumer group and their subscriptions")
    _add_ns(p)
    p.add_argument("-g", "--consumerGroup", dest="group", required=True, help="consumer group name")

    p = sub.add_parser("resetOffsetByTime", help="move a consumer group's offsets on a topic to a point in time")
    _add_ns(p)
    p.add_argument("-g", "--group", required=True, help="consumer group name")
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p.add_argument("-s", "--timestamp", required=True, type=_timestamp,
                   help="now, ms since the epoch, yyyy-MM-dd#HH:mm:ss:SSS (local time), or -1 for the end")
    p.add_argument("-f", "--force", type=_bool, default=True,
                   help="also move offsets that are already before the time (default true)")
    p.add_argument("-c", "--cplus", action="store_true", help=argparse.SUPPRESS)
    cli_query.add_parsers(sub)
    cli_tools.add_parsers(sub)
    cli_controller.add_parsers(sub)


async def _with_admin(args: argparse.Namespace, fn: Callable[[Any], Awaitable[int]]) -> int:
    from .admin import Admin

    async with Admin(args.namesrv, client=client_settings(args)) as admin:
        return await fn(admin)


async def run_admin(args: argparse.Namespace, out: TextIO) -> int:
    cmd = args.admin_command

    async def go(admin: Any) -> int:
        if cmd == "updateTopic":
            targets = await admin.create_topic(
                args.topic, broker_addr=args.broker, cluster=args.cluster, read_queues=args.read,
                write_queues=args.write, perm=args.perm, order=args.order, message_type=args.attributes,
            )
            for addr in targets:
                out.write(f"create topic to {addr} success.\n")
            out.write(
                f"TopicConfig [topicName={args.topic}, readQueueNums={args.read}, writeQueueNums={args.write}, "
                f"perm={_perm(args.perm)}, topicFilterType=SINGLE_TAG, topicSysFlag=0, order={str(args.order).lower()}]\n"
            )
        elif cmd == "deleteTopic":
            await admin.delete_topic(args.topic, args.cluster)
            out.write(f"delete topic [{args.topic}] from cluster [{args.cluster}] success.\n")
            out.write(f"delete topic [{args.topic}] from NameServer success.\n")
        elif cmd == "topicList":
            for t in await admin.topic_list():
                out.write(f"{t}\n")
        elif cmd == "topicRoute":
            route = await admin.topic_route(args.topic)
            out.write(orjson.dumps(to_jsonable(route), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")
        elif cmd == "topicStatus":
            stats = await admin.topic_stats(args.topic)
            rows: list[list[Any]] = [["#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"]]
            for mq, off in stats.items():
                rows.append([mq.broker_name, mq.queue_id, off.min_offset, off.max_offset, fmt_ms(off.last_update_timestamp)])
            table(rows, [32, 4, 20, 20, 0], out)
        elif cmd == "clusterList":
            await _cluster_list(admin, out)
        elif cmd == "updateSubGroup":
            await _update_sub_group(admin, args, out)
        elif cmd == "consumerProgress":
            await _consumer_progress(admin, args.group, args.topic, out)
        elif cmd == "consumerConnection":
            conn = await admin.consumer_connection(args.group)
            rows = [["#", "#ClientId", "#ClientAddr", "#Language", "#Version"]]
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
        elif cmd == "resetOffsetByTime":
            offsets = await admin.reset_offset_by_time(args.group, args.topic, args.timestamp, force=args.force)
            out.write(
                f"rollback consumer offset by specified consumerGroup[{args.group}], topic[{args.topic}], "
                f"force[{str(args.force).lower()}], timestamp(string)[{fmt_ms(args.timestamp)}], "
                f"timestamp(long)[{args.timestamp}]\n"
            )
            rows = [["#brokerName", "#queueId", "#offset"]]
            rows += [[mq.broker_name, mq.queue_id, off] for mq, off in offsets.items()]
            table(rows, [32, 16, 0], out)
        elif cmd in cli_query.COMMANDS:
            return await cli_query.run(cmd, args, admin, out)
        elif cmd in cli_tools.COMMANDS:
            return await cli_tools.run(cmd, args, admin, out)
        elif cmd in cli_controller.COMMANDS:
            return await cli_controller.run(cmd, args, admin, out)
        else:  # argparse keeps this unreachable
            raise MQClientError(f"unknown admin command {cmd!r}")
        return 0

    return await _with_admin(args, go)


def _message_type(text: str) -> str:
    """``+message.type=FIFO`` → ``FIFO`` (the one attribute topics take)."""
    from pyrocketmq.remoting.message_type import MESSAGE_TYPE, AttributeRefused, parse_attributes

    try:
        attrs = parse_attributes(text, {})
    except AttributeRefused as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if MESSAGE_TYPE not in attrs:
        raise argparse.ArgumentTypeError(f"give +{MESSAGE_TYPE}=TYPE")
    return attrs[MESSAGE_TYPE]


def _perm(perm: int) -> str:
    from .route import perm_to_string

    return perm_to_string(perm)


async def _update_sub_group(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
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


async def _cluster_list(admin: Any, out: TextIO) -> None:
    info = await admin.cluster_info()
    rows: list[list[Any]] = [["#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)"]]
    for cluster in sorted(info.cluster_addr_table):
        for name in sorted(info.cluster_addr_table[cluster]):
            bd = info.broker_addr_table.get(name)
            if bd is None:
                continue
            for bid, addr in sorted((int(k), v) for k, v in bd.broker_addrs.items()):
                version, in_tps, out_tps = "", "", ""
                try:
                    kv = await admin.broker_runtime_info(addr)
                    version = kv.get("brokerVersionDesc", "")
                    in_tps = _first(kv.get("putTps", ""))
                    out_tps = _first(kv.get("getTransferedTps", kv.get("getTransferredTps", "")))
                except MQError:
                    pass
                rows.append([cluster, name, bid, addr, version, in_tps, out_tps])
    table(rows, [16, 22, 4, 22, 16, 12, 12], out)


def _first(tps: str) -> str:
    parts = tps.split()
    try:
        return f"{float(parts[0]):.2f}" if parts else ""
    except ValueError:
        return parts[0]


async def _consumer_progress(admin: Any, group: str, topic: str | None, out: TextIO) -> None:
    table_, tps = await admin.consume_stats(group, topic)
    rows: list[list[Any]] = [["#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime"]]
    diff_total = 0
    for mq, w in table_.items():
        diff = w.broker_offset - w.consumer_offset
        diff_total += diff
        rows.append([mq.topic, mq.broker_name, mq.queue_id, w.broker_offset, w.consumer_offset, diff, fmt_ms(w.last_timestamp)])
    table(rows, [32, 22, 4, 16, 16, 10, 0], out)
    out.write("\n")
    out.write(f"Consume TPS: {tps:.2f}\n")
    out.write(f"Consume Diff Total: {diff_total}\n")
