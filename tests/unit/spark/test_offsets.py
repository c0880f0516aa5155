"""Offset JSON, starting/ending offset rules and data-loss detection (no Spark, no sockets)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.spark.offsets import (
    EARLIEST,
    LATEST,
    DataLossError,
    Loss,
    OffsetKind,
    OffsetOptionError,
    OffsetSpec,
    data_loss_error,
    decode_offsets,
    dumps,
    encode_offsets,
    find_losses,
    forward,
    offsets_behind_latest,
    parse_offset_spec,
    parse_timestamps,
    resolve,
)

A0, A1, B0 = (
    MessageQueue("T", "broker-a", 0),
    MessageQueue("T", "broker-a", 1),
    MessageQueue("T", "broker-b", 0),
)
U0 = MessageQueue("U", "broker-a", 0)

queues = st.builds(MessageQueue, st.sampled_from(["T", "U", "Orders"]), st.sampled_from(["broker-a", "b"]),
                   st.integers(0, 40))


@given(st.dictionaries(queues, st.integers(0, 2**62)))
def test_encode_decode_round_trip_and_canonical_json(table):
    doc = encode_offsets(table)
    assert decode_offsets(json.loads(json.dumps(doc))) == table
    # Insertion order does not matter: equal offsets give equal JSON (Spark compares JSON).
    assert json.dumps(encode_offsets(dict(reversed(list(table.items()))))) == json.dumps(doc)


def test_queue_ids_sort_as_numbers():
    assert list(encode_offsets({MessageQueue("T", "b", 10): 1, MessageQueue("T", "b", 9): 1})["T"]["b"]) == [
        "9",
        "10",
    ]
    assert dumps({A0: 3}) == '{"T":{"broker-a":{"0":3}}}'


@pytest.mark.parametrize(
    "doc, message",
    [
        ([1], "must be a JSON object"),
        ({"T": 3}, "must map broker names"),
        ({"T": {"b": [1]}}, "must map queue ids"),
        ({"T": {"b": {"x": 1}}}, "queue id 'x'"),
        ({"T": {"b": {"0": -3}}}, "must be an integer >= 0"),
        ({"T": {"b": {"0": 1.5}}}, "must be an integer"),
        ({"T": {"b": {"0": True}}}, "must be an integer"),
    ],
)
def test_decode_rejects_malformed(doc, message):
    with pytest.raises(OffsetOptionError, match=message):
        decode_offsets(doc, "startingOffsets")


@pytest.mark.parametrize(
    "text, kind",
    [
        (None, OffsetKind.LATEST),
        ("", OffsetKind.LATEST),
        ("earliest", OffsetKind.EARLIEST),
        ("LATEST", OffsetKind.LATEST),
        (" group ", OffsetKind.GROUP),
        ('{"T": {"broker-a": {"0": 4}}}', OffsetKind.SPECIFIC),
    ],
)
def test_parse_offset_spec(text, kind):
    assert parse_offset_spec(text, default=OffsetKind.LATEST, what="startingOffsets").kind is kind


def test_parse_offset_spec_errors():
    with pytest.raises(OffsetOptionError, match="startingOffsets='yesterday' is not understood"):
        parse_offset_spec("yesterday", default=OffsetKind.LATEST, what="startingOffsets")
    with pytest.raises(OffsetOptionError, match="not valid JSON"):
        parse_offset_spec("{nope", default=OffsetKind.LATEST, what="startingOffsets")
    with pytest.raises(OffsetOptionError, match="endingOffsets='group'"):
        parse_offset_spec("group", default=OffsetKind.LATEST, what="endingOffsets", allow_group=False)


MINS = {A0: 10, A1: 0, B0: 5}
MAXS = {A0: 100, A1: 0, B0: 50}


@pytest.mark.parametrize(
    "spec, committed, fallback, expected",
    [
        (OffsetSpec(OffsetKind.EARLIEST), None, OffsetKind.EARLIEST, {A0: 10, A1: 0, B0: 5}),
        (OffsetSpec(OffsetKind.LATEST), None, OffsetKind.EARLIEST, {A0: 100, A1: 0, B0: 50}),
        # group: committed where stored, the fallback elsewhere; never past the max
        (
            OffsetSpec(OffsetKind.GROUP),
            {A0: 42, A1: -1, B0: 70},
            OffsetKind.EARLIEST,
            {A0: 42, A1: 0, B0: 50},
        ),
        (OffsetSpec(OffsetKind.GROUP), {}, OffsetKind.LATEST, {A0: 100, A1: 0, B0: 50}),
        # JSON: -2 / -1 sentinels, absent queues take the fallback, past-the-end is clamped
        (
            OffsetSpec(OffsetKind.SPECIFIC, ((A0, EARLIEST), (B0, LATEST))),
            None,
            OffsetKind.EARLIEST,
            {A0: 10, A1: 0, B0: 50},
        ),
        (
            OffsetSpec(OffsetKind.SPECIFIC, ((A0, 3), (B0, 999))),
            None,
            OffsetKind.LATEST,
            {A0: 3, A1: 0, B0: 50},
        ),
    ],
)
def test_resolve_grid(spec, committed, fallback, expected):
    assert resolve([A0, A1, B0], spec, min_offsets=MINS, max_offsets=MAXS, committed=committed,
                   fallback=fallback) == expected


def test_offsets_below_the_min_are_losses():
    start = {A0: 3, A1: 0, B0: 5, U0: 7}
    losses = find_losses(start, MINS)
    assert losses == [Loss(A0, 3, 10)]
    assert losses[0].lost == 7
    assert forward(start, MINS) == {A0: 10, A1: 0, B0: 5, U0: 7}
    err = data_loss_error(losses)
    assert isinstance(err, DataLossError)
    text = str(err)
    assert "7 message(s)" in text and "T/broker-a/0: wanted 3, oldest stored 10" in text
    assert "failOnDataLoss=false" in text and "fileReservedTime" in text


def test_data_loss_message_is_bounded():
    losses = [Loss(MessageQueue("T", "b", i), 0, 1) for i in range(8)]
    assert "and 3 more queue(s)" in str(data_loss_error(losses))


@given(st.dictionaries(queues, st.integers(0, 1000)), st.dictionaries(queues, st.integers(0, 1000)))
def test_forward_never_moves_back(start, floor):
    moved = forward(start, floor)
    assert set(moved) == set(start)
    assert all(moved[mq] >= start[mq] for mq in start)
    assert not find_losses(moved, floor)


def test_queues_that_went_back_are_resets():
    from pyrocketmq.spark.offsets import find_resets, reset_error

    resets = find_resets({A0: 30, A1: 0, B0: 5}, {A0: 4, A1: 0, B0: 50})
    assert resets == [Loss(A0, 30, 4)]
    text = str(reset_error(resets))
    assert "T/broker-a/0: at 30, the broker's end is 4" in text and "failOnDataLoss=false" in text


def test_parse_timestamps_takes_the_offset_json_shape():
    assert parse_timestamps('{"T": {"broker-a": {"0": 1700000000000, "1": 0}}}', "x") == {
        A0: 1_700_000_000_000, A1: 0}
    with pytest.raises(OffsetOptionError, match="x: T/broker-a/0 has -2"):
        parse_timestamps('{"T": {"broker-a": {"0": -2}}}', "x")
    with pytest.raises(OffsetOptionError, match="queue id 'q' of T/broker-a is not a number"):
        parse_timestamps('{"T": {"broker-a": {"q": 5}}}', "x")


def test_offsets_behind_latest_from_a_progress_entry():
    progress = {
        "startOffset": {"T": {"broker-a": {"0": 0, "1": 0}}},
        "endOffset": {"T": {"broker-a": {"0": 5, "1": 10}}},
        "latestOffset": json.dumps({"T": {"broker-a": {"0": 9, "1": 10}, "broker-b": {"0": 2}}}),
        "metrics": {},
    }
    # per queue of latestOffset: 4, 0 and 2 (a queue the batch had not seen counts from 0)
    assert offsets_behind_latest(progress) == {
        "minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "4", "avgOffsetsBehindLatest": "2.0"}
    assert offsets_behind_latest({"endOffset": {"T": {"broker-a": {"0": 5}}}, "latestOffset": None}) == {}
