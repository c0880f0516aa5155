"""SYNC_MASTER bookkeeping with an injected clock: who is woken, when, with what."""

from __future__ import annotations

from pyrocketmq.broker.ha.ack_table import AckTable


def _waiter(log: list[tuple[str, bool]], name: str):
    return lambda ok: log.append((name, ok))


def test_ack_wakes_every_waiter_at_or_below() -> None:
    t, log = AckTable(), []
    t.connect("s")
    for off in (100, 50, 200):
        t.wait(off, deadline=10.0, wake=_waiter(log, f"w{off}"))
    assert t.ack("s", 120) == 2
    assert sorted(log) == [("w100", True), ("w50", True)]
    assert t.waiting == 1
    t.ack("s", 200)
    assert log[-1] == ("w200", True) and t.waiting == 0


def test_deadline_wakes_false_once() -> None:
    t, log = AckTable(), []
    t.connect("s")
    t.wait(100, deadline=5.0, wake=_waiter(log, "a"))
    t.wait(100, deadline=7.0, wake=_waiter(log, "b"))
    assert t.next_deadline() == 5.0
    assert t.expire(4.9) == 0
    assert t.expire(5.0) == 1 and log == [("a", False)]
    assert t.next_deadline() == 7.0
    t.ack("s", 100)
    assert log == [("a", False), ("b", True)]
    assert t.expire(100.0) == 0 and t.next_deadline() is None


def test_already_acked_wakes_at_once() -> None:
    t, log = AckTable(), []
    t.connect("s")
    t.ack("s", 500)
    t.wait(400, deadline=1.0, wake=_waiter(log, "x"))
    assert log == [("x", True)] and t.waiting == 0


def test_best_slave_counts_and_acks_never_go_back() -> None:
    t = AckTable()
    assert t.acked == -1 and t.connected == 0
    t.connect("a")
    t.connect("b")
    t.ack("a", 10)
    t.ack("b", 30)
    t.ack("b", 20)
    assert t.slaves == {"a": 10, "b": 30} and t.acked == 30
    t.disconnect("b")
    assert t.acked == 10 and t.connected == 1


def test_fail_all() -> None:
    t, log = AckTable(), []
    t.connect("s")
    t.wait(1, 1.0, _waiter(log, "a"))
    t.fail_all()
    assert log == [("a", False)] and t.waiting == 0 and t.next_deadline() is None


def test_controller_mode_waits_for_every_member_of_the_set() -> None:
    t = AckTable()
    log: list[tuple[str, bool]] = []
    t.connect("c2"), t.identify("c2", 2)
    t.connect("c3"), t.identify("c3", 3)
    t.set_required(frozenset({2, 3}))
    t.wait(100, 9.0, _waiter(log, "w"))
    t.ack("c2", 150)
    assert log == []  # replica 3 has not got it
    t.ack("c3", 100)
    assert log == [("w", True)]
    t.wait(200, 9.0, _waiter(log, "x"))
    t.disconnect("c3")
    assert t.set_required(frozenset({2})) == 0  # 2 holds 150 only
    t.ack("c2", 200)
    assert log[-1] == ("x", True)
    t.wait(300, 9.0, _waiter(log, "y"))
    assert t.set_required(frozenset()) == 1  # the master alone: nothing to wait for
    assert t.acked_by_replica() == {2: 200}
