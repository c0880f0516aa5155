"""Latency fault tolerance: which brokers to avoid, and for how long."""

from __future__ import annotations

import pytest

from pyrocketmq.client.fault import ISOLATION_LATENCY_MS, LatencyFaultTolerance, not_available_duration_ms


@pytest.mark.parametrize(
    ("latency", "duration"),
    [
        (0, 0),
        (49, 0),
        (50, 0),
        (99, 0),
        (100, 0),
        (549, 0),
        (550, 30_000),
        (999, 30_000),
        (1000, 60_000),
        (2000, 120_000),
        (3000, 180_000),
        (14_999, 180_000),
        (15_000, 600_000),
        (ISOLATION_LATENCY_MS, 600_000),
    ],
)
def test_not_available_duration_steps(latency: float, duration: int) -> None:
    assert not_available_duration_ms(latency) == duration


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_fast_broker_stays_available() -> None:
    clock = Clock()
    ft = LatencyFaultTolerance(now_ms=clock)
    ft.update("a", 10)
    assert ft.is_available("a")


def test_slow_broker_is_avoided_until_its_duration_passes() -> None:
    clock = Clock()
    ft = LatencyFaultTolerance(now_ms=clock)
    ft.update("a", 1200)  # 60 s
    assert not ft.is_available("a")
    clock.now += 59_999
    assert not ft.is_available("a")
    clock.now += 1
    assert ft.is_available("a")


def test_failure_isolates_for_ten_minutes_whatever_the_latency() -> None:
    clock = Clock()
    ft = LatencyFaultTolerance(now_ms=clock)
    ft.update("a", 1, isolation=True)
    clock.now += 599_999
    assert not ft.is_available("a")
    clock.now += 1
    assert ft.is_available("a")


def test_a_later_fast_answer_clears_the_fault() -> None:
    clock = Clock()
    ft = LatencyFaultTolerance(now_ms=clock)
    ft.update("a", 0, isolation=True)
    ft.update("a", 5)
    assert ft.is_available("a")


def test_unknown_brokers_are_available_and_remove_forgets() -> None:
    ft = LatencyFaultTolerance(now_ms=Clock())
    assert ft.is_available("never-seen")
    ft.update("a", 0, isolation=True)
    ft.remove("a")
    assert ft.is_available("a")


def test_pick_one_at_least_prefers_the_broker_free_soonest() -> None:
    clock = Clock()
    ft = LatencyFaultTolerance(now_ms=clock)
    ft.update("a", 0, isolation=True)  # 600 s
    ft.update("b", 700)  # 30 s
    ft.update("c", 3500)  # 180 s
    assert ft.pick_one_at_least() == "b"
    assert ft.pick_one_at_least(["a", "c"]) == "c"
    assert ft.pick_one_at_least(["zzz"]) is None
