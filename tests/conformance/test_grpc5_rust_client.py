"""The official RocketMQ 5.x Rust client (crates.io rocketmq, apache/rocketmq-clients' rust/) against
the broker's 5.x endpoint: plain sends spread over all queues, FIFO message groups each in the queue
Apache's proxy picks and in order, everything received back by a SimpleConsumer (``polyglot5``)."""

from __future__ import annotations

import pytest

from tests.conformance import maven, polyglot5, rustclient5
from tests.conformance.conftest import missing_prerequisite
from tests.conformance.grpc5 import start_grpc_cluster

# one worker runs the module's tests (its fixture runs the client once); the first test's setup
# builds the client: a cold run downloads the crates and compiles the client (~2 min alone on 2 cores)
pytestmark = [pytest.mark.conformance, pytest.mark.xdist_group("grpc5-rust"), pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    try:
        cmd = rustclient5.command()
    except maven.PrerequisiteMissing as exc:
        missing_prerequisite(str(exc))
    cluster = start_grpc_cluster(tmp_path_factory.mktemp("grpc5-rust"))
    try:
        yield polyglot5.judge(cluster, "Rust", cmd, home=tmp_path_factory.mktemp("rust5-home"))
    finally:
        cluster.stop()


class TestRustClient(polyglot5.ClientChecks):
    pass
