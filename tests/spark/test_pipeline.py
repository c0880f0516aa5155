"""The order-totals pipeline, run with ``spark-submit`` (local mode, the default), checked against
totals computed here in plain Python."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import defaultdict
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from .conftest import REPO_ROOT, spark_env

PIPELINE = REPO_ROOT / "spark" / "pipelines" / "order_totals.py"


def _orders(n: int, seed: int = 7) -> list[tuple[str, dict]]:
    rng = random.Random(seed)
    base = 1_763_800_000_000 - 1_763_800_000_000 % 60_000  # a minute boundary
    out = []
    for i in range(n):
        tag = rng.choice(["books", "games", "food"])
        cents = rng.randrange(100, 50_000)
        ts = base + rng.randrange(0, 4 * 60_000)  # four minutes of events
        out.append((tag, {"orderId": f"o-{i}", "amount": f"{cents // 100}.{cents % 100:02d}", "ts": ts}))
    return out


def _expected(orders: list[tuple[str, dict]]) -> dict[tuple[str, str], tuple[int, Decimal]]:
    acc: dict[tuple[str, str], list] = defaultdict(lambda: [0, Decimal("0.00")])
    for tag, o in orders:
        minute = datetime.fromtimestamp(o["ts"] // 60_000 * 60, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        acc[(minute, tag)][0] += 1
        acc[(minute, tag)][1] += Decimal(o["amount"])
    return {k: (v[0], v[1]) for k, v in acc.items()}


def test_order_totals_pipeline_with_spark_submit(spark, rmq, tmp_path):
    rmq.create_topic("PipeOrders", queues=4)
    rmq.create_topic("PipeTotals", queues=2)
    orders = _orders(240)
    rmq.produce("PipeOrders", [json.dumps(o).encode() for _, o in orders], tags=[t for t, _ in orders])
    expected = _expected(orders)

    out = tmp_path / "totals"
    spark_submit = Path(sys.executable).with_name("spark-submit")
    cmd = [str(spark_submit), "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
           "--conf", "spark.sql.shuffle.partitions=2", str(PIPELINE), "--name-server", rmq.ns,
           "--input-topic", "PipeOrders", "--output-topic", "PipeTotals", "--parquet", str(out)]
    done = subprocess.run(cmd, env=spark_env(), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]

    parquet = {
        (r.minute.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), r.tag): (r.orders, r.total)
        for r in spark.read.parquet(str(out)).collect()
    }
    assert parquet == expected

    sent = (
        spark.read.format("pyrocketmq")
        .option("nameServer", rmq.ns)
        .option("topic", "PipeTotals")
        .load()
        .collect()
    )
    from_topic = {}
    for r in sent:
        doc = json.loads(bytes(r.body))
        key = (doc["minute"], doc["tag"])
        assert key not in from_topic, f"{key} sent twice"
        assert r.tags == doc["tag"] and r.keys.split(" ")[0] == f"{doc['minute']}|{doc['tag']}"
        from_topic[key] = (doc["orders"], Decimal(doc["total"]))
    assert from_topic == expected


def test_order_totals_stream_mode_emits_each_minute_once(spark, rmq, tmp_path):
    from pyrocketmq.spark.pipelines.order_totals import parse_args, run_stream

    rmq.create_topic("PipeStreamOrders", queues=2)
    rmq.create_topic("PipeStreamTotals", queues=2)
    # Events arrive roughly in time order, as real ones do (late ones beyond the watermark are dropped).
    orders = sorted(_orders(90, seed=11), key=lambda e: e[1]["ts"])
    last_ts = max(o["ts"] for _, o in orders)
    rmq.produce("PipeStreamOrders", [json.dumps(o).encode() for _, o in orders], tags=[t for t, _ in orders])

    out = tmp_path / "totals"
    args = parse_args(["--name-server", rmq.ns, "--mode", "stream", "--input-topic", "PipeStreamOrders",
                       "--output-topic", "PipeStreamTotals", "--parquet", str(out), "--checkpoint",
                       str(tmp_path / "ckpt"), "--max-records-per-batch", "40", "--group", "pipe-stream",
                       "--watermark", "2 minutes"])
    run_stream(spark, args)  # every order read; the last minutes stay open below the watermark
    # An event ten minutes later, read by a second run from the checkpoint once every order has been
    # read, moves the watermark past every minute above, so all of them close. (Sent with the orders
    # it could be read before the other queue's last orders: the queues are read in proportion to
    # their backlogs, not in event time, and those orders would be dropped as late.)
    flush = ("flush", {"orderId": "late", "amount": "1.00", "ts": last_ts + 10 * 60_000})
    rmq.produce("PipeStreamOrders", [json.dumps(flush[1]).encode()], tags=[flush[0]])
    run_stream(spark, args)

    rows = spark.read.parquet(str(out)).collect()
    got = [
        ((r.minute.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), r.tag), (r.orders, r.total)) for r in rows
    ]
    assert len(got) == len(dict(got)), "a minute was emitted twice"
    assert dict(got) == _expected(orders)
    sent = (spark.read.format("pyrocketmq").option("nameServer", rmq.ns).option("topic", "PipeStreamTotals")
            .load().collect())
    assert {(d["minute"], d["tag"]): (d["orders"], Decimal(d["total"]))
            for d in (json.loads(bytes(r.body)) for r in sent)} == _expected(orders)
    assert len(sent) == len(_expected(orders))
