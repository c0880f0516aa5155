"""``python -m bench``: run the scenarios against our broker and Apache's and print the table.

Order: for each flush mode and protocol, our broker then each Apache peer of that protocol
(``--peers``: 4.9.7 and 5.5.1 for the 4.x remoting rows, 5.2.0's proxy for the gRPC rows), each
freshly started on an empty store; every scenario of that flush mode and protocol runs against it
before it is stopped. ``--rounds N`` repeats that N
times, the brokers' order swapped every round, and the table shows each figure's median over the
rounds (this machine's figures move by a quarter between runs; a median of alternating runs is the
fair comparison). The JSON document (``--json``) holds every run's figures, the plan and the
machine; the table goes to stdout.
"""

from __future__ import annotations

import argparse
import datetime
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench import clusters, profile, report
from bench.relay import RegistrationRelay
from bench.scenarios import BENCH_JAVA, BENCH_JAVA5, Context, Plan, Result, catalogue
from localkube.tools import cache_root
from tests.conformance import jvm

SMOKE_SCENARIOS = ["send-128-16", "drain", "latency", "grpc5-receive"]
"""What ``--smoke`` runs (the CI runs it); the topics-<n> rows are run by name (``--scenarios topics-10``)."""
ALL_PEERS = [kind for peers in clusters.PEERS.values() for kind in peers]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument(
        "--scenarios",
        default="all",
        help="comma-separated names or prefixes (send, send-1024-64, batch, drain, latency, grpc5); "
        "default all",
    )
    p.add_argument("--flush", default=",".join(clusters.MODES),
                   help="modes to run: ASYNC_FLUSH, SYNC_FLUSH (one broker), SYNC_MASTER (master + slave, "
                        "asynchronous flush); default all three")
    p.add_argument("--brokers", default=",".join(clusters.KINDS),
                   help="pyrocketmq,apache: our side, Apache's side (the --peers), or both (default)")
    p.add_argument("--peers", default=",".join(ALL_PEERS),
                   help="Apache peers: apache (4.9.7) and apache55 (5.5.1) for the 4.x-protocol rows, "
                        "apache5 (5.2.0's proxy) for the gRPC rows; default all three")
    p.add_argument(
        "--duration", type=float, default=None, help="seconds per Producer run (default 22; >= 11)"
    )
    p.add_argument("--batch-duration", type=float, default=None, help="seconds per batch run (default 16)")
    p.add_argument(
        "--scale", type=float, default=1.0, help="backlog = 1 000 000 x scale messages (default 1)"
    )
    p.add_argument(
        "--rate", type=int, default=None, help="fixed rate of the latency scenario (default 2000 msg/s)"
    )
    p.add_argument(
        "--latency-duration", type=float, default=None, help="seconds of the latency scenario (default 15)"
    )
    p.add_argument("--smoke", action="store_true",
                   help="tiny workload (send-128-16, drain of 2 000, latency 200 msg/s, grpc5-receive; with "
                        "--scenarios topics-10,topics-200: 3 s each), ASYNC_FLUSH only, every peer")
    p.add_argument("--topics-duration", type=float, default=None,
                   help="seconds of timed sends of each topics-<n> row (default 20)")
    p.add_argument("--workdir", type=Path, default=None, help="stores and logs (default <cache>/bench)")
    p.add_argument(
        "--json", type=Path, default=None, help="where to write the JSON (default <workdir>/results.json)"
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run everything N times, the brokers' order swapped each round; the table shows medians",
    )
    p.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="sample our broker with py-spy during each scenario: collapsed stacks and top frames in DIR",
    )
    return p


def make_plan(args: argparse.Namespace) -> Plan:
    plan = Plan()
    if args.smoke:
        plan = Plan(send_seconds=11.5, batch_seconds=4, warmup_seconds=1, backlog=2000, latency_rate=200,
                    latency_seconds=2, latency_warmup=1, grpc_seconds=2, grpc_backlog=2000, topics_seconds=3,
                    consume_sample=4, route_sample=50)
    else:
        plan.backlog = max(1000, int(1_000_000 * args.scale))
    if args.duration is not None:
        plan.send_seconds = max(11.0, args.duration)
    if args.batch_duration is not None:
        plan.batch_seconds = args.batch_duration
    if args.rate is not None:
        plan.latency_rate = args.rate
    if args.latency_duration is not None:
        plan.latency_seconds = args.latency_duration
    if args.topics_duration is not None:
        plan.topics_seconds = args.topics_duration
    return plan


def select(args: argparse.Namespace):
    wanted = SMOKE_SCENARIOS if args.smoke and args.scenarios == "all" else [
        s.strip() for s in args.scenarios.split(",") if s.strip()]
    flushes = (
        ["ASYNC_FLUSH"] if args.smoke else [f.strip().upper() for f in args.flush.split(",") if f.strip()]
    )
    scenarios = catalogue()
    names = {s.name for s in scenarios}  # a whole name picks that row only: topics-10 is not topics-1000
    chosen = [
        s
        for s in scenarios
        if s.flush in flushes
        and ("all" in wanted or any(s.name == w or (w not in names and s.name.startswith(w)) for w in wanted))
    ]
    return chosen, flushes


def brokers_for(protocol: str, sides: list[str], peers: list[str]) -> list[str]:
    """The broker kinds a group of ``protocol``'s scenarios runs against, ours first: ``sides`` from
    ``--brokers`` (pyrocketmq, apache), ``peers`` from ``--peers``."""
    ours = ["pyrocketmq"] if "pyrocketmq" in sides else []
    theirs = [k for k in clusters.PEERS[protocol] if k in peers] if "apache" in sides else []
    return ours + theirs


def main(argv: list[str] | None = None) -> int:  # long: one parser for every scenario and its options
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["chaos"]:  # python -m bench chaos: faults on the node cluster (bench/chaos.py)
        from bench import chaos

        return chaos.main(argv[1:])
    args = build_parser().parse_args(argv)
    plan = make_plan(args)
    chosen, flushes = select(args)
    sides = [k.strip() for k in args.brokers.split(",") if k.strip()]
    peers = [k.strip() for k in args.peers.split(",") if k.strip()]
    if args.rounds < 1:
        print("--rounds must be at least 1", file=sys.stderr)
        return 2
    if (
        not chosen
        or any(k not in clusters.KINDS for k in sides)
        or any(k not in ALL_PEERS for k in peers)
        or any(f not in clusters.MODES for f in flushes)
    ):
        print("nothing to run: check --scenarios, --flush, --brokers and --peers", file=sys.stderr)
        return 2
    if args.profile and profile.py_spy() is None:
        print(
            "--profile needs py-spy: pip install py-spy (scripts/setup.sh --test installs it)",
            file=sys.stderr,
        )
        return 2
    workdir = (args.workdir or cache_root() / "bench").resolve()
    json_path = args.json or workdir / "results.json"
    began = time.time()
    command = "python -m bench " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    print(f"# {command}\n# plan: {plan}", flush=True)

    java = jvm.JavaPrograms(clusters.client_lib(), log_dir=workdir / "client-logs", sources=BENCH_JAVA)
    java.compile()

    java5 = None
    if any(s.protocol == "grpc5" for s in chosen):
        java5 = jvm.JavaPrograms(clusters.client5_lib(), log_dir=workdir / "client-logs", sources=BENCH_JAVA5)
        java5.compile()

    results: list[Result] = []
    # one broker per flush mode and protocol, and one per topic count of the topics-<n> rows
    counts = sorted({s.topics for s in chosen})
    runs = [(flush, protocol, topics,
             [s for s in chosen if s.flush == flush and s.protocol == protocol and s.topics == topics])
            for flush in flushes for protocol in clusters.PEERS for topics in counts]  # fmt: skip
    order = [(rnd, flush, protocol, topics, group)
             for rnd in range(args.rounds) for flush, protocol, topics, group in runs if group]  # fmt: skip
    for rnd, flush, protocol, topics, group in order:
        if args.rounds > 1:
            print(f"round {rnd + 1}/{args.rounds}", flush=True)
        for kind in report.round_order(brokers_for(protocol, sides, peers), rnd):
            home = workdir / (f"{kind}-{flush.lower()}" + (f"-topics{topics}" if topics else ""))
            relay = RegistrationRelay() if topics else None
            t0 = time.monotonic()
            try:
                cluster, endpoint = clusters.start(kind, home, flush, grpc=protocol == "grpc5", topics=topics,
                                                   relay=relay)
            except Exception as exc:  # report and go on with the other broker
                for s in group:
                    results.append(
                        Result(
                            s.name,
                            kind,
                            flush,
                            detail={"round": rnd + 1},
                            error=f"broker did not start: {exc}",
                        )
                    )
                print(f"{kind} {flush}: did not start: {str(exc).splitlines()[0]}", flush=True)
                if relay is not None:
                    relay.close()
                continue
            pid = clusters.broker_process(cluster).pid
            assert pid is not None
            sampler = clusters.ProcessSampler(pid)
            up = time.monotonic() - t0
            print(f"{kind} {flush}: up in {up:.1f} s (broker pid {pid})"
                  + (f" with {topics} topics" if topics else ""), flush=True)  # fmt: skip
            ctx = Context(cluster, java, home / "logs", grpc_endpoint=endpoint, java5=java5, sampler=sampler,
                          relay=relay)
            try:
                for s in group:
                    result = Result(s.name, kind, flush, detail={"round": rnd + 1})
                    window = [sampler.mark()]
                    def restart(w: list[Any] = window, sm: Any = sampler) -> None:
                        w[0] = sm.mark()

                    ctx.restart_window = restart
                    t1 = time.monotonic()
                    spy = (
                        profile.Recorder(
                            pid,
                            args.profile,
                            f"{s.name}-{flush}" + (f"-r{rnd + 1}" if args.rounds > 1 else ""),
                        )
                        if args.profile and kind == "pyrocketmq"
                        else None
                    )
                    try:
                        result.figures.update(s.run(ctx, plan))
                    except Exception as exc:
                        result.error = f"{type(exc).__name__}: {exc}"
                    finally:
                        if spy is not None:
                            result.detail["profile"] = str(spy.raw)
                            spy.stop()
                    usage = sampler.since(window[0])
                    result.figures["cpu_s"] = usage.cpu_seconds
                    result.figures["peak_rss_mib"] = usage.peak_rss_mib
                    result.figures["peak_anon_mib"] = usage.peak_anon_mib
                    result.detail["wall_s"] = round(time.monotonic() - t1, 1)
                    if s.topics:
                        result.figures["start_s"] = round(up, 1)
                    results.append(result)
                    shown = {k: v for k, v in result.figures.items() if v is not None}
                    print(f"  {s.name:<14} {result.error or shown}", flush=True)
                    if not cluster.alive():
                        raise RuntimeError(f"{kind} died during {s.name}:\n{cluster.log_tails()}")
            except RuntimeError as exc:
                print(str(exc), file=sys.stderr)
            finally:
                sampler.close()
                cluster.stop()
                if relay is not None:
                    relay.close()
                shutil.rmtree(home / "store", ignore_errors=True)

    elapsed = time.time() - began
    merged = report.medians(results)
    print()
    print(report.markdown(merged))
    print()
    print(report.headline(merged))
    if any(r.figures.get("fds") is not None for r in merged):
        print()
        print(report.topics(merged))
    meta = {
        "command": command,
        "started": datetime.datetime.fromtimestamp(began, datetime.UTC).isoformat(timespec="seconds"),
        "elapsed_s": round(elapsed, 1),
        "plan": plan.__dict__,
        "apache_broker_jvm": clusters.APACHE_BROKER_HEAP,
        "peers": {k: clusters.VERSIONS[k] for k in peers},
        "segment_size": clusters.SEGMENT_SIZE,
        "queues": clusters.QUEUES,
        "rounds": args.rounds,
    }
    report.write_json(json_path, results, meta)
    print(f"\n{len(results)} result(s) in {elapsed:.0f} s; JSON: {json_path}")
    return 1 if any(r.error for r in results) else 0
