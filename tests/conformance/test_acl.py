"""Plain ACL held up against Apache RocketMQ 4.9's broker: the same ``plain_acl.yml``, the same raw
requests (unsigned, unknown key, bad signature, missing permission, admin, allowed) get the same
answers from both; and the unmodified Java client with ``AclClientRPCHook`` sends and pulls on
pyrocketmq where its account allows it, and is refused where it does not."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from pyrocketmq.remoting.acl_sign import sign
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient
from tests.conformance.apache import start_apache_cluster
from tests.integration import wire
from tests.integration.procs import start_broker, start_namesrv

pytestmark = pytest.mark.conformance

ACL = {
    "globalWhiteRemoteAddresses": [],
    "accounts": [
        {"accessKey": "alice01", "secretKey": "alice-secret-key", "admin": False, "defaultTopicPerm": "DENY",
         "defaultGroupPerm": "SUB", "topicPerms": ["Allowed=PUB|SUB", "ReadOnly=SUB", "Pushed=PUB|SUB"],
         "groupPerms": ["gdeny=DENY"]},
        {"accessKey": "rootadmin", "secretKey": "root-secret-key", "admin": True},
    ],
}
ALICE = ("alice01", "alice-secret-key")
ROOT = ("rootadmin", "root-secret-key")


def _signed(cmd: RemotingCommand, who=ALICE, secret: str | None = None) -> RemotingCommand:
    sign(cmd, who[0], secret or who[1])
    return cmd


REQUESTS = [
    ("unsigned send", lambda: wire.send_v2("Allowed", b"x")),
    ("unsigned runtime info", lambda: RemotingCommand.request(28, {})),
    ("unknown access key", lambda: _signed(wire.send_v2("Allowed", b"x"), ("bobbybob", "whatever1"))),
    ("wrong secret", lambda: _signed(wire.send_v2("Allowed", b"x"), ALICE, "not-the-secret")),
    ("send allowed", lambda: _signed(wire.send_v2("Allowed", b"x"))),
    ("send read-only", lambda: _signed(wire.send_v2("ReadOnly", b"x"))),
    ("send by default", lambda: _signed(wire.send_v2("Other", b"x"))),
    ("admin as non-admin", lambda: _signed(wire.create_topic("Zed"))),
    ("admin as admin", lambda: _signed(wire.create_topic("Zed"), ROOT)),
    ("pull as denied group", lambda: _signed(wire.pull("Allowed", 0, 0, group="gdeny"))),
    ("pull by default group", lambda: _signed(wire.pull("Allowed", 0, 0, group="gok"))),
    ("pull by default topic", lambda: _signed(wire.pull("Other", 0, 0, group="gok"))),
]


def _why(remark: str | None) -> str | None:
    """The refusal reason without Java's class name and source location."""
    if not remark or "AclException" not in remark:
        return None
    why = remark.split("AclException: ", 1)[1]
    return why.split(", org.apache.rocketmq.", 1)[0]


async def _answers(broker_addr: str) -> dict[str, tuple[bool, str | None]]:
    client = RemotingClient()
    out = {}
    try:
        for label, make in REQUESTS:
            resp = await client.invoke(broker_addr, make(), 10)
            why = _why(resp.remark)
            out[label] = (why is None, why)
    finally:
        await client.close()
    return out


@pytest.fixture(scope="module")
def acl_file(tmp_path_factory):
    home = tmp_path_factory.mktemp("acl-home")
    (home / "conf").mkdir()
    path = home / "conf" / "plain_acl.yml"
    path.write_text(yaml.safe_dump(ACL))
    return home, path


@pytest.fixture(scope="module")
def ours(acl_file, tmp_path_factory):
    _, path = acl_file
    tmp = tmp_path_factory.mktemp("acl-ours")
    ns = start_namesrv(tmp)
    broker = start_broker(tmp, ns.addr, aclEnable="true", aclConfigFile=path)
    try:
        yield ns, broker
    finally:
        broker.stop()
        ns.stop()


def test_the_same_requests_get_the_same_answers_as_from_apache(acl_file, ours):
    home, _ = acl_file
    apache = start_apache_cluster(home, broker_overrides={"aclEnable": "true"})
    try:
        theirs = asyncio.run(_answers(apache.broker_addr))
        python_on_apache = asyncio.run(_python_send(apache.namesrv_addr))
    finally:
        apache.stop()
    assert python_on_apache == (True, "Check signature failed")  # our client's signature, judged by Apache
    mine = asyncio.run(_answers(ours[1].addr))
    assert theirs["send allowed"][0] and theirs["unsigned send"] == (False, "No accessKey is configured")
    assert mine == theirs


async def _python_send(namesrv: str) -> tuple[bool, str]:
    """Our client with the right key (sends) and with a wrong one (refused, and why)."""
    from pyrocketmq.client import ClientSettings, Message, Producer
    from pyrocketmq.client.errors import MQError

    async with Producer(
        "pp_acl", namesrv, client=ClientSettings(access_key=ALICE[0], secret_key=ALICE[1])
    ) as p:
        sent = await p.send(Message("Allowed", b"from python"))
    try:
        async with Producer(
            "pp_acl", namesrv, client=ClientSettings(access_key=ALICE[0], secret_key="wrong-key")
        ) as p:
            await p.send(Message("Allowed", b"no"))
        why = "sent"
    except MQError as e:
        why = "Check signature failed" if "Check signature failed" in str(e) else str(e)
    return sent.queue_offset >= 0, why


def test_java_client_with_acl(ours, java):
    ns, broker = ours
    alice = {"acl.accessKey": ALICE[0], "acl.secretKey": ALICE[1]}
    sent = java.run("ProducerScenario", [ns.addr, "Allowed", 20, "sync,batch=5", "pg_acl"], timeout=120,
                    jvm_props=alice).json()
    assert sent["errors"] == 0, [s.get("error") for s in sent["sent"] if "error" in s][:2]
    pulled = java.run(
        "PullScenario",
        [ns.addr, "Allowed", "cg_acl", len(sent["sent"]), 60, "lite"],
        timeout=120,
        jvm_props=alice,
    ).json()
    assert not pulled["timedOut"] and len(pulled["messages"]) >= len(sent["sent"])
    refused = java.run(
        "ProducerScenario", [ns.addr, "ReadOnly", 1, "sync", "pg_acl"], timeout=120, jvm_props=alice
    ).json()
    assert (
        refused["errors"] == 1
    )  # the Java client wraps the broker's answer in "Send [3] times, still failed"
    anonymous = java.run("ProducerScenario", [ns.addr, "Allowed", 1, "sync", "pg_acl"], timeout=120).json()
    assert anonymous["errors"] == 1
    log = broker.log_text()
    assert "No default permission for topic:ReadOnly" in log and "No accessKey is configured" in log


def test_java_push_consumer_with_acl(ours, java):
    """The unmodified push consumer under the ACL, on its own group: heartbeats (with the client's
    inner producer group), a failed message sent back and redelivered through the group's retry
    topic, then its admin calls (connections, running info, reset offsets)."""
    ns, _ = ours
    alice = {"acl.accessKey": ALICE[0], "acl.secretKey": ALICE[1]}
    sent = java.run("ProducerScenario", [ns.addr, "Pushed", 6, "sync", "pg_acl_push"], timeout=120,
                    jvm_props=alice).json()
    assert sent["errors"] == 0, [s.get("error") for s in sent["sent"] if "error" in s][:2]
    retried = java.run("PushConsumerScenario", [ns.addr, "Pushed", "cg_acl_push", "concurrent", 6, 90, 3],
                       timeout=150, jvm_props=alice).json()
    assert not retried["timedOut"] and sorted(retried["failed"]) == ["0", "3"]
    rewound = java.run("PushConsumerScenario", [ns.addr, "Pushed", "cg_acl_rewind", "rewind", 6, 90],
                       timeout=150, jvm_props=alice).json()
    assert not rewound["timedOut"] and rewound["reset"] and rewound["runningInfo"]["topics"]


def test_python_client_with_acl(ours):
    from pyrocketmq.client import ClientSettings, Message, Producer
    from pyrocketmq.client.errors import MQError

    ns, _ = ours

    async def go():
        alice = ClientSettings(access_key=ALICE[0], secret_key=ALICE[1])
        async with Producer("pp_acl", ns.addr, client=alice) as p:
            ok = await p.send(Message("Allowed", b"from python"))
        try:
            async with Producer(
                "pp_acl", ns.addr, client=ClientSettings(access_key=ALICE[0], secret_key="wrong-secret")
            ) as p:
                await p.send(Message("Allowed", b"no"))
            return ok, None
        except MQError as e:
            return ok, str(e)

    ok, refused = asyncio.run(go())
    assert ok.queue_offset >= 0 and refused is not None and "Check signature failed" in refused


@pytest.fixture(scope="module")
def ours_checking_namesrv(acl_file, tmp_path_factory):
    """Our name server with the ACL on too; the broker registers with the admin account."""
    import sys

    from tests.integration.procs import Proc, free_port

    _, path = acl_file
    tmp = tmp_path_factory.mktemp("acl-ns")
    port = free_port()
    ns = Proc("namesrv", [sys.executable, "-m", "pyrocketmq", "namesrv", "--listen-port", str(port),
                          "--set", "aclEnable=true", "--set", f"aclConfigFile={path}"],
              tmp / "logs" / "namesrv.log", port).start()  # fmt: skip
    try:
        broker = start_broker(
            tmp, ns.addr, aclEnable="true", aclConfigFile=path, accessKey=ROOT[0], secretKey=ROOT[1]
        )
    except BaseException:
        ns.stop()
        raise
    try:
        yield ns, broker
    finally:
        broker.stop()
        ns.stop()


def test_java_client_signs_for_a_name_server_that_checks(ours_checking_namesrv, java):
    ns, _ = ours_checking_namesrv
    alice = {"acl.accessKey": ALICE[0], "acl.secretKey": ALICE[1]}
    sent = java.run("ProducerScenario", [ns.addr, "Allowed", 10, "sync", "pg_acl_ns"], timeout=120,
                    jvm_props=alice).json()
    assert sent["errors"] == 0, [s.get("error") for s in sent["sent"] if "error" in s][:2]
    anonymous = java.run("ProducerScenario", [ns.addr, "Allowed", 1, "sync", "pg_acl_ns"], timeout=120).json()
    assert anonymous["errors"] == 1  # no route: the name server refused the unsigned lookup
    assert "refused request code 105" in ns.log_text() and "No accessKey is configured" in ns.log_text()
