"""``failOnDataLoss`` when the broker's retention deleted what a query was due to read.

The broker here keeps commitlog segments for 0 hours (``fileReservedTime=0``), may delete at any
hour (``deleteWhen`` lists all 24) and checks every 200 ms, with 64 KiB segments: every full
segment but the current one is deleted moments after it fills, and the queue's min offset moves
up past the deleted messages — retention as in production, only faster.
"""

from __future__ import annotations

import json
import time

import pytest

from pyrocketmq.client import SyncAdmin
from pyrocketmq.remoting.body import MessageQueue

from .conftest import Rmq, start_cluster

TOPIC = "SparkLossy"


@pytest.fixture(scope="module")
def lossy(tmp_path_factory):
    cluster = start_cluster(
        tmp_path_factory.mktemp("lossy"),
        mappedFileSizeCommitLog=64 * 1024,
        fileReservedTime=0,
        deleteWhen=";".join(f"{h:02d}" for h in range(24)),
        cleanResourceInterval=200,
    )
    try:
        yield Rmq(cluster)
    finally:
        cluster.stop()


def _min_offset(rmq: Rmq, mq: MessageQueue) -> int:
    with SyncAdmin(rmq.ns) as admin:
        return admin.min_offset(mq)


def _stream(spark, rmq, out, ckpt, fail: bool):
    df = (spark.readStream.format("pyrocketmq").option("nameServer", rmq.ns).option("topic", TOPIC)
          .option("startingOffsets", "earliest").option("failOnDataLoss", str(fail).lower()).load()
          .selectExpr("CAST(body AS STRING) AS body", "queueOffset"))
    q = (df.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination(300)
    except Exception:  # StreamingQueryException: the test looks at q.exception()
        pass
    return q


def test_fail_on_data_loss_after_retention_deleted_segments(spark, lossy, tmp_path):
    lossy.create_topic(TOPIC, queues=1)
    mq = MessageQueue(TOPIC, lossy.cluster.broker_name, 0)
    lossy.produce(TOPIC, [f"early-{i}".encode() for i in range(5)])
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    q = _stream(spark, lossy, out, ckpt, fail=True)
    assert q.exception() is None
    assert spark.read.parquet(str(out)).count() == 5

    # While the query is down, enough traffic for retention to delete the segments holding 5.. .
    filler = b"x" * 2000
    lossy.produce(TOPIC, [filler + str(i).encode() for i in range(300)])
    deadline = time.monotonic() + 60
    while (low := _min_offset(lossy, mq)) <= 5:
        assert time.monotonic() < deadline, "retention did not delete any segment"
        time.sleep(0.2)

    # failOnDataLoss=true: the restarted query stops with an error naming the lost offsets.
    q = _stream(spark, lossy, out, ckpt, fail=True)
    err = str(q.exception())
    assert "DataLossError" in err and f"{TOPIC}/{lossy.cluster.broker_name}/0: wanted 5" in err, err
    assert "failOnDataLoss=false" in err
    assert spark.read.parquet(str(out)).count() == 5  # nothing was written by the failed run

    # failOnDataLoss=false: the same checkpoint skips to the oldest stored message and goes on.
    q = _stream(spark, lossy, out, ckpt, fail=False)
    assert q.exception() is None
    rows = spark.read.parquet(str(out)).collect()
    offsets = sorted(r.queueOffset for r in rows)
    low = min(o for o in offsets if o >= 5)
    assert low >= _min_offset(lossy, mq) - 40 and low > 5  # segments may go on being deleted meanwhile
    assert offsets == list(range(5)) + list(range(low, 305))

    # Batch reads behave the same way for explicit starting offsets below the min.
    start = json.dumps({TOPIC: {lossy.cluster.broker_name: {"0": 0}}})
    reader = (spark.read.format("pyrocketmq").option("nameServer", lossy.ns).option("topic", TOPIC)
              .option("startingOffsets", start))
    with pytest.raises(Exception, match="DataLossError"):
        reader.load().collect()
    kept = reader.option("failOnDataLoss", "false").load().collect()
    assert {r.queueOffset for r in kept} >= set(range(_min_offset(lossy, mq) + 1, 305))


def test_a_topic_deleted_and_created_again_is_reported(spark, rmq, tmp_path):
    topic = "SparkRecreated"
    rmq.create_topic(topic, queues=1)
    rmq.produce(topic, [f"r-{i}".encode() for i in range(10)])

    def run(fail: bool):
        df = (spark.readStream.format("pyrocketmq").option("nameServer", rmq.ns).option("topic", topic)
              .option("startingOffsets", "earliest").option("failOnDataLoss", str(fail).lower()).load()
              .selectExpr("CAST(body AS STRING) AS body"))
        q = (df.writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
        try:
            q.awaitTermination(300)
        except Exception:
            pass
        return q

    assert run(True).exception() is None
    with SyncAdmin(rmq.ns) as admin:
        admin.delete_topic(topic, rmq.cluster.cluster_name)
    rmq.create_topic(topic, queues=1)
    rmq.produce(topic, [f"new-{i}".encode() for i in range(3)])

    err = str(run(True).exception())
    assert "DataLossError" in err and "queue offsets went back" in err and f"{topic}/" in err, err
    # failOnDataLoss=false carries on from the queue's current end: later messages are read.
    assert run(False).exception() is None
    rmq.produce(topic, [f"later-{i}".encode() for i in range(2)])
    assert run(False).exception() is None
    bodies = sorted(r.body for r in spark.read.parquet(str(tmp_path / "out")).collect())
    assert bodies == sorted([f"r-{i}" for i in range(10)] + ["later-0", "later-1"])
