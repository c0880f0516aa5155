"""Trace records in Apache's format without a broker: what a producer writes and what is read back."""

from __future__ import annotations

from pyrocketmq.client.trace import CONTENT, FIELD, PubTrace, decode_traces


def test_pub_records_round_trip_and_apaches_other_records_are_read():
    pub = PubTrace(1700000000123, "pg", "Orders", "AC11000100002A9F0000000000000001", "tagA", "k1 k2",
                   "10.0.0.5:10911", 42, 3, 0, "0A00000500002A9F0000000000000100", True)  # fmt: skip
    text = pub.encode()
    assert text.count(CONTENT) == 13 and text.endswith(FIELD) and pub.trace_keys() == [pub.msg_id, "k1", "k2"]
    sub_before = (
        CONTENT.join(["SubBefore", "1700000000200", "DefaultRegion", "cg", "req1", pub.msg_id, "0", "k1"])
        + FIELD
    )
    sub_after = (
        CONTENT.join(["SubAfter", "req1", pub.msg_id, "7", "false", "k1", "0", "1700000000300", "cg"]) + FIELD
    )
    records = decode_traces(text + sub_before + sub_after + "Garbage" + CONTENT + "x" + FIELD)
    assert [(r.kind, r.group, r.timestamp, r.cost_ms, r.success) for r in records] == [
        ("Pub", "pg", 1700000000123, 3, True), ("SubBefore", "cg", 1700000000200, 0, True),
        ("SubAfter", "cg", 1700000000300, 7, False),
    ]  # fmt: skip
    assert all(r.msg_id == pub.msg_id for r in records)


def test_consume_traces_encode_as_apaches_sub_records():
    from pyrocketmq.client.trace import ConsumeTrace

    before = ConsumeTrace("cg", "req9", (("ID1", 0, "k1"), ("ID2", 2, "")), 1700000000000)
    after = ConsumeTrace("cg", "req9", before.messages, before.timestamp, after=(12, False, 1700000000012))
    records = decode_traces(before.encode() + after.encode())
    assert [(r.kind, r.msg_id, r.request_id) for r in records] == [
        ("SubBefore", "ID1", "req9"),
        ("SubBefore", "ID2", "req9"),
        ("SubAfter", "ID1", "req9"),
        ("SubAfter", "ID2", "req9"),
    ]
    assert [(r.group, r.cost_ms, r.success, r.timestamp) for r in records[2:]] == [
        ("cg", 12, False, 1700000000012)
    ] * 2
    assert before.trace_keys() == ["ID1", "k1", "ID2"]
