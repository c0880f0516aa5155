"""Verbs on clusters and brokers: the brokers of each cluster, a broker's runtime figures and
configuration, a round trip to every broker, every topic's traffic."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

from ..cli_common import _bool, int_range, table
from ..errors import MQBrokerError, MQClientError, MQError
from ..stats_all import HEADER, format_row, stats_all
from .verb import WHERE, Verb, opt

if TYPE_CHECKING:
    from ..admin import Admin


async def cluster_list(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    info = await admin.cluster_info()
    rows: list[list[object]] = [["#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
                                 "#OutTPS(LOAD)"]]
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


async def cluster_rt(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    """As mqadmin: each broker gets ``amount`` messages on the topic named after it; RT is the mean
    milliseconds per acknowledged send."""
    import time

    from ..message import Message
    from ..producer import Producer
    from ..settings import ProducerSettings

    info = await admin.cluster_info()
    clusters = [args.cluster] if args.cluster else sorted(info.cluster_addr_table)
    if args.cluster and args.cluster not in info.cluster_addr_table:
        raise MQClientError(f"cluster {args.cluster!r} is not known to the name server")
    body = b"x" * args.size
    out.write(f"{'#Cluster Name':<24}  {'#Broker Name':<24}  {'#RT':<4}  "
              f"{'#successCount':<8}  {'#failCount':<8}\n")
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


async def broker_status(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    for addr in await admin.target_brokers(args.broker, args.cluster):
        kv = await admin.broker_runtime_info(addr)
        for k in sorted(kv):
            out.write(f"{addr:<24} {k:<32}: {kv[k]}\n" if args.cluster else f"{k:<32}: {kv[k]}\n")


async def get_broker_config(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    for addr in await admin.target_brokers(args.broker, args.cluster):
        out.write(f"============{addr}============\n")
        for k, v in (await admin.broker_config(addr)).items():
            out.write(f"{k:<50}=  {v}\n")


async def update_broker_config(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    for addr in await admin.target_brokers(args.broker, args.cluster):
        await admin.update_broker_config(addr, args.key, args.value)
        out.write(f"update broker config success, {addr}\n")


async def all_stats(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    out.write(HEADER)
    for row in await stats_all(admin, args.topic, args.active):
        out.write(format_row(row))


VERBS = (
    Verb("clusterList", "brokers of every cluster", cluster_list, (
        opt("-m", "--moreStats", switch=True, help=argparse.SUPPRESS),
    )),
    Verb("clusterRT", "send test messages to every broker of a cluster and print the round trip "
         "(one round; Apache's mqadmin repeats it every -i seconds)", cluster_rt, (
        opt("-c", "--cluster", help="one cluster (default: every cluster)"),
        opt("-a", "--amount", type=int_range(1, 100_000), default=100,
            help="messages per broker (default 100)"),
        opt("-s", "--size", type=int_range(1, 4 * 1024 * 1024), default=128,
            help="message size in bytes (default 128)"),
        opt("-p", "--print log", dest="print_log", type=_bool, default=False, help=argparse.SUPPRESS),
        opt("-m", "--machine room", dest="machine_room", default="noname", help=argparse.SUPPRESS),
        opt("-i", "--interval", type=int, default=10, help=argparse.SUPPRESS),
    )),
    Verb("brokerStatus", "a broker's runtime figures (-b) or every master's (-c)", broker_status, WHERE),
    Verb("getBrokerConfig", "a broker's configuration (-b) or every master's (-c)", get_broker_config, WHERE),
    Verb("updateBrokerConfig", "change a broker setting at run time (where the broker allows it)",
         update_broker_config, (
        *WHERE,
        opt("-k", "--key", required=True, help="setting name"),
        opt("-v", "--value", required=True, help="new value"),
    )),
    Verb("statsAll", "every topic's messages in and out (per second over the last minute, and over the last "
         "day) per consumer group, with the group's backlog", all_stats, (
        opt("-a", "--activeTopic", dest="active", switch=True, help="only topics with traffic"),
        opt("-t", "--topic", help="only this topic"),
    )),
)
