from __future__ import annotations

import pytest

from pyrocketmq.broker.proxy.pop_state import BadHandle, Handle, PopTable, QueuePop


def test_leases_acks_and_the_base_that_follows_them():
    q = QueuePop(5, 5)
    for off in (5, 6, 7):
        q.lease(off, now_ms=0, invisible_ms=100, nonce=f"n{off}")
    assert q.next == 8 and q.base == 5
    assert q.ack(6, "n6") and q.base == 5  # 5 still in flight
    assert not q.ack(5, "wrong")  # a stale handle
    assert q.ack(5, "n5") and q.base == 7
    assert q.expired(50) == [] and q.expired(100) == [7]
    again = q.lease(7, now_ms=100, invisible_ms=100, nonce="n7b")
    assert again.attempt == 2 and not q.ack(7, "n7")  # the first receipt is stale now
    assert q.ack(7, "n7b") and q.base == 8 and not q.inflight and not q.acked


def test_filtered_offsets_are_done_and_fifo_holds_the_queue():
    q = QueuePop(0, 0)
    q.lease(3, now_ms=0, invisible_ms=10, nonce="a")  # 0..2 did not match the filter
    assert q.base == 3 and q.next == 4
    q.skip_to(9)
    assert q.held(5) and not q.held(10)
    assert q.ack(3, "a") and q.base == 9


def test_change_renews_the_nonce_and_restart_at_drops_what_is_gone():
    q = QueuePop(0, 0)
    q.lease(0, now_ms=0, invisible_ms=10, nonce="a")
    q.lease(1, now_ms=0, invisible_ms=10, nonce="b")
    assert q.change(0, "x", 0, 50, "c") is None
    lease = q.change(0, "a", 5, 50, "c")
    assert lease is not None and lease.deadline_ms == 55 and lease.nonce == "c" and lease.attempt == 1
    q.restart_at(1)
    assert q.base == 1 and list(q.inflight) == [1]


def test_the_table_round_trips_through_json():
    t = PopTable()
    q = t.open(("G", "T", 2), 10)
    q.lease(10, 0, 100, t.nonce(1000))
    q.lease(11, 0, 100, t.nonce(1000))
    q.ack(11, q.inflight[11].nonce)
    back = PopTable.from_dict(t.to_dict())
    q2 = back.get(("G", "T", 2))
    assert q2 is not None and (q2.base, q2.next, q2.acked) == (10, 12, {11})
    assert q2.inflight[10].deadline_ms == 100 and q2.inflight[10].nonce == q.inflight[10].nonce
    assert t.nonce(2000) != t.nonce(2000)


def test_receipt_handles():
    h = Handle("Topic A", 3, 99, "18f.2", "broker-a")
    assert Handle.decode(h.encode()) == h
    for bad in ("", "xyz", "P1!!!", "P1" + "YWJj"):
        with pytest.raises(BadHandle):
            Handle.decode(bad)
