"""ACL 2.0 at run time without a socket: the signature checked against the user's password, a
disabled or unknown user refused, each request judged on Apache 5.3's resources and actions, super
users let through, the refusal in Apache 5.3's form (NO_PERMISSION)."""

from __future__ import annotations

import pytest

from pyrocketmq.remoting.acl_sign import sign
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.server.acl2 import (
    Acl,
    Action,
    Resource,
    User,
    UserStatus,
    UserType,
    acl_from_info,
)
from pyrocketmq.server.acl_service import USER, UserAccess, acl_refusal
from pyrocketmq.server.acl_table import BROKER_RULES, acl2_asks
from tests.integration import wire

USERS = {
    "root": User("root", "root-pass", UserType.SUPER),
    "alice": User("alice", "alice-pass"),
    "eve": User("eve", "eve-pass", user_status=UserStatus.DISABLE),
}
ACLS: dict[str, Acl] = {
    "alice": acl_from_info({"subject": "User:alice", "policies": [{"entries": [
        {"resource": "Topic:orders", "actions": ["Pub"], "decision": "Allow"},
        {"resource": "Topic:ord*", "actions": ["Pub", "Sub"], "decision": "Deny"},
        {"resource": "Topic:pay*", "actions": ["Pub", "Sub", "Get"], "decision": "Allow"},
        {"resource": "Group:cg", "actions": ["Sub"], "decision": "Allow"},
        {"resource": "Topic:lab", "actions": ["All"], "sourceIps": ["10.0.0.0/8"], "decision": "Allow"},
    ]}]}),
    "eve": acl_from_info({"subject": "User:eve", "policies": [{"entries": [
        {"resource": "*", "actions": ["All"], "decision": "Allow"}]}]}),
}


def _pull(topic: str, group: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": group, "topic": topic, "queueId": 0, "queueOffset": 0, "maxMsgNums": 32,
        "sysFlag": 0, "commitOffset": 0, "suspendTimeoutMillis": 0, "subVersion": 0})


def _conn(ip: str = "127.0.0.1"):
    return type("C", (), {"remote_addr": f"{ip}:5000", "attrs": {}})()


def _access(**kw) -> UserAccess:
    opts = {"cluster": "DefaultCluster", "authentication": True, "authorization": True, **kw}
    return UserAccess(USERS.get, ACLS.get, **opts)


def _as(cmd: RemotingCommand, user: str, password: str | None = None) -> RemotingCommand:
    sign(cmd, user, password or USERS[user].password)
    return cmd


def _refusal(access: UserAccess, cmd: RemotingCommand, ip: str = "127.0.0.1") -> str | None:
    answer = access.check(_conn(ip), cmd)
    if answer is None:
        return None
    assert answer.code == ResponseCode.NO_PERMISSION
    return answer.remark


@pytest.mark.parametrize(("cmd", "why"), [
    (wire.send_v2("orders", b"x"), "username cannot be null."),
    (_as(wire.send_v2("orders", b"x"), "alice", "wrong-pass"), "check signature failed."),
    (_as(wire.send_v2("orders", b"x"), "mallory", "p"), "User:mallory is not found."),
    (_as(wire.send_v2("orders", b"x"), "eve"), "User:eve is disabled."),
])
def test_authentication_refuses_what_a_user_did_not_sign(cmd, why):
    assert _refusal(_access(), cmd) == why


def test_a_tampered_request_fails_the_signature():
    cmd = _as(wire.send_v2("orders", b"x"), "alice")
    cmd.ext_fields["b"] = "payments"
    assert _refusal(_access(authorization=False), cmd) == "check signature failed."


def test_sends_are_judged_by_the_acl_the_most_specific_entry_deciding():
    access = _access()
    assert _refusal(access, _as(wire.send_v2("orders", b"x"), "alice")) is None  # literal Allow
    why = _refusal(access, _as(wire.send_v2("ordinary", b"x"), "alice"))  # prefix Deny
    assert why == ("User:alice has no permission to access Topic:ordinary from 127.0.0.1, "
                   "the decision is deny.")
    assert _refusal(access, _as(wire.send_v2("payments", b"x"), "alice")) is None  # prefix Allow
    why = _refusal(access, _as(wire.send_v2("other", b"x"), "alice"))
    assert why is not None and why.endswith("no matched policies.")
    assert _refusal(access, _as(wire.send_v2("other", b"x"), "root")) is None  # super user


def test_source_ips_and_the_authorization_only_mode():
    access = _access()
    assert _refusal(access, _as(wire.send_v2("lab", b"x"), "alice"), "10.2.3.4") is None
    assert _refusal(access, _as(wire.send_v2("lab", b"x"), "alice"), "192.168.1.1") is not None
    # authorization without authentication: the AccessKey names the user, unverified (as Apache)
    loose = _access(authentication=False)
    assert _refusal(loose, _as(wire.send_v2("orders", b"x"), "alice", "not-checked")) is None
    assert _refusal(loose, wire.send_v2("orders", b"x")) == (
        "Authorization failed: the request names no user (AccessKey).")


def test_pulls_need_sub_on_topic_and_group():
    access = _access()
    assert _refusal(access, _as(_pull("payments", "cg"), "alice")) is None
    why = _refusal(access, _as(_pull("payments", "other-group"), "alice"))
    assert why is not None and "Group:other-group" in why
    assert "Topic:orders" in (_refusal(access, _as(_pull("orders", "cg"), "alice")) or "")


@pytest.mark.parametrize(("cmd", "asks"), [
    (wire.send_v2("orders", b"x"), [(Resource.topic("orders"), (Action.PUB,))]),
    (wire.send_v2("%RETRY%cg", b"x"), [(Resource.group("cg"), (Action.SUB,))]),
    (RemotingCommand.request(RequestCode.RECALL_MESSAGE, {"topic": "orders", "recallHandle": "h"}),
     [(Resource.topic("orders"), (Action.PUB,))]),
    (_pull("t", "cg"), [(Resource.topic("t"), (Action.SUB,)), (Resource.group("cg"), (Action.SUB,))]),
    (wire.create_topic("t"), [(Resource.topic("t"), (Action.CREATE,))]),
    (RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "cg", "topic": "t",
                                                                 "queueId": 0}),
     [(Resource.group("cg"), (Action.SUB, Action.GET)), (Resource.topic("t"), (Action.SUB, Action.GET))]),
    (RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "t", "queueId": 0}),
     [(Resource.topic("t"), (Action.GET,))]),
    (RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "t"}),
     [(Resource.topic("t"), (Action.DELETE,))]),
    (RemotingCommand.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "cg"}),
     [(Resource.group("cg"), (Action.DELETE,))]),
    (RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, body=b"a=b"),
     [(Resource.cluster("DefaultCluster"), (Action.UPDATE,))]),
    (RemotingCommand.request(RequestCode.AUTH_GET_USER, {"username": "x"}),
     [(Resource.cluster("DefaultCluster"), (Action.GET,))]),
    (RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG), []),
])
def test_requests_map_to_apaches_resources_and_actions(cmd, asks):
    assert acl2_asks(BROKER_RULES, cmd, "DefaultCluster") == asks


def test_a_handler_asks_again_once_it_found_the_topic():
    access = _access()
    conn = _conn()
    view = _as(RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": 0}), "alice")
    assert access.check(conn, view) is None and conn.attrs[USER].username == "alice"
    assert acl_refusal(conn, view, {"payments": 4 | 8}) is None  # SUB: Get on the topic for this code
    refused = acl_refusal(conn, view, {"orders": 8})
    assert refused is not None and refused.code == ResponseCode.NO_PERMISSION


def test_whitelisted_codes_skip_their_check():
    access = _access(authentication_whitelist=frozenset({RequestCode.SEND_MESSAGE_V2}),
                     authorization_whitelist=frozenset({RequestCode.SEND_MESSAGE_V2}))
    assert _refusal(access, wire.send_v2("anything", b"x")) is None


def test_only_super_users_count_as_super_callers():
    access = _access(authorization=False)  # the AUTH_* handler's own test, past authentication
    for user, expected in (("root", True), ("alice", False)):
        conn = _conn()
        assert access.check(conn, _as(RemotingCommand.request(RequestCode.AUTH_LIST_USER), user)) is None
        assert access.is_super_caller(conn) is expected
    assert not access.is_super_caller(_conn())  # no request let in yet
    assert _access(authentication=False).is_super_caller(_conn())  # nobody is known: anyone
    why = _refusal(_access(), _as(RemotingCommand.request(RequestCode.AUTH_LIST_USER), "alice"))
    assert why == ("User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, "
                   "no matched policies.")
