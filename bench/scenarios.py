"""The workloads, each run the same way against both brokers, and the parsing of their output.

name: generator → figures

- ``send-<size>-<threads>``: ``org.apache.rocketmq.example.benchmark.Producer`` (rocketmq-example 4.7.0)
  → send TPS, RT avg / max
- ``batch-java``: ``bench/java/BatchSend.java`` (BatchProducer's loop: ``send(Collection)``)
  → msg/s, RT avg / p99 per batch
- ``batch-python``: ``pyrocketmq bench produce --batch`` (our client) → msg/s, RT avg / p99 per batch
- ``drain``: backlog by ``BatchSend``, drained by ``bench/java/Drain.java`` (a push consumer) → consume TPS
- ``latency``: ``bench/java/FixedRateLatency.java`` at a fixed rate → e2e p50 / p99, send RT
- ``grpc5-send``: ``bench/java5/Grpc5Bench.java`` (official 5.x Java client), sync sends
  → send TPS, RT avg / p99
- ``grpc5-receive``: a backlog by ``Grpc5Bench fill``, then ``Grpc5Bench receive`` (SimpleConsumer receive
  + ack) → acked msg/s
- ``topics-<n>``: a broker started with ``n`` topics of 8 queues, ``bench/java/ManyTopics.java`` sending to
  all of them → send TPS, RT, route lookup p50 / p99, REGISTER_BROKER bytes and time (``bench/relay.py``),
  open files, mappings, memory

The ``grpc5-*`` rows compare our broker's gRPC endpoint with Apache RocketMQ 5.2.0's proxy in local mode
(``protocol="grpc5"``); the others (the 4.x remoting protocol) with Apache's 4.9.7 broker and its 5.5.1
broker (``clusters.PEERS``), each started the same way.

The Apache Producer prints one line per 10 s, each covering the last 10 s::

    Send TPS: 15230 Max RT: 120 Average RT:   4.197 Send Failed: 0 Response Failed: 0

The first line includes the JVM's warm-up, so it is dropped when a later one exists. The benchmark
Consumer prints ``TPS: … AVG(B2C) RT: …`` lines the same way, 10 s windows whose end cannot be lined
up with the end of a backlog (and committed offsets trail by up to 5 s), so the drain runs a
``DefaultMQPushConsumer`` with the benchmark Consumer's settings that times the backlog exactly:
backlog / (last message − first message).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import clusters
from bench.relay import RegistrationRelay
from tests.conformance import jvm
from tests.helpers.cluster import REPO_ROOT, Cluster

BENCH_JAVA = Path(__file__).with_name("java")
BENCH_JAVA5 = Path(__file__).with_name("java5")
PRODUCER_MAIN = "org.apache.rocketmq.example.benchmark.Producer"
# Load generators run the JIT fully (C2) with room for 64 threads of in-flight requests.
GENERATOR_JVM_FLAGS = ["-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-Dfile.encoding=UTF-8"]

SEND_LINE = re.compile(
    r"Send TPS: (?P<tps>\d+) Max RT: (?P<max>\d+) Average RT:\s*(?P<avg>[\d.]+) "
    r"Send Failed: (?P<failed>\d+) Response Failed: (?P<rfailed>\d+)"
)


@dataclass
class Plan:
    """Durations and sizes of one benchmark run (``--smoke`` and ``--scale`` shrink them)."""

    send_seconds: float = 22.0
    grpc_seconds: float = 15.0
    grpc_backlog: int = 100_000
    batch_seconds: float = 16.0
    warmup_seconds: float = 5.0
    backlog: int = 1_000_000
    latency_rate: int = 2000
    latency_seconds: float = 15.0
    latency_warmup: float = 3.0
    batch_size: int = 32
    topics_seconds: float = 20.0
    """Timed sends of a ``topics-<n>`` row (after one warm-up send to every topic)."""
    topics_threads: int = 16
    consume_sample: int = 16
    """Topics a push consumer subscribes to during a ``topics-<n>`` row's timed sends."""
    route_sample: int = 1000
    """GET_ROUTEINFO_BY_TOPIC lookups timed after a ``topics-<n>`` row's sends."""


@dataclass
class Result:
    scenario: str
    broker: str
    flush: str
    figures: dict[str, float | None] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    flush: str
    run: Callable[[Context, Plan], dict[str, Any]]
    describe: str
    protocol: str = "remoting"
    """``remoting`` (4.x) or ``grpc5``: picks the Apache peers the row compares with (``clusters.PEERS``);
    ``grpc5`` rows need a gRPC endpoint."""
    topics: int = 0
    """Topics written into the store before the broker starts (``clusters.write_topics``): a row with
    topics runs on a broker of its own, which registers with its name server through a
    ``RegistrationRelay``."""


@dataclass
class Context:
    """What a scenario needs: the running cluster, the Java programs, a log folder, a topic maker."""

    cluster: Cluster
    java: jvm.JavaPrograms
    logs: Path
    seq: int = 0
    restart_window: Callable[[], None] = lambda: None
    """Called after a scenario's preparation (the drain's backlog fill): CPU and RSS count from here."""
    grpc_endpoint: str | None = None
    java5: jvm.JavaPrograms | None = None
    """The 5.x programs (``bench/java5``), for the ``grpc5`` rows."""
    sampler: clusters.ProcessSampler | None = None
    """The broker process's sampler (its pid, its memory now)."""
    relay: RegistrationRelay | None = None
    """What carried the broker's registrations (the ``topics-<n>`` rows)."""

    def fresh_topic(self, stem: str) -> str:
        self.seq += 1
        topic = f"Bench_{stem}_{self.seq}".replace("-", "_")
        clusters.create_topic(self.cluster, topic)
        return topic


def parse_send_lines(text: str) -> dict[str, float | None]:
    """Send TPS and RTs from the Apache Producer's report lines (warm-up line dropped)."""
    lines = [m.groupdict() for m in SEND_LINE.finditer(text)]
    if not lines:
        return {}
    steady = lines[1:] or lines
    return {
        "send_tps": sum(float(x["tps"]) for x in steady) / len(steady),
        "rt_avg_ms": sum(float(x["avg"]) for x in steady) / len(steady),
        "rt_p99_ms": None,  # the tool prints no percentile
        "rt_max_ms": max(float(x["max"]) for x in steady),
        "send_failed": sum(float(x["failed"]) + float(x["rfailed"]) for x in steady),
        "report_lines": len(lines),
    }


def _run_for(cmd: list[str], seconds: float, log: Path, enough: Callable[[str], bool] = lambda _: True,
             grace: float = 20.0) -> str:
    """Run a program that never exits on its own for ``seconds``, then SIGTERM it; its stdout. When
    its output is not ``enough`` by then (a JVM slow to start on a loaded machine reports late), it
    runs on, up to ``grace`` seconds more, until it is."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=err, start_new_session=True, cwd=REPO_ROOT
        )
        chunks: list[bytes] = []

        def read() -> None:
            for line in iter(proc.stdout.readline if proc.stdout else (lambda: b""), b""):
                chunks.append(line)

        reader = threading.Thread(target=read)
        reader.start()
        time.sleep(seconds)
        late = time.monotonic() + grace
        while not enough(b"".join(chunks).decode("utf-8", "replace")) and time.monotonic() < late \
                and proc.poll() is None:  # fmt: skip
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(10)
    return b"".join(chunks).decode("utf-8", "replace")


def _run_json(cmd: list[str], timeout: float, log: Path) -> dict[str, Any]:
    """Run a program that prints one JSON document as its last stdout line."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as err:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, timeout=timeout, cwd=REPO_ROOT)
    lines = [ln for ln in proc.stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{cmd[-1] if cmd else '?'} failed (exit {proc.returncode}); see {log}")
    return json.loads(lines[-1])


def _java(ctx: Context, main: str, args: list[Any], **props: str) -> list[str]:
    return ctx.java.command(
        main, [str(a) for a in args], jvm_props=props or None, jvm_flags=GENERATOR_JVM_FLAGS
    )


def run_send(size: int, threads: int) -> Callable[[Context, Plan], dict[str, Any]]:
    def run(ctx: Context, plan: Plan) -> dict[str, Any]:
        topic = ctx.fresh_topic(f"send_{size}_{threads}")
        ns = ctx.cluster.namesrv_addr
        cmd = _java(ctx, PRODUCER_MAIN, ["-n", ns, "-t", topic, "-w", threads, "-s", size],
                    **{"org.apache.rocketmq.client.sendSmartMsg": "true", "rocketmq.namesrv.addr": ns})
        out = _run_for(cmd, plan.send_seconds, ctx.logs / f"producer-{topic}.log",
                       enough=lambda text: SEND_LINE.search(text) is not None)
        figures = parse_send_lines(out)
        if not figures:
            raise RuntimeError(f"the benchmark Producer printed no TPS line: {out[-500:]!r}")
        return figures

    return run


def run_batch_java(ctx: Context, plan: Plan) -> dict[str, Any]:
    topic = ctx.fresh_topic("batch_java")
    doc = _run_json(
        _java(ctx, "BatchSend", [ctx.cluster.namesrv_addr, topic, 16, 128, plan.batch_size,
                                 plan.batch_seconds, plan.warmup_seconds]),
        plan.batch_seconds + 60,
        ctx.logs / f"batchsend-{topic}.log",
    )
    return {"send_tps": doc["tps"], "rt_avg_ms": doc["rt_avg_ms"], "rt_p99_ms": doc["rt_p99_ms"],
            "rt_max_ms": doc["rt_max_ms"], "send_failed": doc["failed"]}


def run_batch_python(ctx: Context, plan: Plan) -> dict[str, Any]:
    topic = ctx.fresh_topic("batch_python")
    cmd = [
        sys.executable,
        "-m",
        "pyrocketmq",
        "bench",
        "produce",
        "-n",
        ctx.cluster.namesrv_addr,
        "-t",
        topic,
        "-s",
        "128",
        "-w",
        "16",
        "--batch",
        str(plan.batch_size),
        "--duration",
        str(plan.batch_seconds),
        "--warmup",
        str(plan.warmup_seconds),
        "--json",
        "--no-progress",
    ]
    doc = _run_json(cmd, plan.batch_seconds + 60, ctx.logs / f"pybench-{topic}.log")
    return {"send_tps": doc["tps"], "rt_avg_ms": doc["rt_avg_ms"], "rt_p99_ms": doc["rt_p99_ms"],
            "rt_max_ms": doc["rt_max_ms"], "send_failed": doc["failed"]}


def run_drain(ctx: Context, plan: Plan) -> dict[str, Any]:
    topic = ctx.fresh_topic("drain")
    ns = ctx.cluster.namesrv_addr
    fill = _run_json(
        _java(ctx, "BatchSend", [ns, topic, 8, 128, 64, 3600, 0, plan.backlog]),
        1800,
        ctx.logs / f"fill-{topic}.log",
    )
    if fill["sent"] < plan.backlog:
        raise RuntimeError(f"backlog fill sent {fill['sent']} of {plan.backlog}")
    ctx.restart_window()
    doc = _run_json(
        _java(ctx, "Drain", [ns, topic, f"bench_drain_{ctx.seq}", plan.backlog, 900]),
        960,
        ctx.logs / f"drain-{topic}.log",
    )
    return {"consume_tps": doc["tps"], "drain_seconds": doc["seconds_from_first"],
            "drain_seconds_from_start": doc["seconds_from_start"], "fill_tps": fill["tps"]}


def run_latency(ctx: Context, plan: Plan) -> dict[str, Any]:
    topic = ctx.fresh_topic("latency")
    doc = _run_json(
        _java(
            ctx,
            "FixedRateLatency",
            [
                ctx.cluster.namesrv_addr,
                topic,
                f"bench_latency_{ctx.seq}",
                plan.latency_rate,
                plan.latency_seconds,
                128,
                4,
                plan.latency_warmup,
            ],
        ),
        plan.latency_seconds + 90,
        ctx.logs / f"latency-{topic}.log",
    )
    return {"send_tps": doc["achieved_tps"], "rt_avg_ms": doc["rt_avg_ms"], "rt_p99_ms": doc["rt_p99_ms"],
            "e2e_p50_ms": doc["e2e_p50_ms"], "e2e_p99_ms": doc["e2e_p99_ms"], "e2e_max_ms": doc["e2e_max_ms"],
            "received": doc["received"], "sent": doc["sent"]}


def _grpc(ctx: Context, args: list[Any], seconds: float, log: Path) -> dict[str, Any]:
    assert ctx.java5 is not None and ctx.grpc_endpoint is not None
    cmd = ctx.java5.command("Grpc5Bench", [ctx.grpc_endpoint, *map(str, args)], jvm_flags=GENERATOR_JVM_FLAGS)
    return _run_json(cmd, seconds, log)


def run_grpc5_send(ctx: Context, plan: Plan) -> dict[str, Any]:
    topic = ctx.fresh_topic("grpc5_send")
    doc = _grpc(ctx, [topic, "send", 16, 128, plan.grpc_seconds, plan.warmup_seconds], plan.grpc_seconds + 90,
                ctx.logs / f"grpc5-send-{topic}.log")
    return {
        "send_tps": doc["tps"],
        "rt_avg_ms": doc["rt_avg_ms"],
        "rt_p99_ms": doc["rt_p99_ms"],
        "send_failed": doc["failed"],
    }


def run_grpc5_receive(ctx: Context, plan: Plan) -> dict[str, Any]:
    topic = ctx.fresh_topic("grpc5_receive")
    fill = _grpc(ctx, [topic, "fill", plan.grpc_backlog, 128], 900, ctx.logs / f"grpc5-fill-{topic}.log")
    if fill["count"] < plan.grpc_backlog:
        raise RuntimeError(f"backlog fill sent {fill['count']} of {plan.grpc_backlog}")
    ctx.restart_window()
    doc = _grpc(ctx, [topic, "receive", 8, f"bench_g5_{ctx.seq}", plan.grpc_seconds, plan.warmup_seconds],
                plan.grpc_seconds + 90, ctx.logs / f"grpc5-receive-{topic}.log")
    return {"consume_tps": doc["tps"], "rt_avg_ms": doc["rt_avg_ms"], "rt_p99_ms": doc["rt_p99_ms"],
            "fill_tps": fill["tps"], "receive_failed": doc["failed"]}


def run_topics(count: int) -> Callable[[Context, Plan], dict[str, Any]]:
    def run(ctx: Context, plan: Plan) -> dict[str, Any]:
        assert ctx.sampler is not None and ctx.relay is not None
        pid = ctx.sampler.pid
        rss, anon = ctx.sampler.memory()
        idle = {"fds_idle": clusters.open_files(pid), "idle_rss_mib": round(rss / 2**20, 1),
                "idle_anon_mib": round(anon / 2**20, 1)}
        ctx.seq += 1
        args = [ctx.cluster.namesrv_addr, clusters.TOPIC_PREFIX, count, plan.topics_threads, 128,
                plan.topics_seconds, plan.consume_sample, plan.route_sample, f"bench_topics_{ctx.seq}"]
        doc = _run_json(_java(ctx, "ManyTopics", args), plan.topics_seconds + 120 + count * 0.03,
                        ctx.logs / f"topics-{count}.log")
        codec = register_codec_ms(count) if ctx.cluster.kind == "pyrocketmq" else (None, None)
        registrations = [r for r in ctx.relay.registrations() if r.ok]
        largest = max(registrations, key=lambda r: r.size, default=None)
        times = sorted(r.seconds for r in registrations)
        return {
            "send_tps": doc["tps"], "rt_avg_ms": doc["rt_avg_ms"], "rt_p99_ms": doc["rt_p99_ms"],
            "send_failed": doc["failed"] + doc["warmup_failed"], "warmup_s": doc["warmup_s"],
            "consumed": doc["consumed"], "route_p50_ms": doc["route_p50_ms"],
            "route_p99_ms": doc["route_p99_ms"], "route_failed": doc["route_failed"],
            **idle,
            "fds": clusters.open_files(pid), "maps": clusters.memory_maps(pid),
            "registrations": len(registrations),
            "register_kib": round(largest.size / 1024, 1) if largest else None,
            "register_frames": largest.frames if largest else None,
            "register_ms": round(times[len(times) // 2] * 1000, 1) if times else None,
            "register_encode_ms": codec[0], "register_decode_ms": codec[1],
        }

    return run


def register_codec_ms(count: int) -> tuple[float, float]:
    """Milliseconds our broker spends building its REGISTER_BROKER body for ``count`` topics of 8 queues
    (the topic table's wrapper, its JSON, its CRC) and our name server parsing it, timed here in-process:
    the relay sees neither (it times the name server's whole answer, the transfer included)."""
    import zlib

    from pyrocketmq.remoting.body import RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper

    names = [f"{clusters.TOPIC_PREFIX}{i}" for i in range(count)]
    table = {name: TopicConfig(name, 8, 8) for name in names}
    t0 = time.perf_counter()
    body = RegisterBrokerBody(topic_config_serialize_wrapper=TopicConfigSerializeWrapper(dict(table)),
                              filter_server_list=[]).to_json()
    zlib.crc32(body)
    t1 = time.perf_counter()
    RegisterBrokerBody.decode(body)
    t2 = time.perf_counter()
    return round((t1 - t0) * 1000, 1), round((t2 - t1) * 1000, 1)


TOPIC_COUNTS = (10, 200, 1000, 10_000)
"""The ``topics-<n>`` rows (``--smoke`` runs 10 and 200)."""


def catalogue() -> list[Scenario]:
    out: list[Scenario] = []
    for flush in ("ASYNC_FLUSH", "SYNC_FLUSH"):
        for size in (128, 1024):
            for threads in (16, 64):
                out.append(Scenario(f"send-{size}-{threads}", flush, run_send(size, threads),
                                    f"benchmark.Producer, sync send {size} B, {threads} threads"))
    for size, threads in ((128, 16), (1024, 64)):
        out.append(
            Scenario(
                f"send-{size}-{threads}",
                "SYNC_MASTER",
                run_send(size, threads),
                f"benchmark.Producer, sync send {size} B, {threads} threads, each send on master and slave",
            )
        )
    out += [
        Scenario("batch-java", "ASYNC_FLUSH", run_batch_java, "BatchSend (Java), 16 threads x 32 x 128 B"),
        Scenario(
            "batch-python",
            "ASYNC_FLUSH",
            run_batch_python,
            "pyrocketmq bench produce --batch 32, 16 in flight",
        ),
        Scenario(
            "drain",
            "ASYNC_FLUSH",
            run_drain,
            "Java push consumer (benchmark Consumer settings) draining a 128 B backlog",
        ),
        Scenario("latency", "ASYNC_FLUSH", run_latency, "FixedRateLatency, 128 B at a fixed rate"),
        Scenario(
            "grpc5-send",
            "ASYNC_FLUSH",
            run_grpc5_send,
            "official 5.x Java client over gRPC, sync send 128 B, 16 threads",
            protocol="grpc5",
        ),
        Scenario(
            "grpc5-receive",
            "ASYNC_FLUSH",
            run_grpc5_receive,
            "official 5.x Java SimpleConsumer over gRPC, 8 threads receive 32 + ack, 128 B backlog",
            protocol="grpc5",
        ),
    ]
    out += [Scenario(f"topics-{n}", "ASYNC_FLUSH", run_topics(n),
                     f"ManyTopics: {n} topics x {clusters.QUEUES} queues (topics.json written before start), "
                     "16 threads sync send 128 B each to a random topic, a consumer on 16 of them, "
                     "route lookups", topics=n)
            for n in TOPIC_COUNTS]
    return out
