"""The controller's election rules (pure state, no sockets)."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.ha.replica import truncate_point
from pyrocketmq.namesrv.controller.state import NO_MASTER, ControllerState


def _report(s: ControllerState, rid: int, now: int, *, offset: int = 0, epoch: int = 0, start: int = -1):
    return s.report(
        "c",
        "g",
        rid,
        addr=f"a{rid}",
        ha_addr=f"h{rid}",
        epoch=epoch,
        max_offset=offset,
        now_ms=now,
        epoch_start=start,
    )


def test_the_first_replica_becomes_master_and_records_its_epoch_start() -> None:
    s = ControllerState(timeout_ms=3000)
    g = _report(s, 1, 0)
    assert (g.master, g.epoch, g.sync_set, g.epoch_start) == (1, 1, {1}, -1)
    _report(s, 2, 10)
    assert g.master == 1
    _report(s, 1, 20, epoch=1, start=0)
    assert g.history == [(1, 0)] and g.view()["masterAddr"] == "a1"


def test_a_dead_master_is_replaced_by_the_most_advanced_live_member_of_the_set() -> None:
    s = ControllerState(timeout_ms=3000)
    for rid in (1, 2, 3):
        _report(s, rid, 0)
    g = s.groups["g"]
    assert s.alter_sync_set("g", 1, 1, g.sync_epoch, {1, 2, 3}) is None
    _report(s, 2, 1000, offset=500, epoch=1)
    _report(s, 3, 1000, offset=700, epoch=1)
    assert s.expire(2000) == []  # master 1 silent 2 s: still alive
    assert s.expire(3500) == ["g"]
    assert (g.master, g.epoch, g.sync_set, g.history[-1]) == (3, 2, {3}, (2, -1))


def test_a_closed_connection_replaces_the_master_at_once() -> None:
    s = ControllerState(timeout_ms=3000)
    _report(s, 1, 0)
    _report(s, 2, 0)
    g = s.groups["g"]
    s.alter_sync_set("g", 1, 1, g.sync_epoch, {1, 2})
    s.closed("g", 1)
    assert s.expire(1) == ["g"] and g.master == 2


def test_no_member_of_the_set_alive_means_no_master_and_never_an_outsider() -> None:
    s = ControllerState(timeout_ms=3000)
    _report(s, 1, 0)
    _report(s, 2, 0)  # never joined the set: it may lack acknowledged messages
    g = s.groups["g"]
    s.expire(5000)
    assert g.master == NO_MASTER
    _report(s, 2, 5100, offset=10**9)
    assert g.master == NO_MASTER
    _report(s, 1, 5200)  # the old master returns: the only eligible one
    assert (g.master, g.epoch) == (1, 2)


@pytest.mark.parametrize(("who", "epoch", "set_epoch", "members", "refused"), [
    (2, 1, 1, {1, 2}, "not the master"),
    (1, 0, 1, {1, 2}, "not the master"),
    (1, 1, 0, {1, 2}, "stale"),
    (1, 1, 1, {2}, "must hold the master"),
    (1, 1, 1, {1, 9}, "only known replicas"),
    (1, 1, 1, {1, 2}, None),
])
def test_only_the_current_master_changes_the_set(who, epoch, set_epoch, members, refused) -> None:
    s = ControllerState()
    _report(s, 1, 0)
    _report(s, 2, 0)
    why = s.alter_sync_set("g", who, epoch, set_epoch, members)
    assert (why is None) if refused is None else (refused in why)


def test_switchover_needs_a_live_member_of_the_set() -> None:
    s = ControllerState(timeout_ms=3000)
    _report(s, 1, 0)
    _report(s, 2, 0)
    assert "not in the in-sync set" in s.switchover("g", 2, 10)
    s.alter_sync_set("g", 1, 1, s.groups["g"].sync_epoch, {1, 2})
    assert s.switchover("g", 2, 10) is None and s.groups["g"].master == 2
    s.alter_sync_set("g", 2, 2, s.groups["g"].sync_epoch, {1, 2})
    assert s.switchover("g", 1, 10_000) == "replica 1 is not alive"


def test_state_survives_a_restart_without_the_moving_offsets() -> None:
    s = ControllerState()
    _report(s, 1, 0, offset=123)
    _report(s, 1, 1, epoch=1, start=0)
    t = ControllerState()
    t.load_json(s.to_json(), 50)
    g = t.groups["g"]
    assert (g.master, g.epoch, g.history, g.sync_set) == (1, 1, [(1, 0)], {1})
    assert g.replicas[1].last_seen_ms == 50 and "maxOffset" not in str(s.to_json())


def test_a_new_leader_counts_a_silence_from_the_last_heartbeat_it_heard_itself() -> None:
    """A follower heard replica 1 (the master) last at 1 000 and replica 2 at 3 500; taking over at
    3 600 it replaces the master at once (silent 2 600 > 2 000 ms), not 2 000 ms after taking over."""
    s = ControllerState(timeout_ms=2000)
    _report(s, 1, 0)
    _report(s, 2, 0)
    s.alter_sync_set("g", 1, 1, s.groups["g"].sync_epoch, {1, 2})
    t = ControllerState(timeout_ms=2000)
    t.load_json(s.to_json(), 3600, {("g", 1): 1000, ("g", 2): 3500, ("other", 1): 9999})
    g = t.groups["g"]
    assert (g.replicas[1].last_seen_ms, g.replicas[2].last_seen_ms) == (1000, 3500)
    assert t.expire(3600) == ["g"] and g.master == 2
    u = ControllerState(timeout_ms=2000)
    u.load_json(s.to_json(), 3600, {("g", 1): 4000})  # never later than now; unheard: now
    assert u.groups["g"].replicas[1].last_seen_ms == u.groups["g"].replicas[2].last_seen_ms == 3600


@pytest.mark.parametrize(("history", "epoch", "end", "cut"), [
    ([(1, 0)], 1, 500, 500),
    ([(1, 0), (2, 300)], 1, 500, 300),   # a deposed master's unreplicated tail
    ([(1, 0), (2, 300)], 1, 200, 200),   # a slave behind: nothing to cut
    ([(1, 0), (2, 300), (3, 400)], 2, 450, 400),
    ([(1, 0), (2, -1)], 1, 500, None),   # the new master's start not recorded yet: wait for it
    ([(1, 0), (2, -1)], 2, 500, 500),    # (following the master of its own epoch)
    ([(1, 0), (2, -1), (3, 300)], 1, 500, 300),  # epoch 2's master never wrote
    ([(1, 0), (2, -1), (3, -1)], 1, 500, None),
])
def test_truncate_point(history, epoch, end, cut) -> None:
    assert truncate_point(history, epoch, end) == cut


def test_the_metadata_view_says_how_long_each_replica_has_been_silent() -> None:
    """What the operator's master Service follower reads to lead away from a silent master early."""
    from pyrocketmq.operator.master_follower import service_target

    s = ControllerState(timeout_ms=2000)
    _report(s, 1, 0)
    _report(s, 2, 900)
    g = s.groups["g"]
    view = g.view(1000)
    assert {rid: r["silentMs"] for rid, r in view["replicas"].items()} == {"1": 1000, "2": 100}
    assert "silentMs" not in g.view()["replicas"]["1"]  # what replicas are told is unchanged
    assert service_target(view) == (1, "a1")  # silent 1 s: still the master
    assert service_target(g.view(1100)) is None  # silent 1.1 s, and 2 is not in the in-sync set
    s.alter_sync_set("g", 1, 1, g.sync_epoch, {1, 2})
    _report(s, 3, 1000)
    s.alter_sync_set("g", 1, 1, g.sync_epoch, {1, 2, 3})
    _report(s, 2, 1000, offset=5)
    _report(s, 3, 1000, offset=7)
    assert service_target(g.view(1100)) == (3, "a3")  # the successor the controller would elect
    _report(s, 3, 1000, offset=5)
    assert service_target(g.view(1100)) == (2, "a2")  # same offsets: the lowest id
    assert service_target(g.view(3900)) == (2, "a2")  # the successor: electable for 3 s
    assert service_target(g.view(4100)) is None  # nobody electable


def test_while_no_controller_leads_the_service_follows_what_the_instances_heard() -> None:
    """The last leader's view, with the silences the remaining instances report: a master frozen
    with the leading controller is led away from before a new leader is elected."""
    from pyrocketmq.operator.master_follower import service_target, with_heard

    s = ControllerState(timeout_ms=3000)
    _report(s, 1, 0)
    _report(s, 2, 0)
    s.alter_sync_set("g", 1, 1, s.groups["g"].sync_epoch, {1, 2})
    last = {"g": s.groups["g"].view(0)}
    assert service_target(with_heard(last, {"g": {"1": 300, "2": 200}})["g"]) == (1, "a1")
    assert service_target(with_heard(last, {"g": {"1": 1800, "2": 200}})["g"]) == (2, "a2")
    assert service_target(with_heard(last, {"g": {"2": 200}})["g"]) == (2, "a2")  # 1 unheard
    assert service_target(with_heard(last, {"other": {"1": 0}})["g"]) is None
