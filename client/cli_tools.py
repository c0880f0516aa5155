"""mqadmin's broker and group tools: ``brokerStatus``, ``getBrokerConfig``, ``updateBrokerConfig``,
``producerConnection``, ``deleteSubGroup``, ``cloneGroupOffset``, ``topicClusterList``, ``clusterRT``,
``getConsumerStatus`` and ``statsAll``, with
Apache's flags and output."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from pyrocketmq.remoting.command import version_desc
from pyrocketmq.remoting.names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

from .cli_common import _add_ns, _bool
from .errors import MQBrokerError, MQClientError, MQError
from .stats_all import HEADER, format_row, stats_all

COMMANDS = ("brokerStatus", "getBrokerConfig", "updateBrokerConfig", "producerConnection", "deleteSubGroup",
            "cloneGroupOffset", "topicClusterList", "clusterRT", "getConsumerStatus", "statsAll")  # fmt: skip


def _where(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerAddr", dest="broker", help="one broker (host:port)")
    p.add_argument("-c", "--clusterName", dest="cluster", help="every master of a cluster")


def add_parsers(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("brokerStatus", help="a broker's runtime figures (-b) or every master's (-c)")
    _add_ns(p)
    _where(p)
    p = sub.add_parser("getBrokerConfig", help="a broker's configuration (-b) or every master's (-c)")
    _add_ns(p)
    _where(p)
    p = sub.add_parser("updateBrokerConfig", help="change a broker setting at run time (where the broker allows it)")
    _add_ns(p)
    _where(p)
    p.add_argument("-k", "--key", required=True, help="setting name")
    p.add_argument("-v", "--value", required=True, help="new value")
    p = sub.add_parser("producerConnection", help="the producers of a group connected to a topic's broker")
    _add_ns(p)
    p.add_argument("-g", "--producerGroup", dest="group", required=True, help="producer group")
    p.add_argument("-t", "--topic", required=True, help="a topic the group sends to")
    p = sub.add_parser("deleteSubGroup", help="delete a consumer group from a broker (-b) or a cluster (-c)")
    _add_ns(p)
    _where(p)
    p.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group")
    p = sub.add_parser("cloneGroupOffset", help="copy a group's committed offsets on a topic to another group")
    _add_ns(p)
    p.add_argument("-s", "--srcGroup", dest="src", required=True, help="group to copy from")
    p.add_argument("-d", "--destGroup", dest="dest", required=True, help="group to copy to")
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument("-o", "--offline", type=_bool, default=False, help="the source group is offline (default false)")
    p = sub.add_parser("clusterRT", help="send test messages to every broker of a cluster and print the round trip "
                       "(one round; Apache's mqadmin repeats it every -i seconds)")
    _add_ns(p)
    p.add_argument("-c", "--cluster", help="one cluster (default: every cluster)")
    p.add_argument("-a", "--amount", type=int, default=100, help="messages per broker (default 100)")
    p.add_argument("-s", "--size", type=int, default=128, help="message size in bytes (default 128)")
    p.add_argument("-p", "--print log", dest="print_log", type=_bool, default=False, help=argparse.SUPPRESS)
    p.add_argument("-m", "--machine room", dest="machine_room", default="noname", help=argparse.SUPPRESS)
    p.add_argument("-i", "--interval", type=int, default=10, help=argparse.SUPPRESS)

    p = sub.add_parser("getConsumerStatus", help="the offsets a group's online consumers hold on a topic")
    _add_ns(p)
    p.add_argument("-g", "--group", required=True, help="consumer group")
    p.add_argument("-t", "--topic", required=True, help="topic")
    p.add_argument("-i", "--originClientId", dest="client_id", default="", help="only this client id")

    p = sub.add_parser("statsAll", help="every topic's messages in and out (per second over the last minute, and "
                       "over the last day) per consumer group, with the group's backlog")
    _add_ns(p)
    p.add_argument("-a", "--activeTopic", dest="active", action="store_true", help="only topics with traffic")
    p.add_argument("-t", "--topic", help="only this topic")

    p = sub.add_parser("topicClusterList", help="the clusters a topic is served by")
    _add_ns(p)
    p.add_argument("-t", "--topic", required=True, help="topic")


async def run(cmd: str, args: argparse.Namespace, admin: Any, out: TextIO) -> int:
    if cmd == "brokerStatus":
        targets = await admin.target_brokers(args.broker, args.cluster)
        for addr in targets:
            kv = await admin.broker_runtime_info(addr)
            for k in sorted(kv):
                out.write(f"{addr:<24} {k:<32}: {kv[k]}\n" if args.cluster else f"{k:<32}: {kv[k]}\n")
    elif cmd == "getBrokerConfig":
        for addr in await admin.target_brokers(args.broker, args.cluster):
            out.write(f"============{addr}============\n")
            for k, v in (await admin.broker_config(addr)).items():
                out.write(f"{k:<50}=  {v}\n")
    elif cmd == "updateBrokerConfig":
        for addr in await admin.target_brokers(args.broker, args.cluster):
            await admin.update_broker_config(addr, args.key, args.value)
            out.write(f"update broker config success, {addr}\n")
    elif cmd == "producerConnection":
        conn = await admin.producer_connection(args.group, args.topic)
        for i, c in enumerate(conn.connection_set, 1):
            out.write(f"{i:04d}  {c.client_id:<32} {c.client_addr:<22} {c.language:<8} {version_desc(c.version)}\n")
    elif cmd == "deleteSubGroup":
        await _delete_group(args, admin, out)
    elif cmd == "getConsumerStatus":
        table = await admin.consumer_status(args.group, args.topic, args.client_id)
        out.write(f"get consumer status from client. group={args.group}, topic={args.topic}, "
                  f"originClientId={args.client_id}\n")
        out.write(f"{'#clientId':<50}  {'#brokerName':<15}  {'#queueId':<15}  {'#offset':<20}\n")
        for client_id, queues in sorted(table.items()):
            for mq, offset in sorted(queues.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id)):
                out.write(f"{client_id:<50}  {mq.broker_name:<15}  {mq.queue_id:<15}  {offset:<20}\n")
    elif cmd == "statsAll":
        out.write(HEADER)
        for row in await stats_all(admin, args.topic, args.active):
            out.write(format_row(row))
    elif cmd == "clusterRT":
        await _cluster_rt(args, admin, out)
    elif cmd == "cloneGroupOffset":
        await admin.clone_group_offset(args.src, args.dest, args.topic, offline=args.offline)
        out.write(f"clone group offset success. srcGroup[{args.src}], destGroup={args.dest}, topic[{args.topic}]\n")
    else:
        for cluster in await admin.topic_clusters(args.topic):
            out.write(f"{cluster}\n")
    return 0


async def _delete_group(args: argparse.Namespace, admin: Any, out: TextIO) -> None:
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


async def _cluster_rt(args: argparse.Namespace, admin: Any, out: TextIO) -> None:
    """As mqadmin: each broker gets ``amount`` messages on the topic named after it; RT is the mean
    milliseconds per acknowledged send."""
    import time

    from .message import Message
    from .producer import Producer
    from .settings import ProducerSettings

    if not (0 < args.amount <= 100_000 and 0 < args.size <= 4 * 1024 * 1024):
        raise MQClientError("-a/--amount must be 1..100000 and -s/--size 1..4194304")
    info = await admin.cluster_info()
    clusters = [args.cluster] if args.cluster else sorted(info.cluster_addr_table)
    if args.cluster and args.cluster not in info.cluster_addr_table:
        raise MQClientError(f"cluster {args.cluster!r} is not known to the name server")
    body = b"x" * args.size
    out.write(f"{'#Cluster Name':<24}  {'#Broker Name':<24}  {'#RT':<4}  {'#successCount':<8}  {'#failCount':<8}\n")
    async with Producer("PID_CLUSTER_RT", admin.instance.settings.namesrv_addr, ProducerSettings(retries=0),
                        admin.instance.settings) as producer:
        for cluster in clusters:
            for name in sorted(info.cluster_addr_table[cluster]):
                ok = failed = 0
                spent = 0.0
                for _ in range(args.amount):
                    began = time.monotonic()
                    try:
                        await producer.send(Message(name, body))
                    except (MQBrokerError, MQClientError, MQError):
                        failed += 1
                        continue
                    spent += time.monotonic() - began
                    ok += 1
                rt = spent * 1000 / ok if ok else 0.0
                out.write(f"{cluster:<24}  {name:<24}  {rt:<8.2f}  {ok:<16}  {failed:<16}\n")
