"""How long an empty 5.x receive long-polls: what it asks (or, asking nothing, its deadline less half
the client's request timeout, as Apache's proxy has it), capped, and over before the client's gRPC
deadline."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.proxy.consume import DEADLINE_RESERVE, MAX_LONG_POLLING_MS, polling_time


@pytest.mark.parametrize(
    ("asked_ms", "remaining", "request_timeout", "expected"),
    [
        (20_000, None, 0.0, 20.0),  # no deadline: what the request asks
        (20_000, 60.0, 0.0, 20.0),  # the deadline leaves room
        (120_000, None, 0.0, MAX_LONG_POLLING_MS / 1000),  # capped
        (3_000, 3.0, 10.0, 3.0 - DEADLINE_RESERVE),  # Rust 5.0.0: deadline == polling time
        (40_000, 10.0, 0.0, 10.0 - DEADLINE_RESERVE),
        (5_000, 0.1, 0.0, 0.0),  # nearly expired: answer at once
        (0, 30.0, 0.0, 0.0),  # asks for no wait
        (-5, None, 0.0, 0.0),
        # asks nothing (Go's SimpleConsumer): the deadline less half the client's request timeout
        (None, 6.0, 3.0, 4.5),  # Go: awaitDuration 3 s + request timeout 3 s
        (None, 6.0, 0.0, 6.0 - DEADLINE_RESERVE),  # no settings: up to the deadline
        (None, 1.0, 3.0, 0.0),
        (None, None, 3.0, MAX_LONG_POLLING_MS / 1000),  # no deadline either: the longest poll
        (None, 120.0, 3.0, MAX_LONG_POLLING_MS / 1000),
    ],
)
def test_polling_time(asked_ms, remaining, request_timeout, expected):
    assert polling_time(asked_ms, remaining, request_timeout) == pytest.approx(expected)
