"""The chaos run's checks (tests/e2e/chaos_check.py): lost, duplicated, reordered, unavailability."""

from __future__ import annotations

from tests.e2e.chaos_check import FaultRecord, Msg, longest_gap, report, verdict


def test_lost_duplicated_and_reordered_are_counted_as_openchaos_does() -> None:
    acked = [Msg("a"), Msg("b"), Msg("c")]
    v = verdict(
        acked, [Msg("a"), Msg("b"), Msg("a"), Msg("x")]
    )  # c lost, a twice, x unacknowledged (allowed)
    assert (v.acknowledged, v.lost, v.duplicated, v.reordered, v.missing) == (3, 1, 1, 0, ("c",))
    assert not v.ok
    keyed = [Msg(f"k{k}|{s}", f"k{k}", s) for k in (1, 2) for s in (1, 2, 3)]
    log = [
        keyed[0],
        keyed[3],
        keyed[2],
        keyed[1],
        keyed[4],
        keyed[0],
        keyed[5],
    ]  # k1: 1, 3, 2 (+ a copy of 1)
    v = verdict(keyed, log)
    assert (v.lost, v.duplicated, v.reordered) == (0, 1, 1) and not v.ok  # the copy of k1|1 is no reorder
    assert verdict(keyed, sorted(keyed, key=lambda m: (m.key, m.seq))).ok


def test_unavailability_is_the_longest_stretch_without_an_acknowledgement() -> None:
    oks = [0.0, 1.0, 2.0, 9.0, 9.5, 20.0]
    assert longest_gap(oks, 1.5, 10.0) == 7.0  # 2.0 .. 9.0
    assert longest_gap(oks, 10.0, 15.0) == 5.0  # nothing acknowledged at all inside
    assert longest_gap(oks, 3.0, 3.0) == 0.0
    fault = FaultRecord("pod-kill", "orders-0-0", 1.5, 9.2)
    table = report([fault], {"python": oks}, {"plain": verdict([Msg("a")], [Msg("a")])}, 4)
    assert "pod-kill" in table and "7.0" in table and "failed sends (not acknowledged, allowed): 4" in table
    both = report([fault], {"python": oks, "java": [0.5, 20.4]}, {}, 0).splitlines()
    assert "python unavailable s" in both[0] and "java unavailable s" in both[0]
    assert both[1].split()[3:5] == [
        "7.0",
        "18.9",
    ]  # each its own; java's until its first ack after the recovery
