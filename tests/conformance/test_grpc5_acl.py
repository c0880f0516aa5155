"""Access control on the 5.x endpoint, with the official Java 5.x client signing its calls
(``MQv2-HMAC-SHA1``) against the same ``plain_acl.yml`` accounts 4.x clients use: an account sends
and receives where its permissions allow, is refused (FORBIDDEN) where they do not, and a wrong
secret or no credentials at all are refused (UNAUTHORIZED) before anything is served. What a client
announces on its Telemetry stream is checked too: a producer of a topic it may not publish to, or a
consumer of a group it may not consume in, is refused its Settings and does not start (as against
Apache's proxy), and so never receives the topic's transaction check-backs."""

from __future__ import annotations

import pytest
import yaml

from pyrocketmq.remoting.acl_sign import sign
from pyrocketmq.remoting.code import ResponseCode
from tests.conformance.grpc5 import GrpcCluster, admin, start_grpc_cluster
from tests.integration import wire

pytestmark = pytest.mark.conformance

ACL = {
    "globalWhiteRemoteAddresses": [],
    "accounts": [
        {"accessKey": "alice01", "secretKey": "alice-secret-key", "admin": False, "defaultTopicPerm": "DENY",
         "defaultGroupPerm": "SUB", "topicPerms": ["Allowed5=PUB|SUB", "ReadOnly5=SUB", "Tx5=PUB|SUB"],
         "groupPerms": ["gdeny=DENY"]},
        {"accessKey": "bobby01", "secretKey": "bobby-secret-key", "admin": False, "defaultTopicPerm": "DENY",
         "defaultGroupPerm": "SUB", "topicPerms": ["Tx5=SUB"]},
        {"accessKey": "rootadmin", "secretKey": "root-secret-key", "admin": True},
    ],
}
ALICE = {"acl.accessKey": "alice01", "acl.secretKey": "alice-secret-key"}
BOB = {"acl.accessKey": "bobby01", "acl.secretKey": "bobby-secret-key"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grpc5-acl")
    path = tmp / "plain_acl.yml"
    path.write_text(yaml.safe_dump(ACL))
    c = start_grpc_cluster(tmp, aclEnable="true", aclConfigFile=path, transactionCheckInterval=1000,
                           transactionTimeOut=3000, transactionCheckMax=60)
    try:
        for topic in ("Allowed5", "ReadOnly5", "Tx5"):
            cmd = wire.create_topic(topic)
            sign(cmd, "rootadmin", "root-secret-key")
            assert admin(c.broker.addr, cmd).code == ResponseCode.SUCCESS
        yield c
    finally:
        c.stop()


def _run(java5, cluster: GrpcCluster, program: str, args: list, creds: dict | None):
    return java5.run(program, [cluster.endpoint, *args], timeout=120, jvm_props=creds)


def test_an_account_sends_and_receives_where_it_may(java5, cluster):
    sent = _run(java5, cluster, "Producer5Scenario", ["Allowed5", "normal", 4], ALICE).json()
    assert sent["errors"] == [] and len(sent["sent"]) == 4
    got = _run(java5, cluster, "Consumer5Scenario", ["Allowed5", "gok", "simple", 4, 20], ALICE).json()
    assert sorted(d["messageId"] for d in got["deliveries"]) == sorted(s["messageId"] for s in sent["sent"])


def test_sending_without_the_permission_is_forbidden(java5, cluster):
    creds = {**ALICE, "announce": "Allowed5"}  # it announces a topic it may publish to, and sends to another
    out = _run(java5, cluster, "Producer5Scenario", ["ReadOnly5", "normal", 2], creds).json()
    assert len(out["errors"]) == 2 and out["sent"] == []
    assert all("No default permission for topic:ReadOnly5" in e for e in out["errors"]), out["errors"]


def _refused_start(java5, cluster: GrpcCluster, program: str, args: list, creds: dict, why: str) -> None:
    """The client is refused its Settings and does not start; the broker logs why."""
    mark = len(cluster.broker.log_text())
    result = _run(java5, cluster, program, args, creds)
    assert result.returncode != 0 and "FAILED" in result.stderr, result.stdout + result.stderr[-3000:]
    assert f"refused: AclException: {why}" in cluster.broker.log_text()[mark:], cluster.log_tails()


def test_a_producer_may_not_announce_a_topic_it_cannot_publish_to(java5, cluster):
    _refused_start(java5, cluster, "Producer5Scenario", ["ReadOnly5", "normal", 1], ALICE,
                   "No default permission for topic:ReadOnly5")


def test_a_consumer_of_a_denied_group_is_refused(java5, cluster):
    _refused_start(java5, cluster, "Consumer5Scenario", ["Allowed5", "gdeny", "simple", 1, 6], ALICE,
                   "No default permission for group:gdeny")


def test_check_backs_go_only_to_a_producer_allowed_to_publish(java5, cluster):
    orphaned = _run(java5, cluster, "Producer5Scenario", ["Tx5", "tx-orphan", 2], ALICE).json()
    ids = sorted(s["messageId"] for s in orphaned["sent"])
    assert len(ids) == 2, orphaned
    _refused_start(java5, cluster, "Producer5Scenario", ["Tx5", "tx-checker", 2, 10], BOB,
                   "No default permission for topic:Tx5")
    checker = _run(java5, cluster, "Producer5Scenario", ["Tx5", "tx-checker", 2, 30], ALICE).json()
    assert sorted(set(checker["checked"])) == ids, (checker, cluster.log_tails())


@pytest.mark.parametrize(
    ("creds", "why"),
    [
        (
            {"acl.accessKey": "alice01", "acl.secretKey": "not-the-secret"},
            "Check signature failed for accessKey=alice01",
        ),
        ({"acl.accessKey": "nobody00", "acl.secretKey": "whatever-1"}, "No acl config for nobody00"),
        (None, "No accessKey is configured"),
    ],
)
def test_bad_or_missing_credentials_are_unauthorized(java5, cluster, creds, why):
    result = _run(java5, cluster, "Producer5Scenario", ["Allowed5", "normal", 1], creds)
    assert result.returncode != 0 or result.json()["errors"], result.stdout
    text = result.stdout + result.stderr
    assert why in text and ("UNAUTHORIZED" in text or "40100" in text or "Unauthorized" in text), text[-3000:]
