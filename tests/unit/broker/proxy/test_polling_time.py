"""How long an empty 5.x receive long-polls: what it asks, capped, and over before the client's gRPC
deadline (Apache's proxy caps it at the time remaining too)."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.proxy.consume import DEADLINE_RESERVE, MAX_LONG_POLLING_MS, polling_time


@pytest.mark.parametrize(
    ("asked_ms", "remaining", "expected"),
    [
        (20_000, None, 20.0),  # no deadline: what the request asks
        (20_000, 60.0, 20.0),  # the deadline leaves room
        (120_000, None, MAX_LONG_POLLING_MS / 1000),  # capped
        (3_000, 3.0, 3.0 - DEADLINE_RESERVE),  # Rust 5.0.0: deadline == polling time
        (40_000, 10.0, 10.0 - DEADLINE_RESERVE),
        (5_000, 0.1, 0.0),  # nearly expired: answer at once
        (0, 30.0, 0.0),  # asks for no wait
        (-5, None, 0.0),
    ],
)
def test_polling_time(asked_ms, remaining, expected):
    assert polling_time(asked_ms, remaining) == pytest.approx(expected)
