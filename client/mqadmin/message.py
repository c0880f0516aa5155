"""Verbs on stored messages: find one by offset id, unique id, key or queue offset, print a time range
of a topic, read a message's trace."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, TextIO

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.message import MessageExt

from ..cli_common import _bool, _timestamp, body_text, charset, fmt_ms, int_range
from ..errors import MQClientError
from .verb import TOPIC, Verb, opt

if TYPE_CHECKING:
    from ..admin import Admin
    from ..trace import TraceRecord


async def query_msg_by_id(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    print_message(await admin.find_message(args.msg_id, args.topic), out)


async def query_msg_by_key(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    end = args.end if args.end is not None else int(time.time() * 1000)
    msgs = await admin.query_message_by_key(args.topic, args.key, args.begin, end, args.max_num)
    out.write(f"{'#Message ID':<50} {'#QID':>4} {'#Offset':>40}\n")
    for m in msgs:
        out.write(f"{m.msg_id:<50} {m.queue_id:>4} {m.queue_offset:>40}\n")


async def query_msg_by_unique_key(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    msgs = await admin.query_message_by_unique_key(args.topic, args.msg_id)
    if not msgs:
        raise MQClientError(f"no message with unique id {args.msg_id} in topic {args.topic}")
    for m in msgs if args.show_all else msgs[:1]:
        print_message(m, out)


async def query_msg_by_offset(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    mq = MessageQueue(args.topic, args.broker, args.queue_id)
    print_message(await admin.message_at(mq, args.offset), out)


async def query_msg_trace_by_id(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    """Apache's columns: the ``Pub`` records, then the consumers' (``SubAfter``) as ``Sub``."""
    import datetime

    from ..trace import decode_traces

    traces = await admin.query_message_by_key(args.trace_topic, args.msg_id, 0, int(time.time() * 1000), 64)
    rows = [(r, m) for m in traces for r in decode_traces(m.body.decode("utf-8", "replace"))
            if r.msg_id == args.msg_id]

    def line(kind: str, r: TraceRecord, host: str) -> str:
        when = datetime.datetime.fromtimestamp(r.timestamp / 1000).strftime("%Y-%m-%d %H:%M:%S")
        status = "success" if r.success else "failed"
        return f"{kind:<10} {r.group:<20} {host:<20} {when:<20} {f'{r.cost_ms}ms':<10} {status:<10}\n"

    out.write(f"{'#Type':<10} {'#ProducerGroup':<20} {'#ClientHost':<20} {'#SendTime':<20} "
              f"{'#CostTimes':<10} {'#Status':<10}\n")
    for r, m in rows:
        if r.kind == "Pub":
            out.write(line("Pub", r, f"{m.born_host[0]}"))
    out.write("\n")
    out.write(f"{'#Type':<10} {'#ConsumerGroup':<20} {'#ClientHost':<20} {'#ConsumerTime':<20} "
              f"{'#CostTimes':<10} {'#Status':<10}\n")
    for r, m in rows:
        if r.kind == "SubAfter":
            out.write(line("Sub", r, f"{m.born_host[0]}"))


async def print_msg(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    from ..admin_lookups import between
    from ..pulling import parse_expression

    sub = parse_expression(args.expression)
    queues = await admin.instance.subscribe_queues(args.topic)
    for mq in sorted(queues, key=lambda q: (q.broker_name, q.queue_id)):
        lo = (await admin.search_offset(mq, args.begin) if args.begin is not None
              else await admin.min_offset(mq))
        hi = await admin.search_offset(mq, args.end) if args.end is not None else await admin.max_offset(mq)
        out.write(f"minOffset={lo}, maxOffset={hi}, MessageQueue [topic={mq.topic}, "
                  f"brokerName={mq.broker_name}, queueId={mq.queue_id}]\n")  # fmt: skip
        async for m in between(admin.instance, mq, lo, hi):
            if not sub.matches(m.tags):
                continue
            body = m.body.decode(args.charset, "replace") if args.print_body else "NOT PRINT BODY"
            out.write(f"MSGID: {m.msg_id} [queueOffset={m.queue_offset}, "
                      f"storeTimestamp={fmt_ms(m.store_timestamp)}, "
                      f"tags={m.tags or ''}, keys={' '.join(m.keys)}] BODY: {body}\n")  # fmt: skip


def print_message(msg: MessageExt, out: TextIO) -> None:
    props = dict(msg.properties)
    lines: list[tuple[str, object]] = [
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


VERBS = (
    Verb("queryMsgById", "show a message by offset id (or unique id with -t)", query_msg_by_id, (
        opt("-i", "--msgId", dest="msg_id", required=True, help="offset message id, or unique id with -t"),
        opt("-t", "--topic", help="topic (needed for a unique id)"),
    )),
    Verb("queryMsgByKey", "list a topic's messages with a key (through the brokers' index)",
         query_msg_by_key, (
        TOPIC,
        opt("-k", "--msgKey", dest="key", required=True, help="message key"),
        opt("-b", "--beginTimestamp", dest="begin", type=_timestamp, default=0,
            help="stored from: ms since the epoch or yyyy-MM-dd#HH:mm:ss:SSS (default: the beginning)"),
        opt("-e", "--endTimestamp", dest="end", type=_timestamp, help="stored until (default: now)"),
        opt("-c", "--maxNum", dest="max_num", type=int_range(1), default=64,
            help="at most this many (default 64)"),
    )),
    Verb("queryMsgByUniqueKey", "show a message by its unique id (UNIQ_KEY)", query_msg_by_unique_key, (
        opt("-i", "--msgId", dest="msg_id", required=True, help="the producer's message id (UNIQ_KEY)"),
        TOPIC,
        opt("-a", "--showAll", dest="show_all", switch=True, help="every copy (retries), not just the first"),
    )),
    Verb("queryMsgByOffset", "show the message at a queue offset", query_msg_by_offset, (
        TOPIC,
        opt("-b", "--brokerName", dest="broker", required=True, help="broker name"),
        opt("-i", "--queueId", dest="queue_id", type=int, required=True, help="queue id"),
        opt("-o", "--offset", type=int, required=True, help="queue offset"),
    )),
    Verb("queryMsgTraceById", "the trace of a message: who sent it and who consumed it, when",
         query_msg_trace_by_id, (
        opt("-i", "--msgId", dest="msg_id", required=True, help="the message id (UNIQ_KEY)"),
        opt("-t", "--traceTopic", dest="trace_topic", default="RMQ_SYS_TRACE_TOPIC",
            help="trace topic (default RMQ_SYS_TRACE_TOPIC)"),
    )),
    Verb("printMsg", "print a topic's messages stored between two times", print_msg, (
        TOPIC,
        opt("-c", "--charsetName", dest="charset", type=charset, default="UTF-8",
            help="body charset (default UTF-8)"),
        opt("-s", "--subExpression", dest="expression", default="*", help="tags to print: * or 'A || B'"),
        opt("-b", "--beginTimestamp", dest="begin", type=_timestamp,
            help="from: ms since the epoch or yyyy-MM-dd#HH:mm:ss:SSS (default: the oldest message)"),
        opt("-e", "--endTimestamp", dest="end", type=_timestamp, help="until (default: the newest)"),
        opt("-d", "--printBody", dest="print_body", type=_bool, default=True,
            help="print bodies (default true)"),
    )),
)
