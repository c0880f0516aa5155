"""The official RocketMQ 5.x Node.js client (npm rocketmq-client-nodejs) against the broker's 5.x
endpoint: plain sends spread over all queues, FIFO message groups each in the queue Apache's proxy picks
and in order, everything received back by a SimpleConsumer (``polyglot5``).

The client addresses queue 0 for every send (its PublishingLoadBalancer keeps only the queues whose id
equals the master broker id, 0); the endpoint picks the queue itself, as Apache's proxy does, so the
messages spread all the same."""

from __future__ import annotations

import pytest

from tests.conformance import maven, nodeclient5, polyglot5
from tests.conformance.conftest import missing_prerequisite
from tests.conformance.grpc5 import start_grpc_cluster

# one worker runs the module's tests (its fixture runs the client once); the first test's setup
# builds the client: a cold run installs the client from the npm registry
pytestmark = [pytest.mark.conformance, pytest.mark.xdist_group("grpc5-nodejs"), pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    try:
        cmd, env = nodeclient5.command()
    except maven.PrerequisiteMissing as exc:
        missing_prerequisite(str(exc))
    cluster = start_grpc_cluster(tmp_path_factory.mktemp("grpc5-node"))
    try:
        yield polyglot5.judge(cluster, "Node", cmd, home=tmp_path_factory.mktemp("node5-home"), env=env)
    finally:
        cluster.stop()


class TestNodejsClient(polyglot5.ClientChecks):
    pass
