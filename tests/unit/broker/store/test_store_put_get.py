"""Put and get through the MessageStore facade (no crash involved)."""

from __future__ import annotations

import os
import struct

import pytest

from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.settings import StoreSettings
from pyrocketmq.broker.store.values import GetMessageStatus as S, MessageInner, PutMessageStatus
from pyrocketmq.remoting.message import (
    BLANK_MAGIC,
    SysFlag,
    create_offset_msg_id,
    decode_message,
    decode_messages,
    pack_host,
    tags_code,
)
from pyrocketmq.remoting.names import SCHEDULE_TOPIC

from .storekit import HOST, SEGMENT, check_queue_consistent, put, put_batch, read_queue, segment_paths


def test_put_then_pull_one(store: MessageStore) -> None:
    r = store.put_message(
        MessageInner.build(
            "T",
            b"hello",
            {"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "U1"},
            queue_id=2,
            born_timestamp=7,
            flag=3,
        )
    )
    assert r.status == PutMessageStatus.PUT_OK and r.ok
    assert (r.wrote_offset, r.queue_offset, r.message_count) == (0, 0, 1)
    assert r.msg_id == create_offset_msg_id(HOST, 0) and r.end_offset == r.wrote_bytes
    g = store.get_message("g", "T", 2, 0, 32)
    assert g.status == S.FOUND and g.message_count == 1 and g.buffer_total_size == r.wrote_bytes
    assert (g.next_begin_offset, g.min_offset, g.max_offset) == (1, 0, 1)
    assert isinstance(g.buffers[0], memoryview)
    (m,) = decode_messages(bytes(g.buffers[0]))
    assert (m.topic, m.body, m.flag, m.queue_id, m.queue_offset, m.commitlog_offset) == (
        "T",
        b"hello",
        3,
        2,
        0,
        0,
    )
    assert m.store_host == HOST and m.born_timestamp == 7 and m.store_timestamp == r.store_timestamp
    assert m.tags == "a" and m.keys == ["k1", "k2"] and m.msg_id == "U1" and m.offset_msg_id == r.msg_id
    assert store.look_message_by_offset(0) == bytes(g.buffers[0])
    assert store.look_message_by_offset(3) is None and store.look_message_by_offset(10**9) is None


def test_segments_roll_with_a_blank_record(store: MessageStore, settings: StoreSettings) -> None:
    results = [put(store, body=bytes([i]) * 1000) for i in range(20)]
    size = results[0].wrote_bytes
    per_segment = (SEGMENT - 8) // size
    assert per_segment == 3
    for i, r in enumerate(results):
        assert r.wrote_offset == (i // 3) * SEGMENT + (i % 3) * size  # records never span segments
        assert r.queue_offset == i
    paths = segment_paths(settings)
    assert len(paths) == 7
    with open(paths[0], "rb") as f:
        f.seek(3 * size)
        remaining, magic = struct.unpack(">iI", f.read(8))
    assert remaining == SEGMENT - 3 * size and magic == BLANK_MAGIC
    msgs = read_queue(store)
    assert [m.body[0] for m in msgs] == list(range(20))
    check_queue_consistent(store, "T", 0)


def test_record_that_exactly_fills_a_segment_and_one_that_never_fits(store: MessageStore) -> None:
    overhead = put(store, queue_id=1, body=b"").wrote_bytes  # at 0
    room = SEGMENT - overhead
    r = put(store, body=b"y" * (room - overhead - 8))  # ends exactly 8 bytes before the segment end
    assert r.wrote_offset == overhead and r.wrote_offset + r.wrote_bytes == SEGMENT - 8
    r2 = put(store, body=b"z")
    assert r2.wrote_offset == SEGMENT  # the 8 bytes became a blank record
    too_big = store.put_message(MessageInner.build("T", b"w" * (SEGMENT - overhead - 7)))
    assert too_big.status == PutMessageStatus.MESSAGE_ILLEGAL
    assert [len(m.body) for m in read_queue(store)] == [room - overhead - 8, 1]


def test_batch_is_consecutive_in_one_segment(store: MessageStore) -> None:
    put(store, body=b"a" * 3000)
    r = put_batch(store, "T", 0, [(bytes([65 + i]) * 200, {"TAGS": "b"}) for i in range(5)])
    assert r.ok and r.message_count == 5 and r.queue_offset == 1
    assert r.wrote_offset == SEGMENT  # the whole batch did not fit behind the first message
    ids = r.msg_id.split(",")
    assert len(ids) == 5 and ids[0] == create_offset_msg_id(HOST, SEGMENT)
    got = read_queue(store)
    assert [m.queue_offset for m in got] == list(range(6))
    assert [m.body[:1] for m in got[1:]] == [b"A", b"B", b"C", b"D", b"E"]
    assert [m.offset_msg_id for m in got[1:]] == ids
    check_queue_consistent(store, "T", 0)
    with pytest.raises(ValueError, match="empty batch"):
        put_batch(store, "T", 0, [])


def test_refusals(settings: StoreSettings) -> None:
    store = MessageStore(settings, HOST)
    assert store.put_message(MessageInner.build("T", b"x")).status == PutMessageStatus.SERVICE_NOT_AVAILABLE
    store.load()
    try:
        assert (
            store.put_message(MessageInner.build("t" * 128, b"x")).status == PutMessageStatus.MESSAGE_ILLEGAL
        )
        big = MessageInner.build("T", b"x", {"K": "v" * 33000})
        assert store.put_message(big).status == PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
        settings.max_message_size = 500
        assert (
            store.put_message(MessageInner.build("T", b"x" * 500)).status == PutMessageStatus.MESSAGE_ILLEGAL
        )
        assert store.get_max_phy_offset() == 0
    finally:
        store.shutdown()
    assert store.put_message(MessageInner.build("T", b"x")).status == PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_ipv6_hosts_set_the_sys_flag_bits(store: MessageStore) -> None:
    m = MessageInner.build(
        "T", b"x", born_host=pack_host("::1", 4321), store_host=pack_host("fe80::2", 10911)
    )
    r = store.put_message(m)
    got = store.look_message(r.wrote_offset)
    assert got is not None and got.born_host == ("::1", 4321) and got.store_host == ("fe80::2", 10911)
    assert got.sys_flag & SysFlag.BORNHOST_V6 and got.sys_flag & SysFlag.STOREHOST_V6
    assert len(r.msg_id) == 56


# -- get statuses -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "offset", "status", "next_offset"),
    [
        ("NONE", 0, S.NO_MESSAGE_IN_QUEUE, 0),  # a queue never written
        ("NONE", 7, S.NO_MESSAGE_IN_QUEUE, 0),  # (the processor answers OFFSET_MOVED for offset != 0)
        ("T", 0, S.FOUND, 5),
        ("T", 3, S.FOUND, 5),
        ("T", 5, S.OFFSET_OVERFLOW_ONE, 5),
        ("T", 9, S.OFFSET_OVERFLOW_BADLY, 5),
        ("T", -1, S.OFFSET_TOO_SMALL, 0),
        ("ONLY_B", 0, S.NO_MATCHED_MESSAGE, 3),  # scanned, none matched the filter
    ],
)
def test_get_status_grid(store: MessageStore, topic: str, offset: int, status: S, next_offset: int) -> None:
    for _ in range(5):
        put(store, "T", tags="a")
    for _ in range(3):
        put(store, "ONLY_B", tags="b")
    want_a = tags_code("a")
    g = store.get_message("g", topic, 0, offset, 32, None, lambda code: code == want_a)
    assert (g.status, g.next_begin_offset) == (status, next_offset)
    if status == S.FOUND:
        assert g.message_count == 5 - offset
    else:
        assert g.buffers == [] and g.message_count == 0


def test_statuses_after_retention_moved_the_min_offset(store: MessageStore) -> None:
    for i in range(25):
        put(store, body=bytes([i]) * 1000)  # 3 per segment: 9 segments
    assert store.clean_expired(force=True) == 8
    mn, mx = store.get_min_offset_in_queue("T", 0), store.get_max_offset_in_queue("T", 0)
    assert (mn, mx) == (24, 25)
    g = store.get_message("g", "T", 0, 3, 32)
    assert (g.status, g.next_begin_offset) == (S.OFFSET_TOO_SMALL, 24)
    g = store.get_message("g", "T", 0, 40, 32)
    assert (g.status, g.next_begin_offset) == (S.OFFSET_OVERFLOW_BADLY, 25)
    g = store.get_message("g", "T", 0, 24, 32)
    assert g.status == S.FOUND and decode_message(g.buffers[0])[0].body[0] == 24


def test_message_was_removing_and_offset_found_null(store: MessageStore) -> None:
    for i in range(25):
        put(store, body=bytes([i]) * 1000)
    store.commit_log.queue.delete_first(4)  # messages 0..11 went; the queue's min is stale
    g = store.get_message("g", "T", 0, 0, 32)
    assert (g.status, g.next_begin_offset, g.message_count) == (S.MESSAGE_WAS_REMOVING, 10, 0)
    g = store.get_message("g", "T", 0, 10, 32)  # removed ones are skipped, the rest is found
    assert (g.status, g.next_begin_offset, g.message_count) == (S.FOUND, 20, 8)
    cq = store.find_consume_queue("T", 0)
    assert cq is not None
    cq.queue.delete_first(1)
    g = store.get_message("g", "T", 0, 2, 32)
    assert (g.status, g.next_begin_offset) == (S.OFFSET_FOUND_NULL, 10)


def test_tag_filter_skips_but_counts(store: MessageStore) -> None:
    for i in range(8):
        put(store, tags="a" if i % 3 == 0 else "b", body=bytes([i]))
    a = tags_code("a")
    g = store.get_message("g", "T", 0, 1, 32, None, lambda c: c == a)
    assert g.status == S.FOUND and g.next_begin_offset == 8
    assert [m.body[0] for m in decode_messages(b"".join(map(bytes, g.buffers)))] == [3, 6]


def test_limits(store: MessageStore) -> None:
    sizes = [put(store, body=b"q" * 100).wrote_bytes for _ in range(9)]
    g = store.get_message("g", "T", 0, 0, 3)
    assert g.message_count == 3 and g.next_begin_offset == 3
    g = store.get_message("g", "T", 0, 0, 32, 10)  # smaller than one message: still one
    assert g.message_count == 1 and g.next_begin_offset == 1
    g = store.get_message("g", "T", 0, 0, 32, sizes[0] * 2 + 5)
    assert g.message_count == 2
    assert not g.suggest_pull_from_slave
    store.memory_window = 0  # everything is "on disk" now: 8 messages, 64 KiB
    g = store.get_message("g", "T", 0, 0, 32)
    assert g.message_count == 8 and g.suggest_pull_from_slave


# -- times and offsets ----------------------------------------------------------------------------


def test_offset_by_time(store: MessageStore, clock: list[int]) -> None:
    for ts in (1000, 2000, 2000, 3000, 5000):
        clock[0] = ts
        put(store)
    by = lambda t: store.get_offset_by_time("T", 0, t)  # noqa: E731
    assert by(2000) == 1  # exact: the first of equals
    assert by(2600) == 3  # closer to 3000
    assert by(2500) == 2  # a tie goes to the earlier
    assert by(4100) == 4 and by(3900) == 3
    assert by(0) == 0 and by(99_999) == 4
    assert store.get_offset_by_time("NONE", 0, 5) == 0
    assert store.get_earliest_message_time("T", 0) == 1000
    assert store.get_earliest_message_time("NONE", 0) == -1
    assert store.get_message_store_timestamp("T", 0, 3) == 3000
    assert store.get_message_store_timestamp("T", 0, 5) == -1


def test_store_time_never_goes_back(store: MessageStore, clock: list[int]) -> None:
    clock[0] = 5000
    put(store)
    clock[0] = 4000  # the wall clock stepped back
    assert put(store).store_timestamp == 5000


def test_schedule_topic_tags_code_is_the_delivery_time(store: MessageStore, clock: list[int]) -> None:
    clock[0] = 1_000_000
    put(store, SCHEDULE_TOPIC, 2, DELAY="3", REAL_TOPIC="T")
    put(store, SCHEDULE_TOPIC, 2, DELAY="99")
    cq = store.find_consume_queue(SCHEDULE_TOPIC, 2)
    assert cq is not None
    assert cq.get(0)[2] == 1_000_000 + 10_000  # type: ignore[index]
    assert cq.get(1)[2] == 1_000_000 + 7_200_000  # type: ignore[index]


def test_dispatch_hook_and_transactions(store: MessageStore) -> None:
    calls = []
    store.on_dispatch = lambda *a: calls.append(a)
    put(store, "T", 1, tags="a")
    half = store.put_message(MessageInner.build("T", b"h", queue_id=1, sys_flag=SysFlag.TRANSACTION_PREPARED))
    committed = store.put_message(
        MessageInner.build("T", b"c", queue_id=1, sys_flag=SysFlag.TRANSACTION_COMMIT)
    )
    assert half.ok and half.queue_offset == 0 and committed.queue_offset == 1
    assert calls == [("T", 1, 1, tags_code("a"), {"TAGS": "a"}), ("T", 1, 2, 0, {})]
    assert store.get_max_offset_in_queue("T", 1) == 2
    assert store.look_message(half.wrote_offset).body == b"h"  # type: ignore[union-attr]


def test_delete_topics(store: MessageStore, settings: StoreSettings) -> None:
    put(store, "GONE", 0)
    put(store, "GONE", 1)
    put(store, "KEPT", 0)
    store.delete_topics({"GONE"})
    assert not os.path.exists(os.path.join(settings.consume_queue_dir, "GONE"))
    assert store.get_max_offset_in_queue("GONE", 0) == 0
    assert store.get_message("g", "GONE", 0, 0, 32).status == S.NO_MESSAGE_IN_QUEUE
    assert put(store, "GONE", 0).queue_offset == 0
    assert store.get_max_offset_in_queue("KEPT", 0) == 1
