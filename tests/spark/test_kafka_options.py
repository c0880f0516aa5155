"""The options Kafka users reach for, against a real broker: ``subscribePattern`` (topics created
while a query runs included), ``minOffsetsPerTrigger`` / ``maxTriggerDelay`` with
``maxOffsetsPerTrigger``, the timestamp options of batch reads, and offsets behind latest."""

from __future__ import annotations

import json
import time

from pyrocketmq.spark import offsets_behind_latest

from .conftest import read_stream, run_available_now, wait_for


def _memory_query(df, name: str, trigger: str = "200 milliseconds"):
    return (df.selectExpr("topic", "CAST(body AS STRING) AS body").writeStream.format("memory")
            .queryName(name).trigger(processingTime=trigger).start())


def _bodies(spark, name: str) -> list[str]:
    return [r.body for r in spark.sql(f"SELECT body FROM {name}").collect()]


def test_subscribe_pattern_reads_matching_topics_and_picks_up_new_ones(spark, rmq):
    rmq.create_topic("PatOrders-eu", queues=2)
    rmq.create_topic("PatOrders-us", queues=1)
    rmq.create_topic("PatOther", queues=1)
    rmq.produce("PatOrders-eu", [f"eu-{i}".encode() for i in range(4)])
    rmq.produce("PatOrders-us", [f"us-{i}".encode() for i in range(3)])
    rmq.produce("PatOther", [b"other"])

    batch = (spark.read.format("pyrocketmq").option("nameServer", rmq.ns)
             .option("subscribePattern", "PatOrders-.*").load().collect())
    assert sorted(r.topic for r in batch) == ["PatOrders-eu"] * 4 + ["PatOrders-us"] * 3

    q = _memory_query(read_stream(spark, rmq, subscribePattern="PatOrders-.*", startingOffsets="earliest"),
                      "pattern_rows")
    try:
        wait_for(q, lambda: len(_bodies(spark, "pattern_rows")) >= 7, "the matching topics' rows")
        rmq.create_topic("PatOrders-apac", queues=2)  # created while the query runs
        rmq.produce("PatOrders-apac", [f"apac-{i}".encode() for i in range(5)])
        wait_for(q, lambda: len(_bodies(spark, "pattern_rows")) >= 12, "the new topic's rows")
        time.sleep(0.5)  # a batch more: nothing else may arrive
        rows = spark.sql("SELECT topic, body FROM pattern_rows").collect()
    finally:
        q.stop()
    assert sorted(r.body for r in rows) == sorted(
        [f"eu-{i}" for i in range(4)] + [f"us-{i}" for i in range(3)] + [f"apac-{i}" for i in range(5)])
    assert {r.topic for r in rows} == {"PatOrders-eu", "PatOrders-us", "PatOrders-apac"}


def test_min_offsets_per_trigger_waits_for_the_minimum_or_the_delay(spark, rmq):
    rmq.create_topic("SparkMinTrigger", queues=2)
    rmq.produce("SparkMinTrigger", [f"m-{i}".encode() for i in range(45)])
    df = read_stream(spark, rmq, "SparkMinTrigger", startingOffsets="earliest", minOffsetsPerTrigger=10,
                     maxTriggerDelay="3s", maxOffsetsPerTrigger=20)
    q = _memory_query(df, "min_trigger_rows")

    def sizes() -> list[int]:
        return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]

    try:
        wait_for(q, lambda: len(sizes()) >= 2, "two full batches")
        # 5 offsets are left, below the minimum of 10: the next batch waits for the 3 s delay, so
        # these 3 join it (without the minimum the 5 would have been a batch of their own at once).
        rmq.produce("SparkMinTrigger", [f"m-{i}".encode() for i in range(45, 48)])
        wait_for(q, lambda: sum(sizes()) >= 48, "the rest, once the delay passed")
        time.sleep(0.5)
        got, bodies = sizes(), _bodies(spark, "min_trigger_rows")
    finally:
        q.stop()
    assert got == [20, 20, 8], got
    assert sorted(bodies) == sorted(f"m-{i}" for i in range(48))


def test_timestamp_options_of_batch_reads(spark, rmq):
    rmq.create_topic("SparkTimes", queues=2)
    phases: dict[str, list] = {}
    marks = []
    for phase in ("old", "mid", "new"):
        if phase != "old":
            time.sleep(1.1)
            marks.append(int(time.time() * 1000))
            time.sleep(0.05)
        phases[phase] = rmq.produce("SparkTimes", [f"{phase}-{i}".encode() for i in range(6)])
    t_mid, t_new = marks
    broker = rmq.cluster.broker_name

    def bodies(**opts) -> list[str]:
        reader = spark.read.format("pyrocketmq").option("nameServer", rmq.ns).option("topic", "SparkTimes")
        for k, v in opts.items():
            reader = reader.option(k, v)
        return sorted(bytes(r.body).decode() for r in reader.load().collect())

    def sent(phase: str, queue: int | None = None) -> list[str]:
        return [f"{phase}-{i}" for i, r in enumerate(phases[phase])
                if queue is None or r.message_queue.queue_id == queue]

    assert bodies(endingTimestamp=str(t_mid)) == sorted(sent("old"))
    assert bodies(startingTimestamp=str(t_mid), endingTimestamp=str(t_new)) == sorted(sent("mid"))
    # Per queue: queue 0 from the middle phase, queue 1 (not named) from startingOffsets=earliest;
    # both up to the new phase; the ending options win over endingOffsets.
    per_queue = bodies(
        startingOffsetsByTimestamp=json.dumps({"SparkTimes": {broker: {"0": t_mid}}}),
        endingOffsetsByTimestamp=json.dumps({"SparkTimes": {broker: {"0": t_new, "1": t_new}}}),
        endingOffsets="latest",
    )
    assert per_queue == sorted(sent("mid", 0) + sent("old", 1) + sent("mid", 1))
    # A time after every message: the queues start at their latest offset; endingTimestamp wins
    # over endingOffsetsByTimestamp.
    assert bodies(startingTimestamp=str(int(time.time() * 1000) + 60_000)) == []
    assert bodies(endingTimestamp=str(t_mid), endingOffsetsByTimestamp=json.dumps(
        {"SparkTimes": {broker: {"0": t_new}}})) == sorted(sent("old"))


def test_progress_shows_latest_offsets_and_how_far_behind_a_batch_is(spark, rmq, tmp_path):
    rmq.create_topic("SparkBehind", queues=2)
    rmq.produce("SparkBehind", [f"b-{i}".encode() for i in range(20)])
    df = read_stream(spark, rmq, "SparkBehind", startingOffsets="earliest", maxOffsetsPerTrigger=8)
    q = run_available_now(df.selectExpr("CAST(body AS STRING) AS body"), tmp_path / "out", tmp_path / "ckpt")
    broker = rmq.cluster.broker_name
    batches = [p for p in q.recentProgress if p["numInputRows"]]
    assert [p["numInputRows"] for p in batches] == [8, 8, 4]
    first, last = batches[0]["sources"][0], batches[-1]["sources"][0]
    # PySpark gives Python sources no way to fill ``metrics``; latestOffset comes from reportLatestOffset.
    assert first["metrics"] == {}
    # The progress carries offsets as JSON text.
    assert json.loads(first["latestOffset"]) == {"SparkBehind": {broker: {"0": 10, "1": 10}}}
    assert json.loads(first["endOffset"]) == {"SparkBehind": {broker: {"0": 4, "1": 4}}}
    assert offsets_behind_latest(first) == {
        "minOffsetsBehindLatest": "6", "maxOffsetsBehindLatest": "6", "avgOffsetsBehindLatest": "6.0"}
    assert offsets_behind_latest(last)["maxOffsetsBehindLatest"] == "0"
