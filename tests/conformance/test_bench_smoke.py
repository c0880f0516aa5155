"""The side-by-side benchmark harness (``python -m bench``) on a tiny workload, so it cannot rot.

It lives with the conformance tests because it needs what they need (java, the Apache RocketMQ
jars from Maven Central) and skips or fails the same way when those are missing. Nothing here
asserts a speed: only that every scenario of ``--smoke`` produced its figures for our broker and
each of its Apache peers (4.9.7 and 5.5.1 for the 4.x-protocol rows, 5.2.0's proxy for gRPC), and
that the tables show a ratio to each.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.conformance

SAMPLE = """\
topic Bench threadCount 16 messageSize 128 keyEnable false
Send TPS: 4497 Max RT: 874 Average RT:   3.784 Send Failed: 0 Response Failed: 0
Send TPS: 5120 Max RT: 40 Average RT:   3.100 Send Failed: 1 Response Failed: 0
Send TPS: 5020 Max RT: 60 Average RT:   3.200 Send Failed: 0 Response Failed: 0
"""


def test_producer_report_lines_are_parsed_without_the_warm_up_line() -> None:
    from bench.scenarios import parse_send_lines

    figures = parse_send_lines(SAMPLE)
    assert figures["send_tps"] == pytest.approx(5070)
    assert figures["rt_avg_ms"] == pytest.approx(3.15)
    assert figures["rt_max_ms"] == 60
    assert figures["send_failed"] == 1
    assert parse_send_lines("no report yet") == {}


@pytest.mark.timeout(900)  # about 140 s alone; the test command runs it beside other lanes
def test_smoke_run_gives_figures_for_every_broker(rocketmq_jars, tmp_path) -> None:
    out_json = tmp_path / "results.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--smoke",
            "--workdir",
            str(tmp_path / "work"),
            "--json",
            str(out_json),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    doc = json.loads(out_json.read_text())
    got = {(r["scenario"], r["broker"]): r for r in doc["results"]}
    assert set(got) == {
        (s, b) for s in ("send-128-16", "drain", "latency") for b in ("pyrocketmq", "apache", "apache55")
    } | {("grpc5-receive", "pyrocketmq"), ("grpc5-receive", "apache5")}
    assert doc["meta"]["peers"] == {"apache": "4.9.7", "apache55": "5.5.1", "apache5": "5.2.0"}
    for (scenario, broker), r in got.items():
        assert r["error"] is None, (scenario, broker, r["error"])
        figures = r["figures"]
        assert figures["cpu_s"] > 0 and figures["peak_rss_mib"] > 0, (scenario, broker, figures)
        assert 0 < figures["peak_anon_mib"] <= figures["peak_rss_mib"], (scenario, broker, figures)
        key = {"send-128-16": "send_tps", "drain": "consume_tps", "latency": "e2e_p99_ms",
               "grpc5-receive": "consume_tps"}[scenario]
        assert figures[key] > 0, (scenario, broker, figures)
    for label in ("| ratio /4.9.7", "| ratio /5.5.1", "| ratio /5.2.0", "| ours/4.9.7", "| ours/5.5.1"):
        assert label in proc.stdout, label
