"""The orderly lock table: RocketMQ 4.9's lock / renew / expire / unlock rules, on an injected clock."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.queue_lock import LOCK_MAX_LIVE_MS, QueueLockTable
from pyrocketmq.remoting.body import MessageQueue

Q0, Q1, Q2 = (MessageQueue("T", "broker-a", i) for i in range(3))


@pytest.fixture
def clock():
    return [1_000_000]


@pytest.fixture
def table(clock):
    return QueueLockTable(clock=lambda: clock[0])


def test_free_queues_lock_for_the_first_client(table):
    assert table.try_lock_batch("g", [Q0, Q1], "c1") == {Q0, Q1}
    assert table.holder("g", Q0) == "c1" and table.is_locked("g", Q1, "c1")


def test_held_queue_is_refused_to_another_client_and_kept_by_its_holder(table):
    table.try_lock_batch("g", [Q0], "c1")
    assert table.try_lock_batch("g", [Q0, Q1], "c2") == {Q1}
    assert table.try_lock_batch("g", [Q0], "c1") == {Q0}
    assert table.holder("g", Q0) == "c1" and table.holder("g", Q1) == "c2"


def test_groups_are_independent(table):
    table.try_lock_batch("g1", [Q0], "c1")
    assert table.try_lock_batch("g2", [Q0], "c2") == {Q0}


@pytest.mark.parametrize(
    ("elapsed", "taken_over"),
    [(0, False), (LOCK_MAX_LIVE_MS - 1, False), (LOCK_MAX_LIVE_MS, False), (LOCK_MAX_LIVE_MS + 1, True)],
)
def test_a_lock_expires_after_60_seconds_without_renewal(table, clock, elapsed, taken_over):
    table.try_lock_batch("g", [Q0], "c1")
    clock[0] += elapsed
    assert (table.try_lock_batch("g", [Q0], "c2") == {Q0}) is taken_over
    assert table.holder("g", Q0) == ("c2" if taken_over else "c1")


def test_renewal_extends_the_lock(table, clock):
    table.try_lock_batch("g", [Q0], "c1")
    clock[0] += 40_000
    table.try_lock_batch("g", [Q0], "c1")  # renew, as clients do every 20 s
    clock[0] += 40_000
    assert table.try_lock_batch("g", [Q0], "c2") == set()
    assert table.is_locked("g", Q0, "c1")


def test_expired_lock_is_not_held(table, clock):
    table.try_lock_batch("g", [Q0], "c1")
    clock[0] += LOCK_MAX_LIVE_MS + 1
    assert not table.is_locked("g", Q0, "c1") and table.holder("g", Q0) is None


def test_unlock_releases_only_the_callers_locks(table):
    table.try_lock_batch("g", [Q0, Q1], "c1")
    table.try_lock_batch("g", [Q2], "c2")
    assert table.unlock_batch("g", [Q0, Q2], "c1") == {Q0}
    assert table.holder("g", Q0) is None and table.holder("g", Q2) == "c2" and table.holder("g", Q1) == "c1"
    assert table.try_lock_batch("g", [Q0], "c2") == {Q0}


def test_unlock_of_unknown_group_is_a_no_op(table):
    assert table.unlock_batch("nobody", [Q0], "c1") == set()
