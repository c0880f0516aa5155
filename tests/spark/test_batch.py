"""Batch reads and writes through the ``pyrocketmq`` format against a real broker."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from pyrocketmq.client import MQConnectionError, TopicNotFoundError
from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.spark.offsets import dumps


def _read(spark, rmq, topic, **opts):
    reader = spark.read.format("pyrocketmq").option("nameServer", rmq.ns).option("topic", topic)
    for k, v in opts.items():
        reader = reader.option(k, v)
    return reader.load()


def test_batch_read_returns_exactly_the_produced_set(spark, rmq):
    rmq.create_topic("SparkBatch", queues=4)
    bodies = [f"order-{i}".encode() for i in range(60)]
    tags = ["TagA" if i % 3 else "TagB" for i in range(60)]
    sent = rmq.produce(
        "SparkBatch", bodies, tags=tags, keys=[f"k{i}" for i in range(60)], properties={"src": "t"}
    )

    rows = _read(spark, rmq, "SparkBatch").collect()
    assert sorted(bytes(r.body) for r in rows) == sorted(bodies)
    assert len({(r.queueId, r.queueOffset) for r in rows}) == 60
    by_body = {bytes(r.body): r for r in rows}
    for i, result in enumerate(sent):
        r = by_body[bodies[i]]
        assert (r.topic, r.brokerName, r.queueId, r.queueOffset) == (
            "SparkBatch",
            result.message_queue.broker_name,
            result.message_queue.queue_id,
            result.queue_offset,
        )
        assert r.msgId == result.msg_id
        assert r.tags == tags[i] and r.keys == f"k{i}" and r.properties == {"src": "t"}
        # Timestamps come back as naive local times (Spark's convention), close to now.
        assert abs(r.storeTimestamp - datetime.now()) < timedelta(minutes=10)
        assert abs(r.storeTimestamp - r.bornTimestamp) < timedelta(seconds=30)
        assert r.reconsumeTimes == 0

    # Tag filter, ending offsets, and JSON starting offsets.
    only_b = _read(spark, rmq, "SparkBatch", subExpression="TagB").collect()
    assert sorted(bytes(r.body) for r in only_b) == sorted(
        b for b, t in zip(bodies, tags, strict=True) if t == "TagB"
    )
    q0 = MessageQueue("SparkBatch", rmq.cluster.broker_name, 0)
    q0_total = sum(1 for r in rows if r.queueId == 0)
    part = _read(spark, rmq, "SparkBatch", startingOffsets=dumps({q0: 1}),
                 endingOffsets=json.dumps({"SparkBatch": {rmq.cluster.broker_name: {"0": 3}}})).collect()
    # queue 0 from 1 to 3; the other queues from earliest (absent from the JSON) to latest
    assert sorted(r.queueOffset for r in part if r.queueId == 0) == [1, 2]
    assert len(part) == 60 - q0_total + 2


def test_batch_write_then_read_back_with_dedup_keys(spark, rmq):
    rmq.create_topic("SparkWritten", queues=2)
    df = spark.createDataFrame(
        [(f"w-{i}", "TagW", f"key{i}", {"n": str(i)}) for i in range(25)],
        "body STRING, tags STRING, keys STRING, properties MAP<STRING,STRING>",
    ).repartition(2)
    (df.write.format("pyrocketmq").option("nameServer", rmq.ns).option("topic", "SparkWritten")
       .option("dedupKey", "true").option("batchId", "nightly").mode("append").save())
    rows = _read(spark, rmq, "SparkWritten").collect()
    assert sorted(bytes(r.body).decode() for r in rows) == sorted(f"w-{i}" for i in range(25))
    dedup = set()
    for r in rows:
        i = r.body.decode().split("-")[1] if isinstance(r.body, str) else bytes(r.body).decode().split("-")[1]
        assert r.tags == "TagW" and r.properties == {"n": i}
        user_key, key = r.keys.split(" ")
        assert user_key == f"key{i}" and key.startswith("spark-nightly-")
        dedup.add(key)
    assert len(dedup) == 25


def test_clear_errors(spark, rmq):
    with pytest.raises(Exception) as unknown:
        _read(spark, rmq, "NoSuchSparkTopic").collect()
    assert "NoSuchSparkTopic" in str(unknown.value) and TopicNotFoundError.__name__ in str(unknown.value)

    with pytest.raises(Exception) as unreachable:
        spark.read.format("pyrocketmq").option("nameServer", "127.0.0.1:1").option(
            "topic", "T"
        ).load().collect()
    assert MQConnectionError.__name__ in str(unreachable.value) and "nameServer" in str(unreachable.value)

    with pytest.raises(Exception) as bad:
        _read(spark, rmq, "SparkBatch", startingOffsets="yesterday").collect()
    assert "startingOffsets='yesterday'" in str(bad.value)


def test_several_topics_and_starting_timestamp(spark, rmq):
    import time

    rmq.create_topic("SparkTsA", queues=2)
    rmq.create_topic("SparkTsB", queues=2)
    rmq.produce("SparkTsA", [f"a-old-{i}".encode() for i in range(6)])
    rmq.produce("SparkTsB", [f"b-old-{i}".encode() for i in range(4)])
    time.sleep(1.2)
    since = int(time.time() * 1000)
    time.sleep(0.05)
    rmq.produce("SparkTsA", [f"a-new-{i}".encode() for i in range(5)])
    rmq.produce("SparkTsB", [f"b-new-{i}".encode() for i in range(3)])

    both = _read(spark, rmq, "SparkTsA,SparkTsB").collect()
    assert len(both) == 18 and {r.topic for r in both} == {"SparkTsA", "SparkTsB"}
    recent = _read(spark, rmq, "SparkTsA, SparkTsB", startingTimestamp=str(since)).collect()
    assert sorted(bytes(r.body).decode() for r in recent) == sorted(
        [f"a-new-{i}" for i in range(5)] + [f"b-new-{i}" for i in range(3)])
