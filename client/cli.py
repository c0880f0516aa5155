"""The client side of the ``pyrocketmq`` command: ``admin <command>``, ``produce``, ``consume``, ``bench``.

``main(argv)`` gets the arguments after ``pyrocketmq`` (``["admin", "topicList", "-n", …]``) and
returns the exit status:

- 0 — done;
- 1 — the cluster said no or could not be reached: one line on stderr, e.g.
  ``cannot reach name server 127.0.0.1:9876: connection refused`` (never a traceback; set
  ``PYROCKETMQ_DEBUG=1`` to see one);
- 2 — bad arguments: the usage of the (sub-)command and what is wrong, on stderr.

Admin commands keep ``mqadmin``'s names and flags (``updateTopic -n ADDR -c CLUSTER -t TOPIC
-r 8 -w 8 -p 6``) and print tables aligned as mqadmin does, so scripts and habits carry over; they
are declared in :mod:`.mqadmin` (its ``registry`` is the table of them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

from .cli_common import (
    PROG,
    Parser,
    UsageError,
    _add_ns,
    body_text,
    client_settings,
    send_result_line,
)
from .errors import MQClientError, MQConnectionError, MQError
from .message import Message, user_properties
from .mqadmin.registry import add_parser as add_admin_parser, run_admin
from .pulling import MessageSelector
from .settings import ClientSettings

# -- produce / consume ----------------------------------------------------------------------------


def _produce_parser(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser("produce", help="send messages (the body, or one message per stdin line)")
    _add_ns(p)
    p.add_argument("-t", "--topic", required=True, help="topic to send to")
    p.add_argument("-g", "--group", default="PYROCKETMQ_CLI_PRODUCER", help="producer group")
    p.add_argument("--tags", help="tag of every message")
    p.add_argument("--keys", help="keys of every message (space-separated)")
    p.add_argument(
        "-p", "--property", action="append", default=[], metavar="K=V", help="user property (repeatable)"
    )
    p.add_argument("-c", "--count", type=int, default=1, help="send --body this many times (default 1)")
    p.add_argument("-d", "--delay", type=int, default=0, help="delay level 1..18 (default none)")
    p.add_argument("--deliver-in", type=float, default=0.0, metavar="SECONDS",
                   help="deliver this many seconds from now, to the millisecond (a timer message)")
    p.add_argument("--body", help="message body; without it each stdin line is one message")
    p.add_argument("--timeout", type=float, default=3.0, help="seconds per send (default 3)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only a summary")


def _consume_parser(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser("consume", help="read messages of a topic and print them")
    _add_ns(p)
    p.add_argument("-t", "--topic", required=True, help="topic to read")
    p.add_argument("-g", "--group", required=True, help="consumer group (offsets are committed for it)")
    p.add_argument(
        "-s", "--subExpression", dest="expression", default="*", help="tags to accept: * or 'A || B'"
    )
    p.add_argument(
        "--sql",
        metavar="SELECTOR",
        help="a SQL92 selector over message properties instead of tags, "
        "e.g. \"price > 10 AND region = 'eu'\" (the broker needs enablePropertyFilter=true)",
    )
    p.add_argument("--from-beginning", action="store_true", help="start at the oldest stored message")
    p.add_argument(
        "-c", "--count", type=int, default=0, help="stop after this many messages (default: no limit)"
    )
    p.add_argument("--timeout", type=float, default=0.0,
                   help="stop when no message arrives for this many seconds (default: wait forever)")
    p.add_argument("--no-commit", action="store_true", help="do not commit the group's offsets")
    p.add_argument("-q", "--quiet", action="store_true", help="print only a summary")
    p.add_argument("--push", action="store_true",
                   help="consume as a push consumer: the group's members share the queues (rebalancing), "
                        "offsets are persisted as messages are printed")
    p.add_argument("--max-rate", type=float, default=0.0, metavar="N",
                   help="handle at most N messages per second (a slow downstream; default: no limit)")
    p.add_argument("--orderly", action="store_true", help="with --push: one queue at a time, in offset order")
    p.add_argument("--broadcast", action="store_true", help="with --push: every member gets every message")


def _selector(args: argparse.Namespace) -> str | MessageSelector:
    return MessageSelector.by_sql(args.sql) if args.sql else args.expression


def _properties(pairs: list[str], parser: argparse.ArgumentParser) -> dict[str, str]:
    out = {}
    for pair in pairs:
        k, sep, v = pair.partition("=")
        if not sep or not k:
            raise UsageError(parser, f"argument -p/--property: expected K=V, got {pair!r}")
        out[k] = v
    return out


async def run_produce(
    args: argparse.Namespace, parser: argparse.ArgumentParser, out: TextIO, stdin: TextIO
) -> int:
    from .producer import Producer

    props = _properties(args.property, parser)
    if args.count < 1:
        raise UsageError(parser, "argument -c/--count: must be at least 1")
    if args.deliver_in < 0 or (args.deliver_in and args.delay):
        raise UsageError(parser, "argument --deliver-in: must be positive, and not with -d/--delay")

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
    async with Producer(args.group, args.namesrv, client=client_settings(args)) as producer:
        for body in messages():
            due = int(time.time() * 1000 + args.deliver_in * 1000) if args.deliver_in > 0 else 0
            msg = Message(args.topic, body, tags=args.tags, keys=args.keys, properties=props or None,
                          delay_level=args.delay, deliver_time_ms=due)
            result = await producer.send(msg, args.timeout)
            sent += 1
            if not args.quiet:
                out.write(send_result_line(result) + "\n")
                out.flush()
    out.write(f"sent {sent} message(s) to {args.topic} in {time.monotonic() - started:.2f}s\n")
    return 0


async def require_topic(namesrv: str, topic: str, client: ClientSettings | None = None) -> None:
    """A consumer never creates its topic: say so at once rather than wait for messages that can't come."""
    from .admin import Admin
    from .errors import TopicNotFoundError

    async with Admin(namesrv, client=client) as admin:
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
    if args.max_rate < 0:
        raise UsageError(parser, "argument --max-rate: must not be negative")
    if not args.push and (args.orderly or args.broadcast):
        raise UsageError(parser, "--orderly and --broadcast need --push")
    if args.push and args.no_commit:
        raise UsageError(
            parser, "--no-commit cannot be combined with --push (a push consumer persists its offsets)"
        )
    await require_topic(args.namesrv, args.topic, client_settings(args))
    if args.push:
        return await run_push_consume(args, parser, out)
    settings = PullConsumerSettings(expression=_selector(args), auto_commit=not args.no_commit,
                                    long_poll_ms=5000)
    received = 0
    async with PullConsumer(args.group, args.namesrv, settings, client=client_settings(args)) as consumer:
        queues = await consumer.fetch_queues(args.topic)
        await consumer.assign(queues)
        if args.from_beginning:
            await consumer.seek_to_begin(queues)
        idle_since = time.monotonic()
        pace = Pacer(args.max_rate)
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
                await pace.take()
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
        raise UsageError(parser, "--no-commit cannot be combined with --push "
                         "(a push consumer persists its offsets)")
    settings = PushConsumerSettings(consume_from="first" if args.from_beginning else "last",
                                    message_model="BROADCASTING" if args.broadcast else "CLUSTERING")
    received = 0
    last = time.monotonic()
    done = asyncio.Event()
    never = asyncio.Event()
    pace = Pacer(args.max_rate)

    async def listener(msgs: list[Any], ctx: Any) -> ConsumeResult:
        nonlocal received, last
        for m in msgs:
            if args.count and received >= args.count:
                done.set()
                await never.wait()  # cancelled at shutdown: not acknowledged, consumed again later
            await pace.take()
            received += 1
            last = time.monotonic()
            if not args.quiet:
                out.write(
                    f"[{m.topic} q{m.queue_id}@{m.queue_offset}] msgId={m.msg_id} tags={m.tags or ''} "
                    f"keys={' '.join(m.keys)} reconsumeTimes={m.reconsume_times} "
                    f"body={body_text(m.body, 1024)}\n"
                )
                out.flush()
        if args.count and received >= args.count:
            done.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer(args.group, args.namesrv, settings, client=client_settings(args))
    consumer.subscribe(args.topic, _selector(args))
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


class Pacer:
    """``--max-rate``: spaces :meth:`take` calls 1/rate seconds apart (no limit at rate 0)."""

    def __init__(self, rate: float) -> None:
        self.gap = 1.0 / rate if rate > 0 else 0.0
        self.next = 0.0

    async def take(self) -> None:
        if not self.gap:
            return
        now = time.monotonic()
        slot = max(now, self.next)
        self.next = slot + self.gap
        if slot > now:
            await asyncio.sleep(slot - now)


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
    admin, admin_parsers = add_admin_parser(sub)
    _produce_parser(sub)
    _consume_parser(sub)
    _bench_parser(sub)
    subparsers = {"admin": admin, **{name: p for name, p in sub.choices.items()}}
    bench_sub = next(a for a in sub.choices["bench"]._actions if isinstance(a, argparse._SubParsersAction))
    subparsers.update({f"bench {n}": p for n, p in bench_sub.choices.items()})
    subparsers.update({f"admin {n}": p for n, p in admin_parsers.items()})
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
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.ERROR, format="%(levelname)s %(name)s: %(message)s"
    )
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
    except (UsageError, argparse.ArgumentTypeError) as e:  # the latter: a verb's check of its options
        given = e.parser if isinstance(e, UsageError) else root
        usage: argparse.ArgumentParser = (
            given if given is not root else _which_parser(args_list, parsers, root)
        )
        err.write(usage.format_usage())
        err.write(f"{usage.prog}: error: {e}\n")
        return 2
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as Unix tools do
        if out is sys.stdout:
            # no second error when Python flushes stdout at exit
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
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
