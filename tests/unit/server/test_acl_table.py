"""The broker's table of what each request needs (``server/acl_table.py``), held up against the
codes the broker registers and walked request by request, in every spelling a peer may send: an
account lacking any one of the rights a request needs is refused, one holding them all is let in.
Then the fields: a request carrying a field its code does not take is refused (a signed request
replayed under another code), while the fields real 4.x clients send are taken."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from dataclasses import dataclass

import pytest

from pyrocketmq.broker import processors
from pyrocketmq.remoting import body as bodies
from pyrocketmq.remoting.acl_sign import sign
from pyrocketmq.remoting.code import RequestCode as C
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import PullMessageRequestHeader, SendMessageRequestHeader
from pyrocketmq.server.acl import ANY, PUB, SUB, AclValidator, parse_plain_acl
from pyrocketmq.server.acl_perm import describe
from pyrocketmq.server.acl_table import ADMIN_CODES, BROKER_RULES, OPEN_CODES, RequestRefused, needs

# -- every code the broker registers has a rule ------------------------------------------------


def registered_codes() -> set[int]:
    """The request codes the broker's processors register (each processor's ``register`` run on a
    bare instance: it only hands its bound handlers over), the shared ACL 2.0 one among them."""
    from pyrocketmq.server.auth_processor import AuthProcessor

    codes: set[int] = set()

    class Registry:
        def register(self, code, handler) -> None:
            codes.add(int(code))

    for info in pkgutil.iter_modules(processors.__path__):
        module = importlib.import_module(f"{processors.__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and callable(getattr(cls, "register", None)):
                cls.register(object.__new__(cls), Registry())
    AuthProcessor.register(object.__new__(AuthProcessor), Registry())
    return codes


EXPECTED_ADMIN = {
    C.UPDATE_AND_CREATE_TOPIC, C.DELETE_TOPIC_IN_BROKER,  # topics
    C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, C.DELETE_SUBSCRIPTIONGROUP,  # groups
    C.UPDATE_BROKER_CONFIG,  # the broker's configuration
    C.GET_ALL_CONSUMER_OFFSET,  # every group's offsets at once (a slave's sync)
    *range(C.AUTH_CREATE_USER, C.AUTH_LIST_ACL + 1),  # ACL 2.0's users and ACLs
    *range(C.UPDATE_USER_QUOTA, C.LIST_USER_QUOTA + 1),  # the users' quotas
}
EXPECTED_OPEN = {
    C.VIEW_MESSAGE_BY_ID,  # names a commitlog offset; its handler asks SUB on the topic it finds
    C.GET_ALL_TOPIC_CONFIG, C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,  # configs, no data (a slave's sync, tools)
    C.GET_ALL_DELAY_OFFSET, C.GET_TIMER_CHECK_POINT,  # delivery progress (a slave's sync)
    C.GET_BROKER_CONFIG, C.GET_BROKER_RUNTIME_INFO,  # the broker's own settings and counters
}


def test_every_code_the_broker_serves_has_a_rule_and_no_rule_is_stale():
    served = registered_codes()
    assert len(served) > 40
    assert served - set(BROKER_RULES) == set(), "a handler without an ACL rule: add it to BROKER_RULES"
    assert set(BROKER_RULES) - served == set(), "a rule for a code the broker no longer serves"


def test_codes_needing_nothing_but_an_account_are_the_listed_ones():
    assert ADMIN_CODES == EXPECTED_ADMIN
    assert OPEN_CODES == EXPECTED_OPEN
    for code, rule in BROKER_RULES.items():
        assert (rule.needs is not None) + rule.admin + (code in OPEN_CODES) == 1, code


# -- requests, in every spelling, and what each needs -------------------------------------------
T, G, G2, PG = "Orders", "billing", "audit", "shipper"
"""A topic, two consumer groups and a producer group."""


def grp(name: str) -> str:
    return "%RETRY%" + name


def send_v1(topic: str = T, sys_flag: int = 0, **extra: object) -> dict[str, object]:
    return {
        "producerGroup": PG,
        "topic": topic,
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": 4,
        "queueId": 0,
        "sysFlag": sys_flag,
        "bornTimestamp": 1,
        "flag": 0,
        "properties": "",
        **extra,
    }


def send_v2(topic: str = T, sys_flag: int = 0, **extra: object) -> dict[str, object]:
    return {
        "a": PG,
        "b": topic,
        "c": "TBW102",
        "d": 4,
        "e": 0,
        "f": sys_flag,
        "g": 1,
        "h": 0,
        "i": "",
        **extra,
    }


PULL = {
    "consumerGroup": G,
    "topic": T,
    "queueId": 0,
    "queueOffset": 0,
    "maxMsgNums": 32,
    "sysFlag": 4,
    "commitOffset": 0,
    "suspendTimeoutMillis": 0,
    "subVersion": 0,
    "subscription": "*",
    "expressionType": "TAG",
}
LOCK = bodies.LockBatchRequestBody(
    consumer_group=G, client_id="c1", mq_set=[bodies.MessageQueue(T, "broker-a", 0)]
).to_json()


def heartbeat(consumer: str | None = None, producer: str | None = None, topic: str = T) -> bytes:
    return bodies.HeartbeatData(
        client_id="10.0.0.1@1",
        producer_data_set=[bodies.ProducerData(group_name=producer)] if producer else [],
        consumer_data_set=[
            bodies.ConsumerData(
                group_name=consumer, subscription_data_set=(bodies.SubscriptionData.build(topic, "*", 1),)
            )
        ]
        if consumer
        else [],
    ).to_json()


@dataclass(frozen=True)
class Case:
    label: str
    code: int
    ext: dict[str, object]
    needs: dict[str, int]
    body: bytes | None = None

    def command(self) -> RemotingCommand:
        return RemotingCommand.request(self.code, dict(self.ext), self.body)


CASES = [
    # send: V1 long names, V2 letters (on 310, 320, and on 10 without "topic", as the handler reads them)
    Case("send V1", C.SEND_MESSAGE, send_v1(), {T: PUB}),
    Case("send V2 letters under code 10", C.SEND_MESSAGE, send_v2(), {T: PUB}),
    Case("send V2", C.SEND_MESSAGE_V2, send_v2(), {T: PUB}),
    Case("send V2 with the broker name", C.SEND_MESSAGE_V2, send_v2(n="broker-a"), {T: PUB}),
    Case("send batch", C.SEND_BATCH_MESSAGE, send_v2(m="true"), {T: PUB}),
    Case("send V1 into a group's retry topic", C.SEND_MESSAGE, send_v1(grp(G)), {grp(G): SUB}),
    Case("send V2 into a group's retry topic", C.SEND_MESSAGE_V2, send_v2(grp(G)), {grp(G): SUB}),
    Case("send a transactional half message", C.SEND_MESSAGE_V2, send_v2(sys_flag=4), {T: PUB, grp(PG): ANY}),
    Case(
        "recall a timer message (Java's 5.3.2 client)",
        C.RECALL_MESSAGE,
        {"producerGroup": PG, "topic": T, "recallHandle": "djE", "bname": "broker-a"},
        {T: PUB},
    ),
    # pull and consume
    Case("pull", C.PULL_MESSAGE, PULL, {T: SUB, grp(G): SUB}),
    Case("send back", C.CONSUMER_SEND_MSG_BACK, {"offset": 0, "group": G, "delayLevel": 0}, {grp(G): SUB}),
    Case("heartbeat as a consumer", C.HEART_BEAT, {}, {grp(G): SUB, T: SUB}, heartbeat(consumer=G)),
    Case("heartbeat as a producer", C.HEART_BEAT, {}, {grp(PG): ANY}, heartbeat(producer=PG)),
    Case("unregister a consumer", C.UNREGISTER_CLIENT, {"clientID": "c1", "consumerGroup": G}, {grp(G): SUB}),
    Case(
        "unregister a producer", C.UNREGISTER_CLIENT, {"clientID": "c1", "producerGroup": PG}, {grp(PG): ANY}
    ),
    Case("consumer list", C.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": G}, {grp(G): SUB}),
    Case(
        "check client config",
        C.CHECK_CLIENT_CONFIG,
        {},
        {grp(G): SUB, T: SUB},
        bodies.CheckClientRequestBody(
            client_id="c1", group=G, subscription_data=bodies.SubscriptionData.build(T, "a > 1", 1, "SQL92")
        ).to_json(),
    ),
    Case("lock queues", C.LOCK_BATCH_MQ, {}, {grp(G): SUB, T: SUB}, LOCK),
    Case("unlock queues", C.UNLOCK_BATCH_MQ, {}, {grp(G): SUB, T: SUB}, LOCK),
    # a group's offsets
    Case(
        "query offset",
        C.QUERY_CONSUMER_OFFSET,
        {"consumerGroup": G, "topic": T, "queueId": 0},
        {grp(G): SUB, T: SUB},
    ),
    Case(
        "update offset",
        C.UPDATE_CONSUMER_OFFSET,
        {"consumerGroup": G, "topic": T, "queueId": 0, "commitOffset": 5},
        {grp(G): SUB, T: SUB},
    ),
    Case(
        "reset offsets",
        C.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": T, "group": G, "timestamp": -1, "isForce": "true"},
        {grp(G): SUB, T: SUB},
    ),
    Case(
        "clone offsets",
        C.CLONE_GROUP_OFFSET,
        {"srcGroup": G, "destGroup": G2, "topic": T, "offline": "false"},
        {grp(G): SUB, grp(G2): SUB, T: SUB},
    ),
    Case(
        "clone every topic's offsets",
        C.CLONE_GROUP_OFFSET,
        {"srcGroup": G, "destGroup": G2},
        {grp(G): SUB, grp(G2): SUB},
    ),
    Case("consume stats", C.GET_CONSUME_STATS, {"consumerGroup": G, "topic": T}, {grp(G): SUB, T: ANY}),
    Case(
        "consumer status",
        C.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
        {"topic": T, "group": G, "clientAddr": ""},
        {grp(G): SUB, T: ANY},
    ),
    # a group's members
    Case("consumer connections", C.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": G}, {grp(G): SUB}),
    Case("producer connections", C.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": PG}, {grp(PG): ANY}),
    Case(
        "consumer running info",
        C.GET_CONSUMER_RUNNING_INFO,
        {"consumerGroup": G, "clientId": "c1", "jstackEnable": "false"},
        {grp(G): SUB},
    ),
    Case(
        "consume directly",
        C.CONSUME_MESSAGE_DIRECTLY,
        {"consumerGroup": G, "clientId": "c1", "msgId": "X", "brokerName": "broker-a"},
        {grp(G): SUB},
    ),
    # a topic's queues and statistics
    Case("max offset", C.GET_MAX_OFFSET, {"topic": T, "queueId": 0}, {T: ANY}),
    Case("min offset", C.GET_MIN_OFFSET, {"topic": T, "queueId": 0}, {T: ANY}),
    Case("earliest store time", C.GET_EARLIEST_MSG_STORETIME, {"topic": T, "queueId": 0}, {T: ANY}),
    Case(
        "offset by time", C.SEARCH_OFFSET_BY_TIMESTAMP, {"topic": T, "queueId": 0, "timestamp": 1}, {T: ANY}
    ),
    Case("topic stats", C.GET_TOPIC_STATS_INFO, {"topic": T}, {T: ANY}),
    Case("who consumes a topic", C.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": T}, {T: ANY}),
    Case(
        "a topic's traffic",
        C.VIEW_BROKER_STATS_DATA,
        {"statsName": "TOPIC_PUT_NUMS", "statsKey": T},
        {T: ANY},
    ),
    Case(
        "a group's traffic",
        C.VIEW_BROKER_STATS_DATA,
        {"statsName": "GROUP_GET_NUMS", "statsKey": f"{T}@{G}"},
        {T: ANY, grp(G): SUB},
    ),
    # transactions, bodies by key
    Case(
        "end a transaction",
        C.END_TRANSACTION,
        {
            "producerGroup": PG,
            "tranStateTableOffset": 0,
            "commitLogOffset": 0,
            "commitOrRollback": 8,
            "msgId": "X",
            "fromTransactionCheck": "true",
        },
        {grp(PG): ANY},
    ),
    Case(
        "query by key",
        C.QUERY_MESSAGE,
        {"topic": T, "key": "k", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 1},
        {T: SUB},
    ),
    Case(
        "query by unique key",
        C.QUERY_MESSAGE,
        {
            "topic": T,
            "key": "k",
            "maxNum": 32,
            "beginTimestamp": 0,
            "endTimestamp": 1,
            "_UNIQUE_KEY_QUERY": "true",
        },
        {T: SUB},
    ),
]


def _perm_text(perm: int) -> str:
    return {PUB: "PUB", SUB: "SUB", ANY: "PUB", PUB | SUB: "PUB|SUB"}[perm]


def account(name: str, owned: dict[str, int]) -> dict[str, object]:
    """An account holding exactly ``owned`` (resource → PUB/SUB/DENY), everything else DENY."""
    topics = [
        f"{r}={_perm_text(p) if p != 1 else 'DENY'}" for r, p in owned.items() if not r.startswith("%RETRY%")
    ]
    groups = [
        f"{r[7:]}={_perm_text(p) if p != 1 else 'DENY'}" for r, p in owned.items() if r.startswith("%RETRY%")
    ]
    return {
        "accessKey": name,
        "secretKey": name + "-secret",
        "defaultTopicPerm": "DENY",
        "defaultGroupPerm": "DENY",
        "topicPerms": topics,
        "groupPerms": groups,
    }


def judge(case: Case, owned: dict[str, int]) -> str | None:
    validator = AclValidator(parse_plain_acl({"accounts": [account("caller1", owned)]}))
    cmd = case.command()
    sign(cmd, "caller1", "caller1-secret")
    return validator.refusal(cmd, "127.0.0.1")


def test_every_rule_with_needs_is_walked():
    assert {c.code for c in CASES} == {code for code, rule in BROKER_RULES.items() if rule.needs is not None}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_the_table_reads_what_the_handler_reads(case):
    assert needs(case.command()) == case.needs


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_holding_every_right_a_request_needs_lets_it_in(case):
    assert judge(case, case.needs) is None


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_lacking_any_one_right_refuses_the_request(case):
    for resource, perm in case.needs.items():
        denied = {**case.needs, resource: 1}  # DENY
        assert judge(case, denied) == f"No default permission for {describe(resource)}", resource
        if perm in (PUB, SUB):
            other = {**case.needs, resource: PUB if perm == SUB else SUB}
            assert judge(case, other) == f"No default permission for {describe(resource)}", resource


def test_an_account_without_any_right_is_refused_every_request_that_names_something():
    nobody = AclValidator(parse_plain_acl({"accounts": [account("nobody1", {})]}))
    for case in CASES:
        cmd = case.command()
        sign(cmd, "nobody1", "nobody1-secret")
        assert nobody.refusal(cmd, "127.0.0.1") is not None, case.label


def test_the_v2_spelling_under_code_10_is_judged_by_its_topic_not_the_default():
    """The old bypass: letters under SEND_MESSAGE were read for ``topic`` (absent: the default
    permission), while the handler stored into ``b``."""
    acl = parse_plain_acl(
        {
            "accounts": [
                {
                    "accessKey": "alice01",
                    "secretKey": "alice-secret",
                    "defaultTopicPerm": "PUB",
                    "topicPerms": [f"{T}=DENY"],
                }
            ]
        }
    )
    cmd = RemotingCommand.request(C.SEND_MESSAGE, send_v2(), b"x")
    sign(cmd, "alice01", "alice-secret")
    assert AclValidator(acl).refusal(cmd, "127.0.0.1") == f"No default permission for topic:{T}"
    assert SendMessageRequestHeader.from_command(cmd).topic == T  # what the handler stores into


def test_no_default_permission_covers_the_topics_holding_other_topics_messages():
    """Pulling SCHEDULE_TOPIC_XXXX would read every topic's delayed messages, the half topic every
    uncommitted one: only an explicit grant or an admin account reads them."""
    acl = parse_plain_acl(
        {
            "accounts": [
                {
                    "accessKey": "reader01",
                    "secretKey": "reader-secret",
                    "defaultTopicPerm": "SUB",
                    "defaultGroupPerm": "SUB",
                },
                {
                    "accessKey": "granted1",
                    "secretKey": "granted-secret",
                    "defaultGroupPerm": "SUB",
                    "topicPerms": ["SCHEDULE_TOPIC_XXXX=SUB", "RMQ_SYS_TRANS_HALF_TOPIC=SUB"],
                },
                {"accessKey": "rootadmin", "secretKey": "rootadmin-secret", "admin": True},
            ]
        }
    )
    for topic in ("SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC"):
        for who, why in (("reader01", f"No default permission for topic:{topic}"), ("granted1", None),
                         ("rootadmin", None)):
            cmd = RemotingCommand.request(C.PULL_MESSAGE, {**PULL, "topic": topic})
            sign(
                cmd,
                who,
                {"reader01": "reader-secret", "granted1": "granted-secret"}.get(who, "rootadmin-secret"),
            )
            assert AclValidator(acl).refusal(cmd, "127.0.0.1") == why, (topic, who)


def test_a_producer_group_needs_any_right_but_the_java_clients_inner_producer_none():
    assert needs(RemotingCommand.request(C.HEART_BEAT, {}, heartbeat(producer="CLIENT_INNER_PRODUCER"))) == {}
    inner = {"clientID": "c1", "producerGroup": "CLIENT_INNER_PRODUCER"}
    assert needs(RemotingCommand.request(C.UNREGISTER_CLIENT, inner)) == {}
    both = Case("heartbeat", C.HEART_BEAT, {}, {}, heartbeat(consumer=G, producer=PG))
    assert judge(both, {grp(G): SUB, T: SUB, grp(PG): SUB}) is None  # SUB on a producer group will do
    assert judge(both, {grp(G): SUB, T: SUB}) == f"No default permission for group:{PG}"


@pytest.mark.parametrize(("code", "ext", "body", "words"), [
    (C.PULL_MESSAGE, {k: v for k, v in PULL.items() if k != "queueId"}, None, "'queueId' is missing"),
    (C.SEND_MESSAGE_V2, send_v2(e="zero"), None, "is not an integer"),
    (C.HEART_BEAT, {}, b"not json", "cannot read request code 34"),
    (C.LOCK_BATCH_MQ, {}, b"[1, 2]", "cannot read request code 41"),
])
def test_a_request_its_handler_would_not_read_is_refused_with_the_reason(code, ext, body, words):
    with pytest.raises(RequestRefused, match=words):
        needs(RemotingCommand.request(code, ext, body))
    cmd = RemotingCommand.request(code, ext, body)
    sign(cmd, "rootadmin", "rootadmin-secret")
    admin = AclValidator(
        parse_plain_acl(
            {"accounts": [{"accessKey": "rootadmin", "secretKey": "rootadmin-secret", "admin": True}]}
        )
    )
    why = admin.refusal(cmd, "127.0.0.1")
    assert (
        why is not None
        and why.startswith(f"cannot read request code {int(code)}")
        and words.strip("'") in why
    )


# -- fields: a signed request replayed under another code ---------------------------------------
ROOT = AclValidator(parse_plain_acl({"accounts": [{"accessKey": "rootadmin", "secretKey": "rootadmin-secret",
                                                   "admin": True}]}))


def by_root(code: int, ext: dict[str, object], body: bytes | None = None) -> str | None:
    cmd = RemotingCommand.request(code, ext, body)
    sign(cmd, "rootadmin", "rootadmin-secret")
    return ROOT.refusal(cmd, "127.0.0.1")


@pytest.mark.parametrize("code", sorted(BROKER_RULES))
def test_a_field_the_code_does_not_take_is_refused_by_name_even_for_an_admin(code):
    assert by_root(code, {"zz": "1"}) == f"request code {code} takes no field 'zz'"


def test_a_captured_request_replayed_under_another_code_is_refused():
    pull = RemotingCommand.request(C.PULL_MESSAGE, PULL)
    sign(pull, "rootadmin", "rootadmin-secret")
    assert ROOT.refusal(pull, "127.0.0.1") is None
    pull.code = C.UPDATE_CONSUMER_OFFSET  # same fields, same signature: it would move the group's offset
    assert ROOT.refusal(pull, "127.0.0.1") == "request code 15 takes no field 'expressionType'"
    mixed = {**send_v1(), "b": "Other"}  # a V1 send with a letter the handler does not read
    assert by_root(C.SEND_MESSAGE, mixed) == "request code 10 takes no field 'b'"


# What real clients send: Java 4.9.8's header fields per code (``javap`` of rocketmq-common 4.9.8;
# RpcRequestHeader adds ``bname``; a lite pull consumer's StreamTypeRPCHook adds ``ReqT`` to every
# request), and our client's own requests.
JAVA_4_9_8_FIELDS: dict[int, set[str]] = {
    C.SEND_MESSAGE: {"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
                     "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "batch",
                     "maxReconsumeTimes", "bname"},
    C.SEND_MESSAGE_V2: set("abcdefghijklmn") | {"bname"},
    C.SEND_BATCH_MESSAGE: set("abcdefghijklmn") | {"bname"},
    C.PULL_MESSAGE: set(PULL) | {"bname"},
    C.QUERY_CONSUMER_OFFSET: {"consumerGroup", "topic", "queueId", "bname"},
    C.UPDATE_CONSUMER_OFFSET: {"consumerGroup", "topic", "queueId", "commitOffset", "bname"},
    C.GET_MAX_OFFSET: {"topic", "queueId", "bname"},
    C.GET_MIN_OFFSET: {"topic", "queueId", "bname"},
    C.GET_EARLIEST_MSG_STORETIME: {"topic", "queueId", "bname"},
    C.SEARCH_OFFSET_BY_TIMESTAMP: {"topic", "queueId", "timestamp", "bname"},
    C.CONSUMER_SEND_MSG_BACK: {"offset", "group", "delayLevel", "originMsgId", "originTopic", "unitMode",
                               "maxReconsumeTimes", "bname"},
    C.END_TRANSACTION: {"producerGroup", "tranStateTableOffset", "commitLogOffset", "commitOrRollback",
                        "fromTransactionCheck", "msgId", "transactionId", "bname"},
    C.UNREGISTER_CLIENT: {"clientID", "producerGroup", "consumerGroup"},
    C.GET_CONSUMER_LIST_BY_GROUP: {"consumerGroup"},
    C.QUERY_MESSAGE: {"topic", "key", "maxNum", "beginTimestamp", "endTimestamp", "_UNIQUE_KEY_QUERY"},
    C.VIEW_MESSAGE_BY_ID: {"offset"},
    C.UPDATE_AND_CREATE_TOPIC: {"topic", "defaultTopic", "readQueueNums", "writeQueueNums", "perm",
                                "topicFilterType", "topicSysFlag", "order"},
    C.DELETE_TOPIC_IN_BROKER: {"topic"},
    C.DELETE_SUBSCRIPTIONGROUP: {"groupName", "removeOffset"},
    C.GET_TOPIC_STATS_INFO: {"topic"},
    C.GET_CONSUME_STATS: {"consumerGroup", "topic"},
    C.GET_CONSUMER_CONNECTION_LIST: {"consumerGroup"},
    C.GET_PRODUCER_CONNECTION_LIST: {"producerGroup"},
    C.INVOKE_BROKER_TO_RESET_OFFSET: {"topic", "group", "timestamp", "isForce"},
    C.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: {"topic", "group", "clientAddr"},
    C.QUERY_TOPIC_CONSUME_BY_WHO: {"topic"},
    C.GET_CONSUMER_RUNNING_INFO: {"consumerGroup", "clientId", "jstackEnable"},
    C.CONSUME_MESSAGE_DIRECTLY: {"consumerGroup", "clientId", "msgId", "brokerName"},
    C.CLONE_GROUP_OFFSET: {"srcGroup", "destGroup", "topic", "offline"},
    C.VIEW_BROKER_STATS_DATA: {"statsName", "statsKey"},
}
"""Codes not listed carry no header from a Java client (HEART_BEAT, LOCK_BATCH_MQ, the config reads…)."""


@pytest.mark.parametrize("code", sorted(BROKER_RULES))
def test_every_field_the_java_client_sends_is_taken(code):
    fields = JAVA_4_9_8_FIELDS.get(code, set()) | {"AccessKey", "Signature", "SecurityToken", "ReqT"}
    cmd = RemotingCommand.request(code, {k: "1" for k in fields})
    assert BROKER_RULES[code].stray_field(cmd) is None


def test_our_clients_requests_fit_their_codes():
    from pyrocketmq.client.pulling import build_pull_header, parse_expression
    from pyrocketmq.client.send_payload import Payload, build_send_header

    mq = bodies.MessageQueue(T, "broker-a", 1)
    send = build_send_header(Payload(T, b"x", 0, "", 0, False, "ID"), group=PG, queue=mq, born_timestamp=1)
    batch = build_send_header(Payload(T, b"x", 0, "", 0, True, "ID"), group=PG, queue=mq, born_timestamp=1)
    lite = build_pull_header(
        group=G, mq=mq, offset=0, max_nums=32, subscription=parse_expression("*"), suspend_ms=0, sub_version=1
    )
    push = PullMessageRequestHeader(G, T, 0, 0, 32, 4, 0, 0, 0, "*", "TAG").to_ext()
    for code, ext in ((C.SEND_MESSAGE_V2, send), (C.SEND_BATCH_MESSAGE, batch), (C.PULL_MESSAGE, lite),
                      (C.PULL_MESSAGE, push)):
        assert BROKER_RULES[code].stray_field(RemotingCommand.request(code, ext)) is None, code


def test_heart_beating_as_a_topics_5x_publishers_needs_pub_on_that_topic():
    # %GRPC%<topic> is where the 5.x endpoint sends that topic's transaction check-backs: a 4.x
    # client joining it must be allowed to publish the topic, whatever the group defaults say.
    cmd = RemotingCommand.request(C.HEART_BEAT, {}, heartbeat(producer="%GRPC%" + T))
    assert needs(cmd) == {T: PUB}
    case = Case("heartbeat as a 5.x publisher", C.HEART_BEAT, {}, {T: PUB}, heartbeat(producer="%GRPC%" + T))
    assert judge(case, {T: SUB}) == f"No default permission for topic:{T}"
    assert judge(case, {T: PUB}) is None
