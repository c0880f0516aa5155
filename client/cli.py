"""The client side of the ``pyrocketmq`` command: ``admin <command>``, ``produce``, ``consume``, ``bench``.

``main(argv)`` gets the arguments after ``pyrocketmq`` (``["admin", "topicList", "-n", …]``) and
returns the exit status:

- 0 — done;
- 1 — the cluster said no or could not be reached: one line on stderr, e.g.
  ``cannot reach name server 127.0.0.1:9876: connection refused`` (never a traceback; set
  ``PYROCKETMQ_DEBUG=1`` to see one);
- 2 — bad arguments: the usage of the (sub-)command and what is wrong, on stderr.

Admin commands keep ``mqadmin``'s names and flags (``updateTopic -n ADDR -c CLUSTER -t TOPIC
-r 8 -w 8 -p 6``) and print tables aligned as mqadmin does, so scripts and habits carry over.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, NoReturn, TextIO

import orjson

from .errors import MQClientError, MQConnectionError, MQError
from .message import Message, SendResult, user_properties

PROG = "pyrocketmq"


class UsageError(Exception):
    """Bad command-line arguments; ``parser`` prints the usage that goes with it."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so ``main`` decides the output and the status."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


# -- output helpers -------------------------------------------------------------------------------


def table(rows: list[list[Any]], widths: list[int], out: TextIO) -> None:
    """Left-aligned columns, at least mqadmin's widths, wider when a value needs it; two spaces apart."""
    cols = [max(w, *(len(str(r[i])) for r in rows)) if rows else w for i, w in enumerate(widths)]
    for r in rows:
        cells = [str(v).ljust(cols[i]) if i < len(r) - 1 else str(v) for i, v in enumerate(r)]
        out.write("  ".join(cells).rstrip() + "\n")


def fmt_ms(ms: int) -> str:
    if not ms or ms <= 0:
        return "N/A"
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def send_result_line(r: SendResult) -> str:
    mq = r.message_queue
    return (
        f"SendResult [sendStatus={r.status.value}, msgId={r.msg_id}, offsetMsgId={r.offset_msg_id}, "
        f"messageQueue=MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}], "
        f"queueOffset={r.queue_offset}]"
    )


def version_desc(version: int) -> str:
    """A client's version number as Java names it (``407`` → ``V4_9_7``); 4.9.x only, else the number."""
    if 393 <= version <= 409 and version % 2:
        return f"V4_9_{(version - 393) // 2}"
    return str(version) if version else "N/A"


def body_text(body: bytes, limit: int | None = None) -> str:
    text = body.decode("utf-8", "backslashreplace")
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"… ({len(body)} bytes)"
    return text


def to_jsonable(obj: Any) -> Any:
    """Dataclasses from ``remoting.body`` back to their Java-named JSON (for topicRoute)."""
    to_json = getattr(obj, "to_json", None)
    if to_json is not None:
        return orjson.loads(to_json())
    return obj


# -- admin commands -------------------------------------------------------------------------------


def _add_ns(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namesrvAddr", dest="namesrv", required=True, metavar="ADDR",
                   help="name server address list, e.g. 127.0.0.1:9876;192.168.0.1:9876")


def _bool(text: str) -> bool:
    v = text.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _timestamp(text: str) -> int:
    """mqadmin's ``-s``: ``now``, ms since the epoch (``-1``: the end), or ``yyyy-MM-dd#HH:mm:ss:SSS``."""
    v = text.strip()
    if v.lower() == "now":
        return int(time.time() * 1000)
    if v.lstrip("-").isdigit():
        return int(v)
    try:
        return int(datetime.datetime.strptime(v, "%Y-%m-%d#%H:%M:%S:%f").timestamp() * 1000)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected now, milliseconds or yyyy-MM-dd#HH:mm:ss:SSS, got {text!r}"
        ) from None


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

    p = sub.add_parser("queryMsgById", help="show a message by offset id (or unique id with -t)")
    _add_ns(p)
    p.add_argument("-i", "--msgId", dest="msg_id", required=True, help="offset message id, or unique id with -t")
    p.add_argument("-t", "--topic", help="topic (needed for a unique id)")


async def _with_admin(ns: str, fn: Callable[[Any], Awaitable[int]]) -> int:
    from .admin import Admin

    async with Admin(ns) as admin:
        return await fn(admin)


async def run_admin(args: argparse.Namespace, out: TextIO) -> int:
    cmd = args.admin_command

    async def go(admin: Any) -> int:
        if cmd == "updateTopic":
            targets = await admin.create_topic(
                args.topic, broker_addr=args.broker, cluster=args.cluster, read_queues=args.read,
                write_queues=args.write, perm=args.perm, order=args.order,
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
            targets, config = await admin.create_subscription_group(
                args.group, broker_addr=args.broker, cluster=args.cluster, retry_queue_nums=args.retryQueueNums,
                retry_max_times=args.retryMaxTimes, consume_enable=args.consumeEnable,
                consume_from_min_enable=args.consumeFromMinEnable, consume_broadcast_enable=args.consumeBroadcastEnable,
                broker_id=args.brokerId, which_broker_when_consume_slowly=args.whichBrokerWhenConsumeSlowly,
                notify_consumer_ids_changed_enable=args.notifyConsumerIdsChanged,
            )
            for addr in targets:
                out.write(f"create subscription group to {addr} success.\n")
            out.write(orjson.dumps(to_jsonable(config)).decode() + "\n")
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
        elif cmd == "queryMsgById":
            msg = await admin.find_message(args.msg_id, args.topic)
            _print_message(msg, out)
        else:  # argparse keeps this unreachable
            raise MQClientError(f"unknown admin command {cmd!r}")
        return 0

    return await _with_admin(args.namesrv, go)


def _perm(perm: int) -> str:
    from .route import perm_to_string

    return perm_to_string(perm)


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


def _print_message(msg: Any, out: TextIO) -> None:
    props = dict(msg.properties)
    lines = [
        ("OffsetID:", msg.offset_msg_id),
        ("Topic:", msg.topic),
        ("Tags:", f"[{msg.tags or ''}]"),
        ("Keys:", f"[{' '.join(msg.keys)}]"),
        ("Queue ID:", msg.queue_id),
        ("Queue Offset:", msg.queue_offset),
        ("CommitLog Offset:", msg.commitlog_offset),
        ("Reconsume Times:", msg.reconsume_times),
        ("Born Timestamp:", fmt_ms(msg.born_timestamp)),
        ("Store Timestamp:", fmt_ms(msg.store_timestamp)),
        ("Born Host:", f"{msg.born_host[0]}:{msg.born_host[1]}"),
        ("Store Host:", f"{msg.store_host[0]}:{msg.store_host[1]}"),
        ("System Flag:", msg.sys_flag),
        ("Properties:", "{" + ", ".join(f"{k}={v}" for k, v in props.items()) + "}"),
        ("Message Body:", body_text(msg.body, 4096)),
    ]
    for k, v in lines:
        out.write(f"{k:<20} {v}\n")


# -- produce / consume ----------------------------------------------------------------------------


def _produce_parser(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser("produce", help="send messages (the body, or one message per stdin line)")
    _add_ns(p)
    p.add_argument("-t", "--topic", required=True, help="topic to send to")
    p.add_argument("-g", "--group", default="PYROCKETMQ_CLI_PRODUCER", help="producer group")
    p.add_argument("--tags", help="tag of every message")
    p.add_argument("--keys", help="keys of every message (space-separated)")
    p.add_argument("-p", "--property", action="append", default=[], metavar="K=V", help="user property (repeatable)")
    p.add_argument("-c", "--count", type=int, default=1, help="send --body this many times (default 1)")
    p.add_argument("-d", "--delay", type=int, default=0, help="delay level 1..18 (default none)")
    p.add_argument("--body", help="message body; without it each stdin line is one message")
    p.add_argument("--timeout", type=float, default=3.0, help="seconds per send (default 3)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only a summary")


def _consume_parser(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser("consume", help="read messages of a topic and print them")
    _add_ns(p)
    p.add_argument("-t", "--topic", required=True, help="topic to read")
    p.add_argument("-g", "--group", required=True, help="consumer group (offsets are committed for it)")
    p.add_argument("-s", "--subExpression", dest="expression", default="*", help="tags to accept: * or 'A || B'")
    p.add_argument("--from-beginning", action="store_true", help="start at the oldest stored message")
    p.add_argument("-c", "--count", type=int, default=0, help="stop after this many messages (default: no limit)")
    p.add_argument("--timeout", type=float, default=0.0,
                   help="stop when no message arrives for this many seconds (default: wait forever)")
    p.add_argument("--no-commit", action="store_true", help="do not commit the group's offsets")
    p.add_argument("-q", "--quiet", action="store_true", help="print only a summary")
    p.add_argument("--push", action="store_true",
                   help="consume as a push consumer: the group's members share the queues (rebalancing), "
                        "offsets are persisted as messages are printed")
    p.add_argument("--orderly", action="store_true", help="with --push: one queue at a time, in offset order")
    p.add_argument("--broadcast", action="store_true", help="with --push: every member gets every message")


def _properties(pairs: list[str], parser: argparse.ArgumentParser) -> dict[str, str]:
    out = {}
    for pair in pairs:
        k, sep, v = pair.partition("=")
        if not sep or not k:
            raise UsageError(parser, f"argument -p/--property: expected K=V, got {pair!r}")
        out[k] = v
    return out


async def run_produce(args: argparse.Namespace, parser: argparse.ArgumentParser, out: TextIO, stdin: TextIO) -> int:
    from .producer import Producer

    props = _properties(args.property, parser)
    if args.count < 1:
        raise UsageError(parser, "argument -c/--count: must be at least 1")

    def messages() -> Iterator[bytes]:
        if args.body is not None:
            for _ in range(args.count):
                yield args.body.encode()
        else:
            for line in stdin:
                line = line.rstrip("\n")
                if line:
                    yield line.encode()

    sent = 0
    started = time.monotonic()
    async with Producer(args.group, args.namesrv) as producer:
        for body in messages():
            msg = Message(args.topic, body, tags=args.tags, keys=args.keys, properties=props or None, delay_level=args.delay)
            result = await producer.send(msg, args.timeout)
            sent += 1
            if not args.quiet:
                out.write(send_result_line(result) + "\n")
                out.flush()
    out.write(f"sent {sent} message(s) to {args.topic} in {time.monotonic() - started:.2f}s\n")
    return 0


async def require_topic(namesrv: str, topic: str) -> None:
    """A consumer never creates its topic: say so at once rather than wait for messages that can't come."""
    from .admin import Admin
    from .errors import TopicNotFoundError

    async with Admin(namesrv) as admin:
        try:
            await admin.topic_route(topic)
        except TopicNotFoundError:
            raise MQClientError(
                f"topic {topic} does not exist on the name server(s) {namesrv}; create it first: "
                f"pyrocketmq admin updateTopic -n '{namesrv}' -c <cluster> -t {topic} "
                f"(consumers never create topics; autoCreateTopicEnable only lets producers do it)"
            ) from None


async def run_consume(args: argparse.Namespace, parser: argparse.ArgumentParser, out: TextIO) -> int:
    from .pull_consumer import PullConsumer
    from .settings import PullConsumerSettings

    if args.count < 0:
        raise UsageError(parser, "argument -c/--count: must not be negative")
    if not args.push and (args.orderly or args.broadcast):
        raise UsageError(parser, "--orderly and --broadcast need --push")
    if args.push and args.no_commit:
        raise UsageError(parser, "--no-commit cannot be combined with --push (a push consumer persists its offsets)")
    await require_topic(args.namesrv, args.topic)
    if args.push:
        return await run_push_consume(args, parser, out)
    settings = PullConsumerSettings(expression=args.expression, auto_commit=not args.no_commit,
                                    long_poll_ms=5000)
    received = 0
    async with PullConsumer(args.group, args.namesrv, settings) as consumer:
        queues = await consumer.fetch_queues(args.topic)
        await consumer.assign(queues)
        if args.from_beginning:
            await consumer.seek_to_begin(queues)
        idle_since = time.monotonic()
        while not args.count or received < args.count:
            wait = 1.0
            if args.timeout > 0:
                left = args.timeout - (time.monotonic() - idle_since)
                if left <= 0:
                    break
                wait = min(wait, left)
            msgs = await consumer.poll(wait)
            if not msgs:
                continue
            idle_since = time.monotonic()
            for m in msgs:
                if args.count and received >= args.count:
                    # put the rest back: the committed offset must not pass what was printed
                    consumer.seek(_mq_of(consumer, m), m.queue_offset)
                    continue
                received += 1
                if not args.quiet:
                    extra = user_properties(m.properties)
                    line = (f"[{m.topic} q{m.queue_id}@{m.queue_offset}] msgId={m.msg_id} "
                            f"tags={m.tags or ''} keys={' '.join(m.keys)}")
                    if extra:
                        line += " props=" + ",".join(f"{k}={v}" for k, v in extra.items())
                    out.write(f"{line} body={body_text(m.body, 1024)}\n")
                    out.flush()
        if not args.no_commit:
            await consumer.commit_sync()
    out.write(f"received {received} message(s) from {args.topic}\n")
    return 0


async def run_push_consume(args: argparse.Namespace, parser: argparse.ArgumentParser, out: TextIO) -> int:
    """``consume --push``: a PushConsumer prints what its listener gets; messages past ``--count``
    are held unanswered until shutdown, so the persisted offsets never pass what was printed."""
    from .push_consumer import ConsumeResult, PushConsumer
    from .settings import PushConsumerSettings

    if args.no_commit:
        raise UsageError(parser, "--no-commit cannot be combined with --push (a push consumer persists its offsets)")
    settings = PushConsumerSettings(consume_from="first" if args.from_beginning else "last",
                                    message_model="BROADCASTING" if args.broadcast else "CLUSTERING")
    received = 0
    last = time.monotonic()
    done = asyncio.Event()
    never = asyncio.Event()

    async def listener(msgs: list[Any], ctx: Any) -> ConsumeResult:
        nonlocal received, last
        for m in msgs:
            if args.count and received >= args.count:
                done.set()
                await never.wait()  # cancelled at shutdown: not acknowledged, consumed again later
            received += 1
            last = time.monotonic()
            if not args.quiet:
                out.write(f"[{m.topic} q{m.queue_id}@{m.queue_offset}] msgId={m.msg_id} tags={m.tags or ''} "
                          f"keys={' '.join(m.keys)} reconsumeTimes={m.reconsume_times} body={body_text(m.body, 1024)}\n")
                out.flush()
        if args.count and received >= args.count:
            done.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer(args.group, args.namesrv, settings)
    consumer.subscribe(args.topic, args.expression)
    consumer.register_listener(listener, orderly=args.orderly)
    await consumer.start()
    try:
        while not done.is_set():
            if args.timeout > 0 and time.monotonic() - last > args.timeout:
                break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(done.wait(), 0.2)
    finally:
        await consumer.shutdown(grace=2.0)
    out.write(f"received {received} message(s) from {args.topic}\n")
    return 0


def _mq_of(consumer: Any, msg: Any) -> Any:
    for mq in consumer.assignment():
        if mq.topic == msg.topic and mq.queue_id == msg.queue_id:
            return mq
    raise MQClientError(f"message of queue {msg.queue_id} is not from an assigned queue")


# -- bench -------------------------------------------------------------------------------------------
# ``bench produce|consume`` lives in .bench; this is the hook.


def _bench_parser(sub: argparse._SubParsersAction[Parser]) -> None:
    from .bench import add_parsers

    add_parsers(sub, _add_ns, Parser)


async def run_bench(args: argparse.Namespace, parser: argparse.ArgumentParser, out: TextIO) -> int:
    from . import bench

    return await bench.run(args, parser, out, UsageError)


# -- entry point ----------------------------------------------------------------------------------


def build_parser() -> tuple[Parser, dict[str, Parser]]:
    root = Parser(prog=PROG, description="pyrocketmq client commands")
    sub = root.add_subparsers(dest="command", metavar="{admin,produce,consume,bench}", parser_class=Parser)
    sub.required = True
    admin = sub.add_parser("admin", help="administer a cluster (mqadmin commands)", description="mqadmin-style commands")
    admin_sub = admin.add_subparsers(dest="admin_command", metavar="<command>", parser_class=Parser)
    admin_sub.required = True
    _admin_parsers(admin_sub)
    _produce_parser(sub)
    _consume_parser(sub)
    _bench_parser(sub)
    subparsers = {"admin": admin, **{name: p for name, p in sub.choices.items()}}
    bench_sub = next(a for a in sub.choices["bench"]._actions if isinstance(a, argparse._SubParsersAction))
    subparsers.update({f"bench {n}": p for n, p in bench_sub.choices.items()})
    subparsers.update({f"admin {n}": p for n, p in admin_sub.choices.items()})
    return root, subparsers


def _which_parser(argv: list[str], parsers: dict[str, Parser], root: Parser) -> argparse.ArgumentParser:
    if len(argv) >= 2 and argv[0] == "admin" and f"admin {argv[1]}" in parsers:
        return parsers[f"admin {argv[1]}"]
    if len(argv) >= 2 and argv[0] == "bench" and f"bench {argv[1]}" in parsers:
        return parsers[f"bench {argv[1]}"]
    if argv and argv[0] in parsers:
        return parsers[argv[0]]
    return root


def main(argv: list[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None,
         stdin: TextIO | None = None) -> int:
    """Run a client command; returns the exit status (0 ok, 1 failed, 2 bad arguments).

    Example::

        main(["admin", "topicList", "-n", "127.0.0.1:9876"])
        main(["produce", "-n", "127.0.0.1:9876", "-t", "TopicTest", "--body", "hello", "-c", "10"])
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    inp = stdin or sys.stdin
    debug = bool(os.environ.get("PYROCKETMQ_DEBUG"))
    logging.basicConfig(level=logging.DEBUG if debug else logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    root, parsers = build_parser()
    try:
        try:
            args = root.parse_args(args_list)
        except SystemExit as e:  # -h / --help
            return int(e.code or 0)
        if args.command == "admin":
            return asyncio.run(run_admin(args, out))
        parser = parsers[args.command]
        if args.command == "produce":
            return asyncio.run(run_produce(args, parser, out, inp))
        if args.command == "consume":
            return asyncio.run(run_consume(args, parser, out))
        if args.command == "bench":
            parser = parsers[f"bench {args.bench_command}"]
            return asyncio.run(run_bench(args, parser, out))
        raise UsageError(root, f"unknown command {args.command!r}")
    except UsageError as e:
        usage: argparse.ArgumentParser = e.parser if e.parser is not root else _which_parser(args_list, parsers, root)
        err.write(usage.format_usage())
        err.write(f"{usage.prog}: error: {e}\n")
        return 2
    except KeyboardInterrupt:
        err.write("interrupted\n")
        return 130
    except MQConnectionError as e:
        _fail(err, str(e), e, debug)
        return 1
    except MQError as e:
        _fail(err, f"error: {e}", e, debug)
        return 1
    except Exception as e:  # a bug of ours: still one line unless debugging
        _fail(err, f"internal error: {type(e).__name__}: {e} (set PYROCKETMQ_DEBUG=1 for details)", e, debug)
        return 1


def _fail(err: TextIO, line: str, exc: BaseException, debug: bool) -> None:
    err.write(line.splitlines()[0] if line else "error\n")
    err.write("\n")
    for note in getattr(exc, "__notes__", ()) or ():
        err.write(f"  {note}\n")
    if debug:
        import traceback

        traceback.print_exception(exc, file=err)
