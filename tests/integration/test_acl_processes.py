"""ACL on both servers with real processes: a name server and a broker with ``aclEnable=true`` and
one ``plain_acl.yml``. The broker registers with its admin account; a broker whose account is not
an admin is refused by the name server (and so never routed); clients read routes and send only
with a signed account, and only admins change what the name server serves. No side door (view by
id, query by key, send-back, another group's retry topic, a replay under another code) reads a topic
the account may not subscribe to."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest
import yaml

from pyrocketmq.client import Admin, ClientSettings, Message, Producer, PullConsumer
from pyrocketmq.client.errors import MQError
from pyrocketmq.remoting.acl_sign import sign
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient

from .procs import Proc, free_port, start_broker

ACCOUNTS = {
    "accounts": [
        {"accessKey": "brokeradmin", "secretKey": "broker-admin-secret", "admin": True},
        {
            "accessKey": "alice01",
            "secretKey": "alice-secret-key",
            "defaultTopicPerm": "PUB|SUB",
            "defaultGroupPerm": "SUB",
        },
        {"accessKey": "mallory1", "secretKey": "mallory-secret", "defaultTopicPerm": "DENY"},
    ],
}
ALICE = ClientSettings(access_key="alice01", secret_key="alice-secret-key", request_timeout=5)
ADMIN = ClientSettings(access_key="brokeradmin", secret_key="broker-admin-secret", request_timeout=5)


@pytest.fixture
def acl_cluster(tmp_path):
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(yaml.safe_dump(ACCOUNTS))
    port = free_port()
    ns = Proc("namesrv", [sys.executable, "-m", "pyrocketmq", "namesrv", "--listen-port", str(port),
                          "--set", "aclEnable=true", "--set", f"aclConfigFile={acl}"],
              tmp_path / "logs" / "namesrv.log", port).start()  # fmt: skip
    procs = [ns]
    try:
        procs.append(
            start_broker(
                tmp_path,
                ns.addr,
                "broker-a",
                aclEnable="true",
                aclConfigFile=acl,
                accessKey="brokeradmin",
                secretKey="broker-admin-secret",
            )
        )
        procs.append(
            start_broker(
                tmp_path,
                ns.addr,
                "broker-b",
                aclEnable="true",
                aclConfigFile=acl,
                accessKey="alice01",
                secretKey="alice-secret-key",
            )
        )  # not an admin
        yield ns, procs[1], procs[2]
    finally:
        for p in reversed(procs):
            p.stop()


def _signed(cmd: RemotingCommand, ak: str, sk: str) -> RemotingCommand:
    sign(cmd, ak, sk)
    return cmd


async def _raw(addr: str, cmd: RemotingCommand) -> RemotingCommand:
    client = RemotingClient()
    try:
        return await client.invoke(addr, cmd, 5)
    finally:
        await client.close()


def test_only_admin_brokers_register_and_only_signed_clients_are_served(acl_cluster):
    ns, broker_a, broker_b = acl_cluster

    async def go():
        async with Admin(ns.addr, client=ALICE) as admin:
            for _ in range(100):
                if (await admin.cluster_info()).broker_addr_table:
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(1.0)  # broker-b's registration, sent at the same time, had its answer
            registered = set((await admin.cluster_info()).broker_addr_table)
        async with Admin(ns.addr, client=ADMIN) as admin:
            await admin.create_topic("Guarded", cluster="DefaultCluster", read_queues=2, write_queues=2)
            for _ in range(100):
                try:
                    route = await admin.topic_route("Guarded")
                    break
                except MQError:
                    await asyncio.sleep(0.1)
        async with Producer("acl-p", ns.addr, client=ALICE) as producer:
            sent = await producer.send(Message("Guarded", b"signed"))
        async with PullConsumer("acl-c", ns.addr, client=ALICE) as consumer:
            got = []
            for mq in await consumer.fetch_queues("Guarded"):
                got += (await consumer.pull(mq, 0, 32)).messages
        unsigned = await _raw(
            ns.addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Guarded"})
        )
        route_request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Guarded"})
        kept_out = await _raw(ns.addr, _signed(route_request, "mallory1", "mallory-secret"))
        kv = {"namespace": "ORDER_TOPIC_CONFIG", "key": "Guarded", "value": "broker-a:2"}
        by_alice = await _raw(
            ns.addr,
            _signed(
                RemotingCommand.request(RequestCode.PUT_KV_CONFIG, dict(kv)), "alice01", "alice-secret-key"
            ),
        )
        by_admin = await _raw(
            ns.addr,
            _signed(
                RemotingCommand.request(RequestCode.PUT_KV_CONFIG, dict(kv)),
                "brokeradmin",
                "broker-admin-secret",
            ),
        )
        try:
            async with Producer("anon-p", ns.addr, client=ClientSettings(request_timeout=2)) as anon:
                await anon.send(Message("Guarded", b"no"))
            anon_result = "sent"
        except MQError as e:
            anon_result = str(e)
        return registered, route, sent, got, unsigned, kept_out, by_alice, by_admin, anon_result

    registered, route, sent, got, unsigned, kept_out, by_alice, by_admin, anon_result = asyncio.run(go())
    assert registered == {"broker-a"}
    assert {q.broker_name for q in route.queue_datas} == {"broker-a"}
    assert sent.message_queue.broker_name == "broker-a" and [m.body for m in got] == [b"signed"]
    assert (unsigned.code, unsigned.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "AclException: No accessKey is configured",
    )
    assert (kept_out.code, kept_out.remark) == (  # an account without a right on a topic gets no route
        ResponseCode.SYSTEM_ERROR,
        "AclException: No default permission for topic:Guarded",
    )
    assert by_alice.code == ResponseCode.SYSTEM_ERROR
    assert (
        by_alice.remark
        == "AclException: Need admin permission for request code=100, but accessKey=alice01 is not"
    )
    assert by_admin.code == ResponseCode.SUCCESS
    assert anon_result != "sent" and "No accessKey is configured" in anon_result, anon_result
    deadline = time.monotonic() + 10
    while "refused request code 103" not in ns.log_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (
        "ACL: refused request code 103" in ns.log_text()
    )  # broker-b's registration, logged by the name server
    assert "Need admin permission for request code=103" in broker_b.log_text()  # and told to the broker


def test_a_bad_acl_file_stops_the_name_server_with_a_clear_error(tmp_path):
    import subprocess

    acl = tmp_path / "plain_acl.yml"
    acl.write_text("accounts: [{accessKey: short, secretKey: x}]")
    out = subprocess.run([sys.executable, "-m", "pyrocketmq", "namesrv", "--listen-port", str(free_port()),
                          "--set", "aclEnable=true", "--set", f"aclConfigFile={acl}"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "pyrocketmq namesrv: error:" in out.stderr and "longer than 6" in out.stderr, out.stderr
    out = subprocess.run([sys.executable, "-m", "pyrocketmq", "namesrv", "--set", "aclEnable=maybe"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 2 and "aclEnable='maybe'" in out.stderr, out.stderr


SIDE_DOORS = {
    "accounts": [
        {"accessKey": "brokeradmin", "secretKey": "broker-admin-secret", "admin": True},
        {"accessKey": "alice01", "secretKey": "alice-secret-key", "defaultTopicPerm": "PUB|SUB",
         "defaultGroupPerm": "DENY", "topicPerms": ["Secret=DENY"], "groupPerms": ["ga=SUB", "pa=PUB"]},
    ],
}
DENIED = "AclException: No default permission for topic:Secret"


def test_no_side_door_reads_a_topic_the_account_may_not_subscribe_to(tmp_path):
    """Alice may use every topic but Secret and only her groups: view by id, query by key, send-back,
    sending into another group's retry topic and the V2 spelling under code 10 are all refused,
    while her own producer and consumer work unchanged."""
    from pyrocketmq.remoting.message import decode_offset_msg_id
    from tests.integration import wire
    from tests.integration.procs import start_namesrv

    acl = tmp_path / "plain_acl.yml"
    acl.write_text(yaml.safe_dump(SIDE_DOORS))
    ns = start_namesrv(tmp_path)
    broker = None
    try:
        broker = start_broker(tmp_path, ns.addr, "broker-a", aclEnable="true", aclConfigFile=acl,
                              accessKey="brokeradmin", secretKey="broker-admin-secret")
        alice = ("alice01", "alice-secret-key")
        admin = ("brokeradmin", "broker-admin-secret")

        async def call(cmd: RemotingCommand, who: tuple[str, str]) -> RemotingCommand:
            return await _raw(broker.addr, _signed(cmd, *who))

        async def go():
            for topic in ("Secret", "Open"):
                assert (await call(wire.create_topic(topic, 1), admin)).code == ResponseCode.SUCCESS
            sent = await call(wire.send_v2("Secret", b"classified", props={"KEYS": "k1"}), admin)
            assert sent.code == ResponseCode.SUCCESS, sent.remark
            offset = decode_offset_msg_id(sent.ext_fields["msgId"])[2]

            def view() -> RemotingCommand:
                return RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": offset})

            def query(topic: str) -> RemotingCommand:
                return RemotingCommand.request(RequestCode.QUERY_MESSAGE, {
                    "topic": topic, "key": "k1", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 2**62})

            back = RemotingCommand.request(
                RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": offset, "group": "ga", "delayLevel": 0}
            )
            v2_under_10 = wire.send_v2("Secret", b"bypass")
            v2_under_10.code = RequestCode.SEND_MESSAGE
            pull = wire.pull("Open", 0, 0, group="ga")
            signed_pull = _signed(pull, *alice)
            signed_pull.code = RequestCode.UPDATE_CONSUMER_OFFSET
            answers = {
                "view by id": await call(view(), alice),
                "view by id as admin": await call(view(), admin),
                "query by key": await call(query("Secret"), alice),
                "query another topic": await call(query("Open"), alice),
                "send-back": await call(back, alice),
                "into another group's retry topic": await call(wire.send_v2("%RETRY%gb", b"x"), alice),
                "into her group's retry topic": await call(wire.send_v2("%RETRY%ga", b"x"), alice),
                "V2 spelling under code 10": await call(v2_under_10, alice),
                "a pull replayed as an offset update": await _raw(broker.addr, signed_pull),
            }
            client = ClientSettings(access_key=alice[0], secret_key=alice[1], request_timeout=5)
            async with Producer("pa", ns.addr, client=client) as producer:
                mine = await producer.send(Message("Open", b"mine"))
            async with PullConsumer("ga", ns.addr, client=client) as consumer:
                [mq] = await consumer.fetch_queues("Open")
                got = (await consumer.pull(mq, 0, 32)).messages
            return answers, mine, got

        answers, mine, got = asyncio.run(go())
    finally:
        if broker is not None:
            broker.stop()
        ns.stop()
    remark = {label: (a.code, a.remark) for label, a in answers.items()}
    for label in ("view by id", "query by key", "send-back", "V2 spelling under code 10"):
        assert remark[label] == (ResponseCode.SYSTEM_ERROR, DENIED), label
    assert answers["view by id as admin"].code == ResponseCode.SUCCESS
    assert b"classified" in bytes(answers["view by id as admin"].body)
    assert "AclException" not in (answers["query another topic"].remark or "")
    assert remark["into another group's retry topic"] == (ResponseCode.SYSTEM_ERROR,
                                                          "AclException: No default permission for group:gb")
    assert "AclException" not in (answers["into her group's retry topic"].remark or "")
    assert remark["a pull replayed as an offset update"] == (
        ResponseCode.SYSTEM_ERROR, "AclException: request code 15 takes no field 'expressionType'")
    assert mine.queue_offset == 0 and [m.body for m in got] == [b"mine"]
