"""Apache RocketMQ 5.3's own ``mqadmin`` (rocketmq-tools 5.3.3 from Maven Central) manages the ACL 2.0
users and ACLs of our broker and of our name server: its ten commands (createUser, updateUser,
deleteUser, getUser, listUser, createAcl, updateAcl, deleteAcl, getAcl, listAcl), signed as the super
user ``root`` the way mqadmin signs (``conf/tools.yml``), each checked twice: by what the tool printed
and by what our own client (``Admin``) reads back. Unsigned, or signed by a normal user, the tool is
refused and changes nothing.

One JVM runs a batch of commands (``java53/MqadminBatch.java`` calls ``MQAdminStartup.main0`` for
each); its output is cut per command."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyrocketmq.client import Admin, ClientSettings
from tests.conformance import jvm, maven
from tests.conformance.conftest import missing_prerequisite
from tests.integration.procs import Proc, start_broker, start_namesrv

pytestmark = pytest.mark.conformance

ROOT = ClientSettings(access_key="root", secret_key="root-password", request_timeout=5)
ACL2 = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "initAuthenticationUser": '{"username":"root","password":"root-password"}',
    "innerClientAuthenticationCredentials": '{"accessKey":"inner","secretKey":"inner-password"}',
}
CLUSTER = "DefaultCluster"


@dataclass(frozen=True, slots=True)
class Printed:
    """What one mqadmin command printed."""

    args: list[str]
    out: str
    err: str

    def __str__(self) -> str:
        return (f"mqadmin {' '.join(self.args)}\n--- stdout ---\n{self.out}\n"
                f"--- stderr ---\n{self.err[-3000:]}")

    def rows(self) -> list[list[str]]:
        """The table a get/list command printed, without its ``#Header`` line."""
        return [line.split() for line in self.out.splitlines() if line.strip() and not line.startswith("#")]

    def refused(self) -> str:
        """The broker's answer in the stack trace of a refused command (``CODE: 16  DESC: ...``)."""
        for line in self.err.splitlines():
            if "MQBrokerException: CODE:" in line:
                return line.split("MQBrokerException: ", 1)[1].split(", For more information")[0]
        raise AssertionError(f"not refused by the server:\n{self}")


class Mqadmin53:
    """Runs batches of Apache 5.3 mqadmin commands; ``home/conf/tools.yml`` signs them as root."""

    def __init__(self, programs: jvm.JavaPrograms, home: Path) -> None:
        self.programs, self.home = programs, home
        self.batches = 0

    def run(self, *commands: tuple[str, ...]) -> list[Printed]:
        """Each command is mqadmin's arguments, signed by tools.yml, or by ``as_(signer, ...)``'s."""
        self.batches += 1
        script = self.home / f"batch-{self.batches}.tsv"
        script.write_text("".join("\t".join(c if c[0].startswith("@") else ("@yml", *c)) + "\n"
                                  for c in commands))  # fmt: skip
        result = self.programs.run("MqadminBatch", [str(script)], timeout=60 + 15 * len(commands),
                                   jvm_props={"rocketmq.home.dir": str(self.home),
                                              "user.home": str(self.home)})  # fmt: skip
        if result.returncode != 0:
            raise jvm.JavaProgramError(result.describe("failed"))
        outs, errs = _cut(result.stdout), _cut(result.stderr)
        assert len(outs) == len(commands) == len(errs), result.describe("printed fewer commands")
        return [Printed(list(c), o, e) for c, o, e in zip(commands, outs, errs, strict=True)]


def as_(signer: str, *args: str) -> tuple[str, ...]:
    """A command signed otherwise: ``signer`` is ``none`` (unsigned) or ``NAME:PASSWORD``."""
    return (f"@{signer}", *args)


def _cut(text: str) -> list[str]:
    parts = text.split("=== mqadmin ")[1:]
    return [p.split("\n", 1)[1] if "\n" in p else "" for p in parts]


@pytest.fixture(scope="module")
def mqadmin(tmp_path_factory: pytest.TempPathFactory) -> Mqadmin53:
    home = tmp_path_factory.mktemp("mqadmin53-home")
    (home / "conf").mkdir()
    (home / "conf" / "tools.yml").write_text("accessKey: root\nsecretKey: root-password\n")
    try:
        jvm.java_executable()
        programs = jvm.JavaPrograms(maven.resolve(maven.TOOLS53), log_dir=home / "logs",
                                    sources=jvm.JAVA_SOURCES.with_name("java53"))  # fmt: skip
        programs.compile()
    except maven.PrerequisiteMissing as exc:
        missing_prerequisite(str(exc))
        raise
    return Mqadmin53(programs, home)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("mqadmin53-ours")
    ns = start_namesrv(tmp, kvConfigPath=tmp / "namesrv" / "kvConfig.json", **ACL2)
    procs: list[Proc] = [ns]
    try:
        procs.append(start_broker(tmp, f"127.0.0.1:{ns.port}", "broker-a", **ACL2))
        yield f"127.0.0.1:{ns.port}", f"127.0.0.1:{procs[1].port}"
    finally:
        for p in reversed(procs):
            p.stop()


async def _state(ns: str, target: str) -> dict[str, object]:
    """Users and ACLs of ``target`` (a broker or the name server), read by our own client as root."""
    async with Admin(ns, client=ROOT) as admin:
        users = {u["username"]: u for u in await admin.list_users(broker_addr=target)}
        acls = {a["subject"]: a for a in await admin.list_acls(broker_addr=target)}
        alice = await admin.get_acl("User:alice", broker_addr=target)
        carol = await admin.get_user("carol", broker_addr=target)
    return {"users": users, "acls": acls, "alice acl": alice, "carol": carol}


def _entries(acl: dict | None) -> dict[str, tuple]:
    """An AclInfo's Custom entries by resource: (actions, sourceIps, decision)."""
    return {e["resource"]: (sorted(e["actions"]), e.get("sourceIps") or [], e["decision"])
            for p in (acl or {}).get("policies", []) for e in p["entries"]}  # fmt: skip


@pytest.mark.parametrize("where", ["broker", "namesrv"])
def test_apache_mqadmin_manages_users_and_acls(mqadmin, servers, where):
    ns, broker = servers
    t = broker if where == "broker" else ns
    b, n = ("-b", t), ("-n", ns)
    out = mqadmin.run(
        ("createUser", *b, *n, "-u", "alice", "-p", "alice-password", "-t", "Normal"),  # 0
        ("createUser", *b, *n, "-u", "bob", "-p", "bob-password"),  # 1
        ("createUser", *b, *n, "-u", "carol", "-p", "carol-password", "-t", "Super"),  # 2
        ("updateUser", *b, *n, "-u", "alice", "-p", "alice-password-2"),  # 3
        ("updateUser", *b, *n, "-u", "carol", "-s", "disable"),  # 4
        ("getUser", *b, *n, "-u", "carol"),  # 5
        ("listUser", *b, *n),  # 6
        ("createAcl", *b, *n, "-s", "User:alice", "-r", "Topic:orders,Group:billing", "-a", "Pub,Sub",
         "-d", "Allow", "-i", "10.0.0.0/8"),  # 7
        ("createAcl", *b, *n, "-s", "User:bob", "-r", "Topic:*", "-a", "All", "-d", "Deny"),  # 8
        ("updateAcl", *b, *n, "-s", "User:alice", "-r", "Topic:orders", "-a", "Pub", "-d", "Allow",
         "-i", "127.0.0.1"),  # 9
        ("getAcl", *b, *n, "-s", "User:alice"),  # 10
        ("listAcl", *b, *n),  # 11
        ("listAcl", *b, *n, "-s", "User:alice", "-r", "Topic:orders"),  # 12
        ("deleteAcl", *b, *n, "-s", "User:alice", "-r", "Group:billing"),  # 13
        ("deleteUser", *b, *n, "-u", "bob"),  # 14
        ("listUser", *b, *n, "-f", "o"),  # 15
        ("createAcl", *b, *n, "-s", "User:carol", "-r", "Group:*", "-a", "Sub", "-d", "Allow"),  # 16
        ("deleteAcl", *b, *n, "-s", "User:carol"),  # 17: the whole ACL
        ("getUser", *b, *n, "-u", "bob"),  # 18: no such user, nothing to print
    )
    said = {"createUser": "create user", "updateUser": "update user", "deleteUser": "delete user",
            "createAcl": "create acl", "updateAcl": "update acl", "deleteAcl": "delete acl"}  # fmt: skip
    for p in out:
        assert "Exception" not in p.err, p
        if p.args[0] in said:
            assert p.out.strip() == f"{said[p.args[0]]} to {t} success.", p

    # what the tool printed, as the server had it then
    assert out[5].rows() == [["carol", "carol-password", "Super", "disable"]], out[5]
    mine = {"alice", "bob", "carol", "inner", "root"}  # (another test of this module adds its own users)
    assert sorted(r[:3] for r in out[6].rows() if r[0] in mine) == [
        ["alice", "alice-password-2", "Normal"], ["bob", "bob-password", "Normal"],
        ["carol", "carol-password", "Super"], ["inner", "inner-password", "Super"],
        ["root", "root-password", "Super"]], out[6]  # fmt: skip
    assert sorted(out[10].rows()) == [
        ["User:alice", "Custom", "Group:billing", "[Pub,", "Sub]", "[10.0.0.0/8]", "Allow"],
        ["User:alice", "Custom", "Topic:orders", "[Pub]", "[127.0.0.1]", "Allow"]], out[10]  # fmt: skip
    assert sorted(r[:3] for r in out[11].rows()) == [
        ["User:alice", "Custom", "Group:billing"], ["User:alice", "Custom", "Topic:orders"],
        ["User:bob", "Custom", "Topic:*"]], out[11]  # fmt: skip
    orders = ["User:alice", "Custom", "Topic:orders", "[Pub]", "[127.0.0.1]", "Allow"]
    assert out[12].rows() == [orders], out[12]
    assert sorted(r[0] for r in out[15].rows() if r[0] in mine) == ["carol", "root"], out[15]  # with an "o"
    assert out[18].out == "", out[18]

    # what our own client reads back afterwards
    state = asyncio.run(_state(ns, t))
    users = state["users"]
    assert isinstance(users, dict)
    assert sorted(set(users) & mine) == ["alice", "carol", "inner", "root"]  # bob deleted
    assert users["alice"]["password"] == "alice-password-2" and users["alice"]["userType"] == "Normal"
    assert state["carol"] == {"username": "carol", "password": "carol-password", "userType": "Super",
                              "userStatus": "disable"}  # fmt: skip
    assert _entries(state["alice acl"]) == {"Topic:orders": (["Pub"], ["127.0.0.1"], "Allow")}
    assert "User:alice" in state["acls"] and "User:carol" not in state["acls"]
    assert "User:bob" not in state["acls"]  # bob's ACL went with him


def test_apache_mqadmin_reaches_a_cluster_through_our_name_server(mqadmin, servers):
    """``-c DefaultCluster``: the tool finds the brokers in our name server's cluster info (signed)."""
    ns, broker = servers
    c = ("-c", CLUSTER, "-n", ns)
    out = mqadmin.run(
        ("createUser", *c, "-u", "dave", "-p", "dave-password"),
        ("createAcl", *c, "-s", "User:dave", "-r", "Topic:audit", "-a", "Sub", "-d", "Allow"),
        ("getUser", *c, "-u", "dave"),
        ("getAcl", *c, "-s", "User:dave"),
        ("deleteUser", *c, "-u", "dave"),
    )
    assert out[0].out.strip() == f"create user to {broker} success.", out[0]
    assert out[1].out.strip() == f"create acl to {broker} success.", out[1]
    assert out[2].rows() == [["dave", "dave-password", "Normal", "enable"]], out[2]
    # no source IPs: none in the answer (as Apache's broker answers), which the tool prints as null
    assert out[3].rows() == [["User:dave", "Custom", "Topic:audit", "[Sub]", "null", "Allow"]], out[3]
    assert out[4].out.strip() == f"delete user to {broker} success.", out[4]

    async def gone() -> object:
        async with Admin(ns, client=ROOT) as admin:
            return await admin.get_user("dave", broker_addr=broker)

    assert asyncio.run(gone()) is None


@pytest.mark.parametrize("where", ["broker", "namesrv"])
def test_apache_mqadmin_unsigned_or_as_a_normal_user_is_refused(mqadmin, servers, where):
    ns, broker = servers
    t = broker if where == "broker" else ns

    async def setup() -> None:
        async with Admin(ns, client=ROOT) as admin:
            await admin.create_user("erin", "erin-password", broker_addr=t)

    asyncio.run(setup())
    create = ("createUser", "-b", t, "-n", ns, "-u", "mallory", "-p", "mallory-password", "-t", "Super")
    listing = ("listUser", "-b", t, "-n", ns)
    out = mqadmin.run(as_("none", *create), as_("none", *listing), as_("erin:erin-password", *create),
                      as_("erin:erin-password", *listing), as_("erin:not-her-password", *listing))
    unsigned, as_erin, wrong = out[:2], out[2:4], out[4:]
    cluster = "*" if where == "namesrv" else CLUSTER
    assert [p.refused() for p in unsigned] == ["CODE: 16  DESC: username cannot be null."] * 2
    assert [p.refused() for p in as_erin] == [
        f"CODE: 16  DESC: User:erin has no permission to access Cluster:{cluster} from 127.0.0.1, "
        "no matched policies."] * 2  # fmt: skip
    assert wrong[0].refused() == "CODE: 16  DESC: check signature failed."
    assert all("success" not in p.out and not p.rows() for p in (*unsigned, *as_erin, *wrong))

    async def users() -> list[str]:
        async with Admin(ns, client=ROOT) as admin:
            return [u["username"] for u in await admin.list_users(broker_addr=t)]

    assert "mallory" not in asyncio.run(users())
