"""ACL 2.0 on the 5.x endpoint with the official Java 5.x client: a super user
(``initAuthenticationUser``) creates a normal user and its ACL; the client, signing with the
username and password (``StaticSessionCredentialsProvider``), sends and receives where the ACL
allows, and is refused with Apache 5.3's status (UNAUTHORIZED) and words where it does not, with a
wrong password, and as a consumer of a group its ACL does not grant."""

from __future__ import annotations

import asyncio

import pytest

from pyrocketmq.client import Admin, ClientSettings
from pyrocketmq.remoting.body import SubscriptionGroupConfig
from tests.conformance.grpc5 import GrpcCluster, start_grpc_cluster

pytestmark = pytest.mark.conformance

ALICE = {"acl.accessKey": "alice", "acl.secretKey": "alice-password"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grpc5-acl2")
    c = start_grpc_cluster(tmp, authenticationEnabled="true", authorizationEnabled="true",
                           initAuthenticationUser='{"username":"root","password":"root-password"}')
    try:
        asyncio.run(_setup(c))
        yield c
    finally:
        c.stop()


async def _setup(c: GrpcCluster) -> None:
    root = ClientSettings(access_key="root", secret_key="root-password", request_timeout=5)
    async with Admin(c.namesrv.addr, client=root) as admin:
        for topic in ("Allowed52", "Denied52"):
            await admin.create_topic(topic, broker_addr=c.broker.addr)
        for group in ("gok52", "gno52"):
            await admin.create_subscription_group(SubscriptionGroupConfig(group_name=group),
                                                  broker_addr=c.broker.addr)
        await admin.create_user("alice", "alice-password", broker_addr=c.broker.addr)
        await admin.create_acl("User:alice", ["Topic:Allowed52", "Group:gok52"], ["Pub", "Sub"], "Allow",
                               broker_addr=c.broker.addr)
        await admin.create_acl("User:alice", ["Topic:*"], ["All"], "Deny", broker_addr=c.broker.addr)


def _run(java5, cluster: GrpcCluster, program: str, args: list, creds: dict | None):
    return java5.run(program, [cluster.endpoint, *args], timeout=120, jvm_props=creds)


def test_a_user_sends_and_receives_where_its_acl_allows(java5, cluster):
    sent = _run(java5, cluster, "Producer5Scenario", ["Allowed52", "normal", 3], ALICE).json()
    assert sent["errors"] == [] and len(sent["sent"]) == 3
    got = _run(java5, cluster, "Consumer5Scenario", ["Allowed52", "gok52", "simple", 3, 20], ALICE).json()
    assert sorted(d["messageId"] for d in got["deliveries"]) == sorted(s["messageId"] for s in sent["sent"])


def _refused(result, why: str) -> None:
    text = result.stdout + result.stderr
    assert result.returncode != 0 or result.json()["errors"], result.stdout
    assert why in text and ("UNAUTHORIZED" in text or "40100" in text or "Unauthorized" in text), text[-3000:]


def test_sending_where_the_acl_denies_is_refused(java5, cluster):
    creds = {**ALICE, "announce": "Allowed52"}  # it announces a topic it may publish to, and sends to another
    _refused(_run(java5, cluster, "Producer5Scenario", ["Denied52", "normal", 1], creds),
             "User:alice has no permission to access Topic:Denied52 from 127.0.0.1, the decision is deny.")


def test_a_consumer_of_a_group_the_acl_does_not_grant_is_refused(java5, cluster):
    """Its Settings are refused, so it does not start (the client does not print why; the broker logs it)."""
    mark = len(cluster.broker.log_text())
    result = _run(java5, cluster, "Consumer5Scenario", ["Allowed52", "gno52", "simple", 1, 6], ALICE)
    assert result.returncode != 0 and "FAILED" in result.stderr, result.stdout + result.stderr[-3000:]
    why = "User:alice has no permission to access Group:gno52 from 127.0.0.1, no matched policies."
    assert f"refused: {why}" in cluster.broker.log_text()[mark:], cluster.log_tails()


def test_a_wrong_password_is_refused(java5, cluster):
    creds = {"acl.accessKey": "alice", "acl.secretKey": "not-her-password"}
    _refused(_run(java5, cluster, "Producer5Scenario", ["Allowed52", "normal", 1], creds),
             "check signature failed.")
