"""The official RocketMQ 5.x Rust client (crates.io rocketmq, apache/rocketmq-clients' rust/) against
the broker's 5.x endpoint: plain sends spread over all queues, FIFO message groups each in the queue
Apache's proxy picks and in order, everything received back by a SimpleConsumer (``polyglot5``)."""

from __future__ import annotations

import pytest

from tests.conformance import polyglot5, rustclient5

# one worker runs the module's tests (its fixture runs the client once); the first test's setup
# builds the client: a cold run downloads the crates and compiles the client (~2 min alone on 2 cores)
pytestmark = [pytest.mark.conformance, pytest.mark.xdist_group("grpc5-rust"), pytest.mark.timeout(1800)]


result = polyglot5.outcome_fixture("Rust", rustclient5.command)


class TestRustClient(polyglot5.ClientChecks):
    pass
