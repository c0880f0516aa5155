"""The exactly-once sink's pure parts: the check-back decision grid, batch records in a checkpoint
folder, the deliveryGuarantee option."""

from __future__ import annotations

import json

import pytest

from pyrocketmq.client import MQClientError, TransactionState
from pyrocketmq.spark.exactly_once import (
    ATTEMPT_PROP,
    BATCH_PROP,
    QUERY_PROP,
    SINK_DIR,
    BatchCommit,
    Phase,
    SinkCheckpoint,
    decide_check,
    local_checkpoint,
)
from pyrocketmq.spark.options import DeliveryGuarantee, SinkOptions

C, R, U = TransactionState.COMMIT, TransactionState.ROLLBACK, TransactionState.UNKNOWN
PROPS = {QUERY_PROP: "q", BATCH_PROP: "5", ATTEMPT_PROP: "a1"}


def rec(phase=Phase.COMMITTED, attempts=("a1", "a2"), pending=(), pending_all=False, batch=5):
    return BatchCommit(batch, "q", frozenset(attempts), phase, frozenset(pending), pending_all)


@pytest.mark.parametrize(
    ("props", "record", "last_committed", "want"),
    [
        # no record: the batch may still commit (UNKNOWN) unless Spark committed it without us
        (PROPS, None, None, U),
        (PROPS, None, 4, U),
        (PROPS, None, 5, R),
        (PROPS, None, 9, R),
        # a superseded attempt (a replayed batch, a retried or speculative task)
        (PROPS, rec(attempts=("b1",)), 5, R),
        (PROPS, rec(attempts=("b1",), phase=Phase.COMMITTING), None, R),
        # the committed attempt: the driver is ending it → wait; it ended it → the copy is dropped
        (PROPS, rec(phase=Phase.COMMITTING), None, U),
        (PROPS, rec(), 5, R),
        (PROPS, rec(), None, R),
        # ...unless its END was not confirmed, or the committing run died (settled record)
        (PROPS, rec(pending=("m",)), 5, C),
        (PROPS, rec(pending=("other",)), 5, R),
        (PROPS, rec(phase=Phase.COMMITTING).settled(), None, C),
        # not ours to answer
        ({**PROPS, QUERY_PROP: "other"}, rec(pending=("m",)), 5, U),
        ({QUERY_PROP: "q", BATCH_PROP: "5"}, rec(pending=("m",)), 5, U),
        ({}, None, 5, U),
        ({**PROPS, BATCH_PROP: "x"}, None, 5, U),
    ],
)
def test_check_back_decision(props, record, last_committed, want):
    got = decide_check(props, "m", checkpoint_query_id="q", record=record, last_committed=last_committed)
    assert got is want


def test_an_unknown_checkpoint_answers_unknown():
    assert decide_check(PROPS, "m", checkpoint_query_id=None, record=None, last_committed=None) is U


def test_records_round_trip_and_settle():
    r = rec(phase=Phase.COMMITTING, pending=("x",))
    assert BatchCommit.from_json(r.to_json()) == r
    assert r.committed(["m"]) == rec(pending=("m",))
    assert r.settled().pending_all and r.settled().phase is Phase.COMMITTED
    assert rec().settled() == rec()


def test_checkpoint_files(tmp_path):
    (tmp_path / "metadata").write_text(json.dumps({"id": "q"}) + "\n")
    (tmp_path / "commits").mkdir()
    for name in ("0", "1", ".2.tmp", "3.crc"):
        (tmp_path / "commits" / name).write_text("v1\n{}")
    ck = SinkCheckpoint(f"file://{tmp_path}")
    assert (ck.query_id(), ck.last_committed(), ck.record(5)) == ("q", 1, None)
    assert ck.answer(PROPS, "m") is U
    ck.write(rec(phase=Phase.COMMITTING))
    assert ck.record(5) == rec(phase=Phase.COMMITTING)
    assert ck.answer(PROPS, "m") is U
    ck.write(rec(pending=("m",)))
    assert ck.answer(PROPS, "m") is C and ck.answer(PROPS, "n") is R
    assert sorted(p.name for p in (tmp_path / SINK_DIR).iterdir()) == ["5"]  # no temp file left
    ck.write(rec(batch=2000))
    ck.purge(2000, keep=1000)
    assert ck.record(5) is None and ck.record(2000) is not None
    assert SinkCheckpoint(str(tmp_path / "none")).last_committed() is None


def test_only_local_checkpoints():
    assert local_checkpoint("/a/b/") == "/a/b"
    with pytest.raises(MQClientError, match="local or mounted"):
        local_checkpoint("s3a://bucket/ckpt")


def test_delivery_guarantee_option():
    ns = {"nameServer": "127.0.0.1:9876", "topic": "Out"}
    assert SinkOptions.from_options(ns).delivery is DeliveryGuarantee.AT_LEAST_ONCE
    eos = SinkOptions.from_options({**ns, "deliveryGuarantee": "exactlyOnce", "checkpointLocation": "/c/q1"})
    assert eos.exactly_once and eos.checkpoint_location == "/c/q1"
    assert eos.producer_group.startswith("PYROCKETMQ_SPARK_WRITER_EOS_")
    other = SinkOptions.from_options({**ns, "deliveryGuarantee": "EXACTLY_ONCE",
                                      "checkpointLocation": "/c/q2"})
    assert other.producer_group != eos.producer_group  # one group per query: check-backs reach it
    named = {**ns, "deliveryGuarantee": "exactlyOnce", "checkpointLocation": "/c", "producerGroup": "pg"}
    assert SinkOptions.from_options(named).producer_group == "pg"
    with pytest.raises(MQClientError, match="atLeastOnce or exactlyOnce"):
        SinkOptions.from_options({**ns, "deliveryGuarantee": "twice"})
    with pytest.raises(MQClientError, match="checkpointLocation"):
        SinkOptions.from_options({**ns, "deliveryGuarantee": "exactlyOnce"})
    with pytest.raises(MQClientError, match="local or mounted"):
        SinkOptions.from_options({**ns, "deliveryGuarantee": "exactlyOnce", "checkpointLocation": "hdfs://n/c"})
