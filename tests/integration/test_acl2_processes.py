"""ACL 2.0 with real processes: a name server and a broker with ``authenticationEnabled`` and
``authorizationEnabled`` and a super user from ``initAuthenticationUser``. The super user creates a
normal user and its ACL through the AUTH_* requests; the user sends only where its ACL allows (the
most specific entry deciding: a literal Allow beats ``Topic:*`` Deny, a literal Deny beats a prefix
Allow), is refused elsewhere and from the admin requests, and everything survives a restart."""

from __future__ import annotations

import asyncio

import pytest

from pyrocketmq.client import Admin, ClientSettings, Message, Producer, PullConsumer
from pyrocketmq.client.errors import MQBrokerError
from pyrocketmq.remoting.code import ResponseCode

from .procs import start_broker, start_namesrv

ROOT = ClientSettings(access_key="root", secret_key="root-password", request_timeout=5)
ALICE = ClientSettings(access_key="alice", secret_key="alice-password", request_timeout=5)
TOPICS = ("Orders", "Secret", "pay-1", "pay-secret")
ALICE_ACL = [
    (["Topic:*"], ["All"], "Deny"),
    (["Topic:Orders", "Topic:pay*"], ["Pub", "Sub"], "Allow"),
    (["Topic:pay-secret"], ["Pub"], "Deny"),
    (["Group:alice-cg"], ["Sub"], "Allow"),
]


@pytest.fixture
def cluster(tmp_path):
    ns = start_namesrv(tmp_path)
    procs = [ns]
    try:
        broker = start_broker(tmp_path, ns.addr, "broker-a", authenticationEnabled="true",
                              authorizationEnabled="true",
                              initAuthenticationUser='{"username":"root","password":"root-password"}')
        procs.append(broker)
        yield ns, broker
    finally:
        for p in reversed(procs):
            p.stop()


async def _wait_route(admin: Admin, topic: str) -> None:
    for _ in range(100):
        try:
            await admin.topic_route(topic)
            return
        except MQBrokerError:
            await asyncio.sleep(0.1)
    raise AssertionError(f"no route for {topic}")


async def _send(ns: str, topic: str, who: ClientSettings = ALICE) -> str:
    """``sent`` or the broker's answer to the send."""
    async with Producer("alice-p", ns, client=who) as producer:
        try:
            await producer.send(Message(topic, b"hello " + topic.encode()))
            return "sent"
        except MQBrokerError as e:
            assert e.code == ResponseCode.NO_PERMISSION, e
            return e.remark


async def _setup(ns: str, broker: str) -> None:
    async with Admin(ns, client=ROOT) as root:
        for topic in TOPICS:
            await root.create_topic(topic, broker_addr=broker, read_queues=1, write_queues=1)
        await root.create_user("alice", "alice-password", cluster="DefaultCluster")
        for resources, actions, decision in ALICE_ACL:
            await root.create_acl("User:alice", resources, actions, decision, broker_addr=broker)
        for topic in TOPICS:
            await _wait_route(root, topic)


def test_a_super_user_manages_a_user_whose_acl_decides_and_all_survives_a_restart(cluster):
    ns, broker = cluster

    async def first() -> dict[str, object]:
        await _setup(ns.addr, broker.addr)
        out: dict[str, object] = {t: await _send(ns.addr, t) for t in TOPICS}
        async with PullConsumer("alice-cg", ns.addr, client=ALICE) as consumer:
            got = []
            for mq in await consumer.fetch_queues("Orders"):
                got += (await consumer.pull(mq, 0, 32)).messages
            out["pulled"] = [m.body for m in got]
        out["wrong password"] = await _send(ns.addr, "Orders", ClientSettings(
            access_key="alice", secret_key="not-her-password", request_timeout=5))
        out["unsigned"] = await _send(ns.addr, "Orders", ClientSettings(request_timeout=5))
        async with Admin(ns.addr, client=ALICE) as alice:
            try:
                await alice.list_users(broker_addr=broker.addr)
                out["alice lists users"] = "answered"
            except MQBrokerError as e:
                out["alice lists users"] = (e.code, e.remark)
        async with Admin(ns.addr, client=ROOT) as root:
            out["acl"] = await root.get_acl("User:alice", broker_addr=broker.addr)
            out["users"] = await root.list_users(broker_addr=broker.addr)
            try:
                await root.create_user("alice", "again", broker_addr=broker.addr)
            except MQBrokerError as e:
                out["twice"] = (e.code, e.remark)
        return out

    out = asyncio.run(first())
    assert out["Orders"] == "sent"  # Topic:Orders Allow beats Topic:* Deny: the more specific decides
    assert out["pay-1"] == "sent"  # a prefix Allow
    assert out["Secret"] == "User:alice has no permission to access Topic:Secret from 127.0.0.1, " \
                            "the decision is deny."  # Topic:* Deny
    assert out["pay-secret"] == "User:alice has no permission to access Topic:pay-secret from 127.0.0.1, " \
                                "the decision is deny."  # a literal Deny beats the prefix Allow
    assert out["pulled"] == [b"hello Orders"]
    assert out["wrong password"] == "check signature failed."
    assert out["unsigned"] == "username cannot be null."
    assert out["alice lists users"] == (
        ResponseCode.NO_PERMISSION,
        "User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies.",
    )  # Topic:* does not cover the cluster
    assert out["twice"] == (ResponseCode.NO_PERMISSION, "The user is existed")
    acl = out["acl"]
    assert isinstance(acl, dict) and acl["subject"] == "User:alice"
    assert [e["resource"] for e in acl["policies"][0]["entries"]] == [
        "Topic:*", "Topic:Orders", "Topic:pay*", "Topic:pay-secret", "Group:alice-cg"]
    assert {u["username"]: u["userType"] for u in out["users"]} == {"root": "Super", "alice": "Normal"}

    broker.stop()
    broker.start()

    async def after_restart() -> dict[str, object]:
        out: dict[str, object] = {t: await _send(ns.addr, t) for t in ("Orders", "Secret", "pay-1")}
        async with Admin(ns.addr, client=ROOT) as root:
            out["acl"] = await root.get_acl("User:alice", broker_addr=broker.addr)
            await root.update_user("alice", user_status="disable", broker_addr=broker.addr)
        out["disabled"] = await _send(ns.addr, "Orders")
        return out

    again = asyncio.run(after_restart())
    assert again["Orders"] == "sent" and again["pay-1"] == "sent"
    assert again["Secret"] == out["Secret"]
    assert again["acl"] == acl
    assert again["disabled"] == "User:alice is disabled."
