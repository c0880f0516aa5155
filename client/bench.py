"""``pyrocketmq bench produce|consume``: size a deployment with the Python client.

``produce`` keeps ``-w`` sends (or batches, ``--batch N``) in flight on one producer for ``-q``
messages or ``--duration`` seconds; ``consume`` runs a push consumer of a fresh group (from the
first offset by default, so it drains what is there) until ``-q`` messages or ``--duration``. Both
print a progress line once a second on stderr (a bar when the end is known) and a summary on
stdout (one line, wrapped here)::

    produce: 200000 msg in 20.01 s = 9995 msg/s (1.22 MiB/s), failed 0;
        RT ms avg 6.38 p50 6.10 p99 14.2 max 41.0

``--json`` prints the summary as one JSON object instead (the side-by-side harness in ``bench/``
reads it). Samples taken during ``--warmup`` seconds count neither towards the rate nor the RTs.
RTs are per request (one batch is one request); consume latency is store → listener, from the
broker's store timestamp (millisecond resolution, same host clock assumed).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from array import array
from dataclasses import dataclass, field
from typing import Any, TextIO

import orjson

from pyrocketmq.remoting.names import BENCHMARK_TOPIC

from .cli_common import client_settings
from .errors import MQError
from .message import Message


@dataclass
class Recorder:
    """Counts and latency samples after the warm-up; a progress line from the live counters."""

    warmup: float = 0.0
    started: float = field(default_factory=time.monotonic)
    count: int = 0  # all messages, warm-up included (progress)
    measured: int = 0
    failed: int = 0
    samples: array[float] = field(default_factory=lambda: array("d"))
    measure_from: float = 0.0
    last_at: float = 0.0

    def __post_init__(self) -> None:
        self.measure_from = self.started + self.warmup

    def ok(self, n: int, began: float, latency: float) -> None:
        self.count += n
        now = time.monotonic()
        self.last_at = now
        if began >= self.measure_from:
            self.measured += n
            self.samples.append(latency)

    def summary(self, size: int) -> dict[str, Any]:
        end = self.last_at or time.monotonic()
        seconds = max(1e-9, end - self.measure_from)
        lat = sorted(self.samples)
        n = len(lat)

        def pct(p: float) -> float:
            return round(lat[min(n - 1, max(0, int(n * p + 0.999999) - 1))] * 1000, 3) if n else 0.0

        tps = self.measured / seconds
        return {
            "messages": self.measured,
            "total": self.count,
            "failed": self.failed,
            "seconds": round(seconds, 3),
            "tps": round(tps, 1),
            "mib_per_s": round(tps * size / 2**20, 3),
            "requests": n,
            "rt_avg_ms": round(sum(lat) / n * 1000, 3) if n else 0.0,
            "rt_p50_ms": pct(0.5),
            "rt_p99_ms": pct(0.99),
            "rt_max_ms": pct(1.0),
        }


class Progress:
    """One line per second on ``err``: a bar towards ``total``/``duration`` when known."""

    def __init__(self, rec: Recorder, label: str, err: TextIO, total: int, duration: float) -> None:
        self.rec, self.label, self.err = rec, label, err
        self.total, self.duration = total, duration
        self.tty = err.isatty()
        self._prev = (rec.started, 0)

    def line(self) -> str:
        now = time.monotonic()
        t_prev, c_prev = self._prev
        rate = (self.rec.count - c_prev) / max(1e-9, now - t_prev)
        self._prev = (now, self.rec.count)
        elapsed = now - self.rec.started
        if self.total:
            frac = self.rec.count / self.total
        elif self.duration:
            frac = elapsed / self.duration
        else:
            frac = -1.0
        bar = ""
        if frac >= 0:
            filled = int(min(1.0, frac) * 20)
            bar = f"[{'#' * filled}{'.' * (20 - filled)}] {min(100.0, frac * 100):3.0f}% "
        recent = self.rec.samples[-2000:]
        avg = sum(recent) / len(recent) * 1000 if recent else 0.0
        latency = "RT avg" if self.label == "produce" else "store->consume avg"
        return (f"{self.label} {bar}{elapsed:6.1f}s {self.rec.count:>10} msg {rate:>9.0f} msg/s "
                f"{latency} {avg:.2f} ms failed {self.rec.failed}")

    async def run(self) -> None:
        try:
            while True:
                await asyncio.sleep(1.0)
                self.show()
        except asyncio.CancelledError:
            pass

    def show(self, final: bool = False) -> None:
        text = self.line()
        if self.tty:
            self.err.write("\r" + text + ("\n" if final else ""))
        else:
            self.err.write(text + "\n")
        self.err.flush()


def add_parsers(
    sub: argparse._SubParsersAction[Any], add_ns: Any, parser_class: type
) -> argparse.ArgumentParser:
    bench: argparse.ArgumentParser = sub.add_parser(
        "bench",
        help="load-test a cluster with the Python client (produce | consume)",
        description="load-test a cluster with the Python client",
    )
    bench_sub: argparse._SubParsersAction[Any] = bench.add_subparsers(
        dest="bench_command", metavar="{produce,consume}", parser_class=parser_class
    )
    bench_sub.required = True
    p = bench_sub.add_parser("produce", help="send as fast as the in-flight limit allows; report TPS and RT")
    add_ns(p)
    p.add_argument("-t", "--topic", default=BENCHMARK_TOPIC, help=f"topic (default {BENCHMARK_TOPIC})")
    p.add_argument("-s", "--size", type=int, default=128, help="body size in bytes (default 128)")
    p.add_argument("-w", "--threads", dest="concurrency", type=int, default=64,
                   help="requests in flight (default 64)")
    p.add_argument("-q", "--count", type=int, default=0, help="messages to send (default: run --duration)")
    p.add_argument("--duration", type=float, default=0.0, help="seconds to run (default 10 unless -q)")
    p.add_argument("--batch", type=int, default=1, help="messages per request (default 1: no batching)")
    _common(p)
    c = bench_sub.add_parser("consume", help="consume with a push consumer; report TPS and latency")
    add_ns(c)
    c.add_argument("-t", "--topic", default=BENCHMARK_TOPIC, help=f"topic (default {BENCHMARK_TOPIC})")
    c.add_argument("-g", "--group", default="", help="consumer group (default: a fresh one)")
    c.add_argument("-q", "--count", type=int, default=0, help="stop after this many messages")
    c.add_argument("--duration", type=float, default=0.0, help="seconds to run (default 10 unless -q)")
    c.add_argument(
        "--from-last", action="store_true", help="a new group starts at the end, not the beginning"
    )
    c.add_argument("--idle", type=float, default=0.0, help="stop after this many seconds without a message")
    _common(c)
    return bench


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--warmup", type=float, default=0.0, help="seconds not counted at the start (default 0)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def _check(args: argparse.Namespace, parser: argparse.ArgumentParser, usage_error: type) -> None:
    if getattr(args, "size", 1) < 1 or getattr(args, "concurrency", 1) < 1 or getattr(args, "batch", 1) < 1:
        raise usage_error(parser, "size, threads and batch must be positive")
    if args.count < 0 or args.duration < 0 or args.warmup < 0:
        raise usage_error(parser, "count, duration and warmup must not be negative")
    if not args.count and not args.duration:
        args.duration = 10.0


async def run(args: argparse.Namespace, parser: argparse.ArgumentParser, out: TextIO, usage_error: type,
              err: TextIO | None = None) -> int:
    _check(args, parser, usage_error)
    err = err or sys.stderr
    if args.bench_command == "produce":
        summary = await produce(args, err)
        size = args.size
    else:
        summary = await consume(args, err)
        size = summary.pop("bytes_avg", 0)
    if args.json:
        out.write(orjson.dumps(summary).decode() + "\n")
    else:
        out.write(
            f"{args.bench_command}: {summary['messages']} msg in {summary['seconds']:.2f} s = "
            f"{summary['tps']:.0f} msg/s ({summary['tps'] * size / 2**20:.2f} MiB/s), "
            f"failed {summary['failed']}; "
            f"{'RT' if args.bench_command == 'produce' else 'store->consume'} ms avg "
            f"{summary['rt_avg_ms']:.2f} "
            f"p50 {summary['rt_p50_ms']:.2f} p99 {summary['rt_p99_ms']:.2f} max {summary['rt_max_ms']:.2f}\n"
        )
    return 0 if summary["failed"] == 0 else 1


async def produce(args: argparse.Namespace, err: TextIO) -> dict[str, Any]:
    from .producer import Producer

    body = b"x" * args.size
    batch = args.batch
    async with Producer(
        f"PYROCKETMQ_BENCH_{uuid.uuid4().hex[:8]}", args.namesrv, client=client_settings(args)
    ) as producer:
        await producer.send(Message(args.topic, body))  # route + connection warm-up
        rec = Recorder(warmup=args.warmup)
        end = rec.started + args.duration if args.duration else float("inf")
        left = args.count or -1

        async def worker() -> None:
            nonlocal left
            while time.monotonic() < end and left != 0:
                n = batch if left < 0 else min(batch, left)
                if left > 0:
                    left -= n
                msg: Message | list[Message] = (
                    Message(args.topic, body) if batch == 1 else [Message(args.topic, body) for _ in range(n)]
                )
                t0 = time.monotonic()
                try:
                    await producer.send(msg)
                except MQError:
                    rec.failed += n
                    await asyncio.sleep(0.05)
                    continue
                rec.ok(n, t0, time.monotonic() - t0)

        progress = Progress(rec, "produce", err, args.count, args.duration)
        ticker = None if args.no_progress else asyncio.create_task(progress.run())
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        if ticker is not None:
            ticker.cancel()
            progress.show(final=True)
    return rec.summary(args.size)


async def consume(args: argparse.Namespace, err: TextIO) -> dict[str, Any]:
    from .consume_service import ConsumeResult
    from .push_consumer import PushConsumer
    from .settings import PushConsumerSettings

    group = args.group or f"PYROCKETMQ_BENCH_{uuid.uuid4().hex[:8]}"
    rec = Recorder(warmup=args.warmup)
    done = asyncio.Event()
    body_bytes = 0

    async def listener(msgs: list[Any]) -> ConsumeResult:
        nonlocal body_bytes
        now_ms = time.time() * 1000
        now = time.monotonic()
        for m in msgs:
            body_bytes += len(m.body or b"")
            rec.ok(1, now, max(0.0, now_ms - m.store_timestamp) / 1000)
        if args.count and rec.count >= args.count:
            done.set()
        return ConsumeResult.SUCCESS

    settings = PushConsumerSettings(consume_from="last" if args.from_last else "first")
    consumer = PushConsumer(group, args.namesrv, settings, client=client_settings(args))
    consumer.subscribe(args.topic, "*")
    consumer.register_listener(listener)
    await consumer.start()
    rec.started = time.monotonic()
    rec.measure_from = rec.started + args.warmup
    progress = Progress(rec, "consume", err, args.count, args.duration)
    ticker = None if args.no_progress else asyncio.create_task(progress.run())
    try:
        deadline = rec.started + args.duration if args.duration else float("inf")
        while not done.is_set() and time.monotonic() < deadline:
            if args.idle and rec.last_at and time.monotonic() - rec.last_at > args.idle:
                break
            try:
                await asyncio.wait_for(done.wait(), timeout=0.2)
            except TimeoutError:
                pass
    finally:
        if ticker is not None:
            ticker.cancel()
            progress.show(final=True)
        await consumer.shutdown()
    summary = rec.summary(0)
    summary["group"] = group
    summary["bytes_avg"] = body_bytes / rec.count if rec.count else 0
    return summary
