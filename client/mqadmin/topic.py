"""Verbs on topics: create or update, delete, list, route, queue offsets, the clusters serving one."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

import orjson

from ..cli_common import _bool, fmt_ms, table, to_jsonable
from .verb import TOPIC, Verb, one_of, opt

if TYPE_CHECKING:
    from ..admin import Admin

async def update_topic(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    from ..route import perm_to_string

    targets = await admin.create_topic(
        args.topic, broker_addr=args.broker, cluster=args.cluster, read_queues=args.read,
        write_queues=args.write, perm=args.perm, order=args.order, message_type=args.attributes,
    )
    for addr in targets:
        out.write(f"create topic to {addr} success.\n")
    out.write(
        f"TopicConfig [topicName={args.topic}, readQueueNums={args.read}, writeQueueNums={args.write}, "
        f"perm={perm_to_string(args.perm)}, topicFilterType=SINGLE_TAG, topicSysFlag=0, "
        f"order={str(args.order).lower()}]\n"
    )


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


async def delete_topic(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    await admin.delete_topic(args.topic, args.cluster)
    out.write(f"delete topic [{args.topic}] from cluster [{args.cluster}] success.\n")
    out.write(f"delete topic [{args.topic}] from NameServer success.\n")


async def topic_list(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    for t in await admin.topic_list():
        out.write(f"{t}\n")


async def topic_route(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    route = await admin.topic_route(args.topic)
    text = orjson.dumps(to_jsonable(route), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    out.write(text + "\n")


async def topic_status(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    stats = await admin.topic_stats(args.topic)
    rows: list[list[object]] = [["#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"]]
    for mq, off in stats.items():
        when = fmt_ms(off.last_update_timestamp)
        rows.append([mq.broker_name, mq.queue_id, off.min_offset, off.max_offset, when])
    table(rows, [32, 4, 20, 20, 0], out)


async def topic_cluster_list(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    for cluster in await admin.topic_clusters(args.topic):
        out.write(f"{cluster}\n")


VERBS = (
    Verb("updateTopic", "create or update a topic on a broker or on every master of a cluster",
         update_topic, (
        one_of(opt("-c", "--clusterName", dest="cluster",
                   help="create the topic on every master of this cluster"),
               opt("-b", "--brokerAddr", dest="broker", help="create the topic on this broker (host:port)")),
        TOPIC,
        opt("-r", "--readQueueNums", dest="read", type=int, default=8, help="read queues (default 8)"),
        opt("-w", "--writeQueueNums", dest="write", type=int, default=8, help="write queues (default 8)"),
        opt("-p", "--perm", type=int, default=6, help="permission: 2 W, 4 R, 6 RW (default 6)"),
        opt("-o", "--order", type=_bool, default=False, help="ordered topic: true|false (default false)"),
        opt("-s", "--hasUnitSub", type=_bool, default=False, help=argparse.SUPPRESS),
        opt("-u", "--unit", type=_bool, default=False, help=argparse.SUPPRESS),
        opt("-a", "--attributes", type=_message_type,
            help="RocketMQ 5 attributes: +message.type=NORMAL|FIFO|DELAY|TRANSACTION|MIXED"),
    )),
    Verb("deleteTopic", "delete a topic from a cluster's brokers and the name servers", delete_topic, (
        opt("-c", "--clusterName", dest="cluster", required=True, help="cluster to delete the topic from"),
        TOPIC,
    )),
    Verb("topicList", "list every topic", topic_list, (
        opt("-c", "--clusterModel", dest="cluster_model", switch=True, help=argparse.SUPPRESS),
    )),
    Verb("topicRoute", "print a topic's route (JSON)", topic_route, (TOPIC,)),
    Verb("topicStatus", "min/max offset of every queue of a topic", topic_status, (TOPIC,)),
    Verb("topicClusterList", "the clusters a topic is served by", topic_cluster_list, (
        opt("-t", "--topic", required=True, help="topic"),
    )),
)
