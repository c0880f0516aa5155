"""The official RocketMQ 5.x Go client (github.com/apache/rocketmq-clients/golang/v5, Go module proxy)
against the broker's 5.x endpoint: plain sends spread over all queues, FIFO message groups each in the
queue Apache's proxy picks and in order, everything received back by a SimpleConsumer (``polyglot5``)."""

from __future__ import annotations

import pytest

from tests.conformance import goclient5, polyglot5

# one worker runs the module's tests (its fixture runs the client once); the first test's setup
# builds the client: a cold run downloads the Go modules and compiles the client (~30 s alone)
pytestmark = [pytest.mark.conformance, pytest.mark.xdist_group("grpc5-go"), pytest.mark.timeout(900)]


result = polyglot5.outcome_fixture("Go", goclient5.command)


class TestGoClient(polyglot5.ClientChecks):
    pass
