"""The name server's ACL table (``NAMESRV_RULES`` in ``server/acl_namesrv_table.py``), held up against the
codes the name server and its controller register: admin accounts for what changes what it serves,
any signed account for the reads, and, as at the broker, a request carrying a field its code does
not take is refused (a signed request replayed under another code), while every field real peers
send is taken: Java 4.9/5.x clients, brokers and tools, our broker's registration, our client and
the controller's callers."""

from __future__ import annotations

import asyncio
import json

import pytest

from pyrocketmq.remoting.acl_sign import sign
from pyrocketmq.remoting.code import RequestCode as C, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.server.acl import AclValidator, parse_plain_acl
from pyrocketmq.server.acl_namesrv_table import NAMESRV_ADMIN_CODES, NAMESRV_RULES, namesrv_needs
from pyrocketmq.server.acl_table import RequestRefused

# -- every code the name server registers has a rule -------------------------------------------


def registered_codes(tmp_path) -> set[int]:
    """The codes a name server with its controller on and a KV config (beside which it keeps ACL 2.0's
    users) puts on its server."""
    from pyrocketmq.namesrv.app import NameServer
    from pyrocketmq.namesrv.settings import NamesrvSettings

    ns = NameServer(NamesrvSettings(listen_port=0, host="127.0.0.1", controller=True,
                                    controller_store_path=str(tmp_path / "controller.json"),
                                    kv_config_path=str(tmp_path / "kvConfig.json")))
    return set(ns.server.handlers)


NOT_IN_THE_TABLE: frozenset[int] = frozenset()
"""Codes the name server registers that deliberately have no rule (none: every one has)."""

EXPECTED_ADMIN = {
    C.REGISTER_BROKER,
    C.UNREGISTER_BROKER,  # a broker joining or leaving the routes
    C.QUERY_DATA_VERSION,  # a broker's sign of life: it keeps a registration (and its routes) alive
    C.WIPE_WRITE_PERM_OF_BROKER,  # stops writes to a broker
    C.DELETE_TOPIC_IN_NAMESRV,
    C.PUT_KV_CONFIG,
    C.DELETE_KV_CONFIG,  # topics, order conf, gRPC endpoints
    C.CONTROLLER_BROKER_HEARTBEAT,
    C.CONTROLLER_ALTER_SYNC_STATE_SET,
    C.CONTROLLER_ELECT_MASTER,  # who is master
    C.CONTROLLER_RAFT_VOTE,
    C.CONTROLLER_RAFT_APPEND,  # between controller instances
    *range(C.AUTH_CREATE_USER, C.AUTH_LIST_ACL + 1),  # ACL 2.0's users and ACLs
}
EXPECTED_OPEN = {
    C.GET_ROUTEINFO_BY_TOPIC,
    C.GET_BROKER_CLUSTER_INFO,  # routes: what every client reads
    C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    C.GET_TOPICS_BY_CLUSTER,
    C.GET_SYSTEM_TOPIC_LIST_FROM_NS,  # topic names
    C.GET_KV_CONFIG,
    C.GET_KVLIST_BY_NAMESPACE,  # order conf, gRPC endpoints
    C.CONTROLLER_GET_METADATA_INFO,  # the broker groups' masters and in-sync sets
}


def test_every_code_the_name_server_serves_has_a_rule_and_no_rule_is_stale(tmp_path):
    served = registered_codes(tmp_path)
    assert len(served) > 15
    assert served - set(NAMESRV_RULES) - NOT_IN_THE_TABLE == set(), (
        "a handler without an ACL rule: add it to NAMESRV_RULES"
    )
    assert set(NAMESRV_RULES) - served == set(), "a rule for a code the name server no longer serves"


def test_admin_codes_and_reads_are_the_listed_ones_and_only_a_route_needs_a_topic_right():
    assert NAMESRV_ADMIN_CODES == EXPECTED_ADMIN
    assert {code for code, rule in NAMESRV_RULES.items() if not rule.admin} == EXPECTED_OPEN
    needing_rights = {code for code, rule in NAMESRV_RULES.items() if rule.needs is not None}
    assert needing_rights == {C.GET_ROUTEINFO_BY_TOPIC}


# -- who may send what ---------------------------------------------------------------------------
BROKER = {
    "brokerName": "broker-a",
    "brokerAddr": "10.0.0.1:10911",
    "clusterName": "DefaultCluster",
    "brokerId": 0,
}
FITTING: dict[int, dict[str, object]] = {
    C.REGISTER_BROKER: {**BROKER, "haServerAddr": "10.0.0.1:10912", "compressed": "false", "bodyCrc32": 0},
    C.UNREGISTER_BROKER: BROKER,
    C.QUERY_DATA_VERSION: BROKER,
    C.WIPE_WRITE_PERM_OF_BROKER: {"brokerName": "broker-a"},
    C.DELETE_TOPIC_IN_NAMESRV: {"topic": "Orders", "clusterName": "DefaultCluster"},
    C.PUT_KV_CONFIG: {"namespace": "ORDER_TOPIC_CONFIG", "key": "Orders", "value": "broker-a:4"},
    C.DELETE_KV_CONFIG: {"namespace": "ORDER_TOPIC_CONFIG", "key": "Orders"},
    C.GET_ROUTEINFO_BY_TOPIC: {"topic": "Orders"},
    C.GET_TOPICS_BY_CLUSTER: {"cluster": "DefaultCluster"},
    C.GET_KV_CONFIG: {"namespace": "ORDER_TOPIC_CONFIG", "key": "Orders"},
    C.GET_KVLIST_BY_NAMESPACE: {"namespace": "ORDER_TOPIC_CONFIG"},
}
"""A request of each code with a header, as its handler reads it (the others carry none)."""
ACL = parse_plain_acl(
    {
        "accounts": [
            {"accessKey": "rootadmin", "secretKey": "rootadmin-secret", "admin": True},
            {
                "accessKey": "nobody01",
                "secretKey": "nobody01-secret",
                "defaultTopicPerm": "DENY",
                "defaultGroupPerm": "DENY",
            },
            {
                "accessKey": "reader01",
                "secretKey": "reader01-secret",
                "defaultTopicPerm": "SUB",
                "topicPerms": ["Orders=SUB"],
                "groupPerms": ["readers=SUB"],
            },
            {
                "accessKey": "writer01",
                "secretKey": "writer01-secret",
                "defaultTopicPerm": "DENY",
                "defaultGroupPerm": "DENY",
                "topicPerms": ["Orders=PUB", "Payments=DENY"],
            },
        ]
    }
)
NS = AclValidator(ACL, NAMESRV_ADMIN_CODES, namesrv_needs)


def by(who: str, code: int, ext: dict[str, object], body: bytes | None = None) -> str | None:
    cmd = RemotingCommand.request(code, dict(ext), body)
    sign(cmd, who, who + "-secret")
    return NS.refusal(cmd, "127.0.0.1")


@pytest.mark.parametrize("code", sorted(NAMESRV_RULES))
def test_an_admin_may_send_every_request_in_its_own_fields(code):
    assert by("rootadmin", code, FITTING.get(code, {}), b"{}" if code >= 1000 else None) is None


@pytest.mark.parametrize("code", sorted(EXPECTED_ADMIN))
def test_a_change_needs_an_admin_account(code):
    assert by("nobody01", code, FITTING.get(code, {})) == (
        f"Need admin permission for request code={code}, but accessKey=nobody01 is not")


@pytest.mark.parametrize("code", sorted(EXPECTED_OPEN - {C.GET_ROUTEINFO_BY_TOPIC}))
def test_a_read_needs_only_a_signed_account_even_one_denied_every_topic(code):
    assert by("nobody01", code, FITTING.get(code, {})) is None
    unsigned = RemotingCommand.request(code, dict(FITTING.get(code, {})))
    assert NS.refusal(unsigned, "127.0.0.1") == "No accessKey is configured"


@pytest.mark.parametrize(
    ("who", "topic", "refusal"),
    [
        ("nobody01", "Orders", "No default permission for topic:Orders"),  # denied every topic
        ("reader01", "Orders", None),  # SUB on it
        ("writer01", "Orders", None),  # PUB on it
        ("writer01", "Payments", "No default permission for topic:Payments"),  # DENY on it
        ("reader01", "Audit", None),  # no rule: its default (SUB) is a right
        ("writer01", "Audit", "No default permission for topic:Audit"),  # no rule: its default is DENY
        ("reader01", "%RETRY%readers", None),  # a retry topic's route: a right on its group
        ("writer01", "%RETRY%readers", "No default permission for group:readers"),
        # an internal topic: no default covers it
        ("reader01", "SCHEDULE_TOPIC_XXXX", "No default permission for topic:SCHEDULE_TOPIC_XXXX"),
        ("rootadmin", "Payments", None),  # an admin with no rules of its own reads every route
        ("writer01", "TBW102", None),  # the auto-create template: a send to a new topic asks for it
    ],
)
def test_a_route_needs_a_right_on_its_topic(who, topic, refusal):
    assert by(who, C.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}) == refusal


# -- fields: a signed request replayed under another code ---------------------------------------


@pytest.mark.parametrize("code", sorted(NAMESRV_RULES))
def test_a_field_the_code_does_not_take_is_refused_by_name_even_for_an_admin(code):
    assert (
        by("rootadmin", code, {**FITTING.get(code, {}), "zz": "1"})
        == f"request code {code} takes no field 'zz'"
    )
    with pytest.raises(RequestRefused, match=f"^request code {code} takes no field 'zz'$"):
        namesrv_needs(RemotingCommand.request(code, {"zz": "1"}))


@pytest.mark.parametrize(("captured", "replayed", "field"), [
    (C.REGISTER_BROKER, C.UNREGISTER_BROKER, "bodyCrc32"),  # a registration replayed as leaving the routes
    (C.PUT_KV_CONFIG, C.DELETE_KV_CONFIG, "value"),  # an endpoint announced, replayed as withdrawn
    (C.GET_TOPICS_BY_CLUSTER, C.WIPE_WRITE_PERM_OF_BROKER, "cluster"),
])
def test_a_captured_admin_request_replayed_under_another_code_is_refused(captured, replayed, field):
    cmd = RemotingCommand.request(captured, dict(FITTING[captured]))
    sign(cmd, "rootadmin", "rootadmin-secret")
    assert NS.refusal(cmd, "127.0.0.1") is None
    cmd.code = replayed  # same fields, same signature
    assert NS.refusal(cmd, "127.0.0.1") == f"request code {replayed} takes no field {field!r}"


def test_a_5x_route_read_replayed_as_deleting_the_topic_is_refused():
    read = RemotingCommand.request(
        C.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders", "acceptStandardJsonOnly": "true"}
    )
    sign(read, "rootadmin", "rootadmin-secret")
    read.code = C.DELETE_TOPIC_IN_NAMESRV
    assert (
        NS.refusal(read, "127.0.0.1")
        == f"request code {int(C.DELETE_TOPIC_IN_NAMESRV)} takes no field 'acceptStandardJsonOnly'"
    )


# What Java peers send: the fields of Apache 4.9.8's and 5.x's header classes for each code (5.x's
# GetRouteInfoRequestHeader inherits TopicRequestHeader's ``lo``, ``ns``, ``nsd``, ``bname``, ``oway``),
# plus ``ReqT`` (a lite pull consumer's StreamTypeRPCHook, on every request) and the signature.
JAVA_FIELDS: dict[int, set[str]] = {
    C.REGISTER_BROKER: {
        "brokerName",
        "brokerAddr",
        "clusterName",
        "haServerAddr",
        "brokerId",
        "compressed",
        "bodyCrc32",
        "heartbeatTimeoutMillis",
        "enableActingMaster",
    },  # the last two: 5.x brokers
    C.UNREGISTER_BROKER: set(BROKER),
    C.QUERY_DATA_VERSION: set(BROKER),
    C.WIPE_WRITE_PERM_OF_BROKER: {"brokerName"},
    C.DELETE_TOPIC_IN_NAMESRV: {"topic", "clusterName"},
    C.PUT_KV_CONFIG: {"namespace", "key", "value"},
    C.DELETE_KV_CONFIG: {"namespace", "key"},
    C.GET_ROUTEINFO_BY_TOPIC: {"topic", "acceptStandardJsonOnly", "lo", "ns", "nsd", "bname", "oway"},
    C.GET_TOPICS_BY_CLUSTER: {"cluster"},
    C.GET_KV_CONFIG: {"namespace", "key"},
    C.GET_KVLIST_BY_NAMESPACE: {"namespace"},
}
"""Codes not listed carry no header from a Java peer (cluster info, topic lists, the controller's
metadata)."""


@pytest.mark.parametrize("code", sorted(NAMESRV_RULES))
def test_every_field_a_java_peer_sends_is_taken(code):
    fields = JAVA_FIELDS.get(code, set()) | {"AccessKey", "Signature", "SecurityToken", "ReqT"}
    assert NAMESRV_RULES[code].stray_field(RemotingCommand.request(code, {k: "1" for k in fields})) is None


class Wire:
    """A RemotingClient stand-in: records what is sent, answers as a name server or controller would."""

    def __init__(self) -> None:
        self.sent: list[RemotingCommand] = []

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float | None = None,
                     connect_timeout: float | None = None) -> RemotingCommand:
        self.sent.append(cmd)
        if cmd.code == C.GET_ROUTEINFO_BY_TOPIC:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, "no route")
        if cmd.code == C.GET_BROKER_CLUSTER_INFO:
            return cmd.response(
                ResponseCode.SUCCESS, body=b'{"brokerAddrTable":{},"clusterAddrTable":{"c":[]}}'
            )
        return cmd.response(ResponseCode.SUCCESS, body=b"{}")


def test_our_brokers_and_clients_requests_fit_their_codes(tmp_path):
    from pyrocketmq.broker.registration import Registrar
    from pyrocketmq.broker.settings import BrokerSettings
    from pyrocketmq.broker.topic_config import TopicConfigManager
    from pyrocketmq.client.admin import Admin
    from pyrocketmq.client.controller import controller_groups, elect_master
    from pyrocketmq.client.instance import ClientInstance
    from pyrocketmq.client.settings import ClientSettings

    settings = BrokerSettings.from_conf({"storePathRootDir": str(tmp_path), "brokerIP1": "127.0.0.1",
                                         "namesrvAddr": "127.0.0.1:9876"})
    topics = TopicConfigManager(
        str(tmp_path / "topics.json"),
        cluster_name="DefaultCluster",
        broker_name="broker-a",
        auto_create_topic=True,
        default_queue_nums=4,
    )
    registrar, instance, admin, wire = (
        Registrar(settings, topics),
        ClientInstance(ClientSettings()),
        Admin(),
        Wire(),
    )
    registrar.client = wire  # type: ignore[assignment]
    instance.remoting = wire  # type: ignore[assignment]
    admin._instance = instance

    async def talk() -> None:
        await registrar.register_all()
        await registrar.unregister_all()
        await instance.fetch_route("Orders")
        await admin.delete_topic("Orders", "c")
        await admin.put_kv_config("ns", "k", "v")
        await admin.topic_list()
        await controller_groups(instance, "127.0.0.1:9878")
        await elect_master(instance, "127.0.0.1:9878", "broker-a", 2)

    asyncio.run(talk())
    codes = [cmd.code for cmd in wire.sent]
    assert set(codes) == {
        C.REGISTER_BROKER,
        C.UNREGISTER_BROKER,
        C.GET_ROUTEINFO_BY_TOPIC,
        C.GET_BROKER_CLUSTER_INFO,
        C.DELETE_TOPIC_IN_NAMESRV,
        C.PUT_KV_CONFIG,
        C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        C.CONTROLLER_GET_METADATA_INFO,
        C.CONTROLLER_ELECT_MASTER,
    }, codes
    for cmd in wire.sent:
        sign(cmd, "rootadmin", "rootadmin-secret")
        assert NS.refusal(cmd, "127.0.0.1") is None, (cmd.code, cmd.ext_fields)
    assert json.loads(bytes(wire.sent[-1].payload)) == {
        "brokerName": "broker-a",
        "replicaId": 2,
    }  # a body, no header
