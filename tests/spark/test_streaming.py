"""Streaming reads: admission control, group offsets on the broker, kill and restart with a checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pyrocketmq.client import SyncAdmin
from pyrocketmq.remoting.body import MessageQueue

from .conftest import REPO_ROOT, read_stream, run_available_now, spark_env


def _lag(rmq, group):
    with SyncAdmin(rmq.ns) as admin:
        table, _ = admin.consume_stats(group)
    return sum(w.broker_offset - w.consumer_offset for w in table.values())


def test_max_records_per_batch_bounds_each_micro_batch_and_group_offsets_advance(spark, rmq, tmp_path):
    rmq.create_topic("SparkStream", queues=4)
    rmq.produce("SparkStream", [f"s-{i}".encode() for i in range(50)])
    df = read_stream(spark, rmq, "SparkStream", consumerGroup="spark-stream-g", startingOffsets="earliest",
                 maxRecordsPerBatch=7).selectExpr("CAST(body AS STRING) AS body", "queueId", "queueOffset")

    q = run_available_now(df, tmp_path / "out", tmp_path / "ckpt")
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 50 and max(sizes) <= 7 and len(sizes) >= 8, sizes
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(r.body for r in rows) == sorted(f"s-{i}" for i in range(50))

    committed = rmq.committed("spark-stream-g", "SparkStream")
    assert sum(committed.values()) == 50, committed

    # More messages, the same checkpoint: the query resumes and the group's offsets move on.
    rmq.produce("SparkStream", [f"s-{i}".encode() for i in range(50, 80)])
    assert _lag(rmq, "spark-stream-g") == 30  # what consumerProgress / the lag metrics show
    q = run_available_now(df, tmp_path / "out", tmp_path / "ckpt")
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(r.body for r in rows) == sorted(f"s-{i}" for i in range(80))
    after = rmq.committed("spark-stream-g", "SparkStream")
    assert after == rmq.max_offsets("SparkStream")
    assert all(after[mq] >= committed[mq] for mq in committed) and sum(after.values()) == 80
    assert _lag(rmq, "spark-stream-g") == 0
    assert isinstance(next(iter(after)), MessageQueue)

    # A new query (new checkpoint) with startingOffsets=group starts where the group is.
    rmq.produce("SparkStream", [f"s-{i}".encode() for i in range(80, 85)])
    from_group = read_stream(spark, rmq, "SparkStream", consumerGroup="spark-stream-g",
                             startingOffsets="group")
    run_available_now(
        from_group.selectExpr("CAST(body AS STRING) AS body"), tmp_path / "out2", tmp_path / "ckpt2"
    )
    rows = spark.read.parquet(str(tmp_path / "out2")).collect()
    assert sorted(r.body for r in rows) == sorted(f"s-{i}" for i in range(80, 85))


def _job(rmq, topic, out, ckpt, mode, log):
    args = [
        sys.executable,
        str(Path(__file__).with_name("stream_job.py")),
        rmq.ns,
        topic,
        str(out),
        str(ckpt),
        "20",
        mode,
    ]
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=spark_env(), cwd=REPO_ROOT,
                            start_new_session=True)


def test_killed_query_restarts_from_checkpoint_without_loss_or_duplicates(spark, rmq, tmp_path):
    rmq.create_topic("SparkKill", queues=4)
    first = [f"k-{i}" for i in range(200)]
    rmq.produce("SparkKill", [b.encode() for b in first])
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    log_path = tmp_path / "job.log"
    with open(log_path, "ab") as log:
        job = _job(rmq, "SparkKill", out, ckpt, "forever", log)
        try:
            deadline = (
                time.monotonic() + 420
            )  # a second driver JVM: its start is slow when the machine is busy
            commits = ckpt / "commits"
            while len(list(commits.glob("[0-9]*"))) < 3:
                assert job.poll() is None, log_path.read_text(errors="replace")[-3000:]
                assert time.monotonic() < deadline, (
                    "no micro-batch committed:\n" + log_path.read_text(errors="replace")[-3000:]
                )
                time.sleep(0.1)
        finally:
            os.killpg(job.pid, signal.SIGKILL)  # no shutdown hooks: an abrupt end mid-stream
            job.wait(30)
    done = len(list((ckpt / "commits").glob("[0-9]*")))
    assert done < 10, f"the query finished all {done} batches before it was killed; nothing was tested"

    second = [f"k-{i}" for i in range(200, 260)]  # written while the query is down
    rmq.produce("SparkKill", [b.encode() for b in second])
    # The restart (here in the test's own session) resumes from the killed driver's checkpoint.
    df = read_stream(spark, rmq, "SparkKill", consumerGroup="spark-kill-restart", startingOffsets="earliest",
                 maxRecordsPerBatch=20).selectExpr("CAST(body AS STRING) AS body", "queueId", "queueOffset")
    q = run_available_now(df, out, ckpt)
    assert q.recentProgress, "the restarted query ran no batch"

    rows = spark.read.parquet(str(out)).collect()
    bodies = [r.body for r in rows]
    assert len(bodies) == len(set(bodies)), "duplicates in the sink"
    assert sorted(bodies) == sorted(first + second)
    assert len({(r.queueId, r.queueOffset) for r in rows}) == 260
    assert sum(rmq.committed("spark-kill-restart", "SparkKill").values()) == 260


def test_streaming_write_sends_every_row_with_stable_dedup_keys(spark, rmq, tmp_path):
    rmq.create_topic("SparkCopyIn", queues=2)
    rmq.create_topic("SparkCopyOut", queues=2)
    rmq.produce("SparkCopyIn", [f"c-{i}".encode() for i in range(30)], tags=["T"] * 30)
    src = read_stream(spark, rmq, "SparkCopyIn", startingOffsets="earliest", maxRecordsPerBatch=12)
    q = (src.select("body", "tags", "keys", "properties").writeStream.format("pyrocketmq")
         .option("nameServer", rmq.ns).option("topic", "SparkCopyOut").option("dedupKey", "true")
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    assert q.awaitTermination(300)
    assert q.exception() is None
    rows = (spark.read.format("pyrocketmq").option("nameServer", rmq.ns).option("topic", "SparkCopyOut")
            .load().collect())
    assert sorted(bytes(r.body) for r in rows) == sorted(f"c-{i}".encode() for i in range(30))
    keys = [r.keys for r in rows]
    assert len(set(keys)) == 30 and all(r.tags == "T" for r in rows)
    batches = {k.split("-")[-3] for k in keys}
    assert all(k.startswith(f"spark-{q.id}-") for k in keys), keys[:3]
    assert batches == {"0", "1", "2"}, batches  # 12 + 12 + 6
