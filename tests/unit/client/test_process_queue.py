"""ProcessQueue: the commit offset is the smallest offset still held; flow-control decisions."""

from __future__ import annotations

import pytest

from pyrocketmq.client.process_queue import ProcessQueue, flow_control
from pyrocketmq.remoting.message import MessageExt


def msgs(*offsets: int, size: int = 10) -> list[MessageExt]:
    return [MessageExt(queue_offset=o, body=b"x" * size) for o in offsets]


def test_all_done_commits_max_plus_one():
    pq = ProcessQueue()
    batch = msgs(*range(1001, 1011))
    pq.put_messages(batch)
    assert pq.remove_messages(batch) == 1011
    assert pq.msg_count == 0 and pq.msg_size == 0
    assert pq.commit_offset() == 1011


def test_stuck_first_message_holds_the_commit_offset():
    pq = ProcessQueue()
    batch = msgs(*range(1001, 1011))
    pq.put_messages(batch)
    assert pq.remove_messages(batch[1:]) == 1001  # 1002..1010 done, 1001 still consuming
    assert pq.commit_offset() == 1001
    assert pq.msg_count == 1
    assert pq.remove_messages(batch[:1]) == 1011


@pytest.mark.parametrize(
    ("done", "expected"),
    [
        ([1001], 1002),  # partly done from the front: smallest left
        ([1005], 1001),
        ([1001, 1002, 1003], 1004),
        ([1010], 1001),
        ([1002, 1004, 1006, 1008, 1010], 1001),
        (list(range(1001, 1010)), 1010),
    ],
)
def test_partly_done_commits_smallest_left(done, expected):
    pq = ProcessQueue()
    batch = {m.queue_offset: m for m in msgs(*range(1001, 1011))}
    pq.put_messages(list(batch.values()))
    assert pq.remove_messages([batch[o] for o in done]) == expected


def test_remove_on_empty_queue_is_minus_one_and_duplicates_are_ignored():
    pq = ProcessQueue()
    assert pq.remove_messages(msgs(1)) == -1
    pq.put_messages(msgs(5, 6))
    pq.put_messages(msgs(5, 6, 7))
    assert pq.msg_count == 3 and pq.msg_size == 30
    assert pq.max_span == 2


def test_batches_in_any_order_keep_the_held_offsets_sorted_and_counted():
    pq = ProcessQueue()
    pq.put_messages(msgs(10, 11, 12))  # a pull's answer past everything held
    pq.put_messages(msgs(5, 13, 11))  # out of order, one already held
    assert [m.queue_offset for m in pq.messages] == [5, 10, 11, 12, 13]
    assert (pq.msg_count, pq.msg_size, pq.queue_offset_max) == (5, 50, 13)
    assert pq.remove_messages(msgs(5, 10)) == 11  # the head, as the lite consumer polls it
    assert pq.remove_messages(msgs(13, 11)) == 12  # not the head
    assert [m.queue_offset for m in pq.messages] == [12] and (pq.msg_count, pq.msg_size) == (1, 10)


def test_orderly_take_commit_and_consume_again():
    pq = ProcessQueue()
    assert pq.put_messages(msgs(10, 11, 12)) is True  # dispatch a consume request
    assert pq.put_messages(msgs(13)) is False  # one is already scheduled
    taken = pq.take_messages(2)
    assert [m.queue_offset for m in taken] == [10, 11]
    pq.make_messages_to_consume_again(taken)
    assert [m.queue_offset for m in pq.take_messages(2)] == [10, 11]
    assert pq.commit() == 12
    assert [m.queue_offset for m in pq.take_messages(5)] == [12, 13]
    assert pq.commit() == 14
    assert pq.take_messages(1) == [] and pq.consuming is False
    assert pq.msg_count == 0
    assert pq.put_messages(msgs(14)) is True


def test_expired_messages_are_those_consumed_too_long():
    pq = ProcessQueue()
    batch = msgs(1, 2, 3)
    pq.put_messages(batch)
    pq.mark_consume_start(batch[:1], at_ms=1_000)
    pq.mark_consume_start(batch[1:2], at_ms=50_000)
    assert [m.queue_offset for m in pq.expired_messages(15_000, at_ms=60_000)] == [1]
    assert batch[0].properties["CONSUME_START_TIME"] == "1000"


def test_lock_expiry():
    pq = ProcessQueue(locked=True, last_lock_ms=1_000)
    assert not pq.lock_expired(30_000, at_ms=30_000)
    assert pq.lock_expired(30_000, at_ms=31_001)


@pytest.mark.parametrize(
    ("count", "size_mib", "span", "orderly", "expected"),
    [
        (1000, 0, 0, False, None),
        (1001, 0, 0, False, "count"),
        (10, 101, 0, False, "size"),
        (10, 100, 0, False, None),
        (10, 0, 2001, False, "span"),
        (10, 0, 2000, False, None),
        (10, 0, 5000, True, None),  # orderly queues are not limited by span
        (1001, 0, 5000, True, "count"),
    ],
)
def test_flow_control_grid(count, size_mib, span, orderly, expected):
    pq = ProcessQueue(msg_count=count, msg_size=size_mib * 1024 * 1024)
    if span:
        pq.put_messages(msgs(0, span, size=0))
        pq.msg_count, pq.msg_size = count, size_mib * 1024 * 1024
    assert flow_control(pq, max_count=1000, max_mib=100, max_span=2000, orderly=orderly) == expected
