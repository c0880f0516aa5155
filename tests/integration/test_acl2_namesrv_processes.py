"""ACL 2.0 at the name server with real processes: a name server and a broker with
``authenticationEnabled`` and ``authorizationEnabled``, each with the super user ``root`` and the
broker's ``innerClientAuthenticationCredentials``. The broker registers signed by its inner
credentials; ``root`` creates a normal user and its ACL on the name server (AUTH_* sent to the name
server's address, as ``mqadmin createUser -b <namesrv>``); that user gets the route of the topic its
ACL allows and NO_PERMISSION, in Apache's words, for another; an unsigned request is refused; the
users survive a restart of the name server."""

from __future__ import annotations

import asyncio

import pytest

from pyrocketmq.client import Admin, ClientSettings
from pyrocketmq.client.errors import MQBrokerError
from pyrocketmq.remoting.code import ResponseCode

from .procs import start_broker, start_namesrv

ROOT = ClientSettings(access_key="root", secret_key="root-password", request_timeout=5)
ALICE = ClientSettings(access_key="alice", secret_key="alice-password", request_timeout=5)
ACL2 = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "initAuthenticationUser": '{"username":"root","password":"root-password"}',
    "innerClientAuthenticationCredentials": '{"accessKey":"inner","secretKey":"inner-password"}',
}


@pytest.fixture
def cluster(tmp_path):
    ns = start_namesrv(tmp_path, kvConfigPath=tmp_path / "namesrv" / "kvConfig.json", **ACL2)
    procs = [ns]
    try:
        procs.append(start_broker(tmp_path, ns.addr, "broker-a", **ACL2))
        yield ns, procs[1]
    finally:
        for p in reversed(procs):
            p.stop()


async def _route(ns: str, topic: str, who: ClientSettings) -> object:
    """The brokers routing ``topic`` for ``who``, or the name server's refusal ``(code, remark)``."""
    async with Admin(ns, client=who) as admin:
        try:
            route = await admin.topic_route(topic)
        except MQBrokerError as e:
            return e.code, e.remark
        return sorted(b.broker_name for b in route.broker_datas)


async def _wait_route(ns: str, topic: str) -> None:
    for _ in range(100):
        if await _route(ns, topic, ROOT) == ["broker-a"]:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no route for {topic}")


def test_a_normal_user_gets_only_the_routes_its_acl_allows_from_the_name_server(cluster, tmp_path):
    ns, broker = cluster

    async def run() -> dict[str, object]:
        out: dict[str, object] = {}
        async with Admin(ns.addr, client=ROOT) as root:
            out["cluster"] = sorted((await root.cluster_info()).broker_addr_table)  # registered, signed
            for topic in ("Orders", "Secret"):
                await root.create_topic(topic, broker_addr=broker.addr, read_queues=1, write_queues=1)
            out["created"] = await root.create_user("alice", "alice-password", broker_addr=ns.addr)
            await root.create_acl("User:alice", ["Topic:Orders"], ["Sub"], "Allow", broker_addr=ns.addr)
            out["users"] = {u["username"]: u["userType"] for u in await root.list_users(broker_addr=ns.addr)}
        for topic in ("Orders", "Secret"):
            await _wait_route(ns.addr, topic)
        out["Orders"] = await _route(ns.addr, "Orders", ALICE)
        out["Secret"] = await _route(ns.addr, "Secret", ALICE)
        out["unsigned"] = await _route(ns.addr, "Orders", ClientSettings(request_timeout=5))
        out["wrong password"] = await _route(ns.addr, "Orders", ClientSettings(
            access_key="alice", secret_key="not-her-password", request_timeout=5))
        async with Admin(ns.addr, client=ALICE) as alice:
            try:
                await alice.cluster_info()
                out["alice reads the clusters"] = "answered"
            except MQBrokerError as e:
                out["alice reads the clusters"] = (e.code, e.remark)
            try:
                await alice.create_user("mallory", "mallory-password", broker_addr=ns.addr)
                out["alice creates a user"] = "answered"
            except MQBrokerError as e:
                out["alice creates a user"] = (e.code, e.remark)
        return out

    out = asyncio.run(run())
    assert out["cluster"] == ["broker-a"]  # the broker registered with its inner credentials
    assert out["created"] == [ns.addr]
    assert out["users"] == {"root": "Super", "inner": "Super", "alice": "Normal"}
    assert out["Orders"] == ["broker-a"]
    no = ResponseCode.NO_PERMISSION
    assert out["Secret"] == (
        no, "User:alice has no permission to access Topic:Secret from 127.0.0.1, no matched policies.")
    assert out["unsigned"] == (no, "username cannot be null.")
    assert out["wrong password"] == (no, "check signature failed.")
    assert out["alice reads the clusters"] == (
        no, "User:alice has no permission to access Cluster:* from 127.0.0.1, no matched policies.")
    assert out["alice creates a user"] == (
        no, "User:alice has no permission to access Cluster:* from 127.0.0.1, no matched policies.")
    assert (tmp_path / "namesrv" / "users.json").exists() and (tmp_path / "namesrv" / "acls.json").exists()
    assert "refused request code 103 " not in ns.log_text()  # REGISTER_BROKER

    ns.stop()
    ns.start()  # users and ACLs are read back (routes come back as the broker registers again)
    assert asyncio.run(_route(ns.addr, "Secret", ALICE)) == out["Secret"]
    orders = asyncio.run(_route(ns.addr, "Orders", ALICE))
    assert orders == ["broker-a"] or (isinstance(orders, tuple) and orders[0] == ResponseCode.TOPIC_NOT_EXIST)
