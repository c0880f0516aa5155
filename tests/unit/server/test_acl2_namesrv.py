"""ACL 2.0 at the name server without a socket: each request mapped to Apache 5.3's resources and
actions by the name server's table (a grid), the decision for normal and super users, ACL 1.0 and
2.0 chained, the settings read as the broker reads them, and the servers' own requests signed with
``innerClientAuthenticationCredentials`` before ACL 1.0's keys."""

from __future__ import annotations

import pytest

from pyrocketmq.remoting.acl_sign import ACCESS_KEY, sign
from pyrocketmq.remoting.code import RequestCode as C, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.properties import ConfigError
from pyrocketmq.server.acl2 import Acl, User, UserType, acl_from_info
from pyrocketmq.server.acl_namesrv_table import NAMESRV_ADMIN_CODES, NAMESRV_RULES, namesrv_needs
from pyrocketmq.server.acl_service import AccessControl, UserAccess, chained
from pyrocketmq.server.acl_table import acl2_asks
from pyrocketmq.server.auth_settings import AuthSettings, outgoing_account

BROKER = {"brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911", "clusterName": "DefaultCluster",
          "brokerId": 0}
GRID: list[tuple[int, dict[str, object], list[tuple[str, list[str]]]]] = [
    (C.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders"}, [("Topic:Orders", ["Pub", "Sub"])]),
    (C.GET_ROUTEINFO_BY_TOPIC, {"topic": "%RETRY%cg"}, [("Group:cg", ["Sub"])]),  # a consumer's retry topic
    (C.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}, []),  # the auto-create template asks nothing
    (C.REGISTER_BROKER, {**BROKER, "haServerAddr": "10.0.0.1:10912"},
     [("Cluster:DefaultCluster", ["Update"])]),
    (C.UNREGISTER_BROKER, BROKER, [("Cluster:DefaultCluster", ["Update"])]),
    (C.QUERY_DATA_VERSION, BROKER, [("Cluster:DefaultCluster", ["Update"])]),
    (C.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}, [("Cluster:*", ["Update"])]),
    (C.PUT_KV_CONFIG, {"namespace": "N", "key": "k", "value": "v"}, [("Cluster:*", ["Update"])]),
    (C.DELETE_KV_CONFIG, {"namespace": "N", "key": "k"}, [("Cluster:*", ["Update"])]),
    (C.DELETE_TOPIC_IN_NAMESRV, {"topic": "Orders"}, [("Topic:Orders", ["Delete"])]),
    (C.GET_BROKER_CLUSTER_INFO, {}, [("Cluster:*", ["Get"])]),
    (C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}, [("Cluster:*", ["List"])]),
    (C.GET_SYSTEM_TOPIC_LIST_FROM_NS, {}, [("Cluster:*", ["List"])]),
    (C.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"}, [("Cluster:DefaultCluster", ["List"])]),
    (C.GET_KV_CONFIG, {"namespace": "N", "key": "k"}, [("Cluster:*", ["Get"])]),
    (C.GET_KVLIST_BY_NAMESPACE, {"namespace": "N"}, [("Cluster:*", ["Get"])]),
    (C.CONTROLLER_ELECT_MASTER, {}, [("Cluster:*", ["Update"])]),
    (C.CONTROLLER_GET_METADATA_INFO, {}, [("Cluster:*", ["Get"])]),
    (C.AUTH_CREATE_USER, {"username": "bob"}, [("Cluster:*", ["Update"])]),
    (C.AUTH_LIST_ACL, {}, [("Cluster:*", ["Get"])]),
]


@pytest.mark.parametrize(("code", "fields", "asks"), GRID)
def test_each_request_asks_apaches_resource_and_actions(code, fields, asks):
    got = acl2_asks(NAMESRV_RULES, RemotingCommand.request(code, fields), "")
    assert [(r.key, [a.value for a in acts]) for r, acts in got] == asks


def test_every_code_of_the_table_asks_something_of_acl2():
    silent = {code for code, rule in NAMESRV_RULES.items()
              if not rule.acts.cluster and rule.acts.names is None}
    assert silent == set()


USERS = {
    "root": User("root", "root-pass", UserType.SUPER),
    "inner": User("inner", "inner-pass", UserType.SUPER),
    "alice": User("alice", "alice-pass"),
    "ops": User("ops", "ops-pass"),
    "carol01": User("carol01", "carol-pass"),
}
ACLS: dict[str, Acl] = {
    "alice": acl_from_info({"subject": "User:alice", "policies": [{"entries": [
        {"resource": "Topic:Orders", "actions": ["Sub"], "decision": "Allow"},
        {"resource": "Group:cg", "actions": ["Sub"], "decision": "Allow"},
        {"resource": "Cluster:DefaultCluster", "actions": ["Get", "List"], "decision": "Allow"},
    ]}]}),
    "carol01": acl_from_info({"subject": "User:carol01", "policies": [{"entries": [
        {"resource": "Topic:*", "actions": ["Sub"], "decision": "Allow"}]}]}),
    "ops": acl_from_info({"subject": "User:ops", "policies": [{"entries": [
        {"resource": "Cluster:*", "actions": ["Update", "Get"], "decision": "Allow"},
    ]}]}),
}


def _conn():
    return type("C", (), {"remote_addr": "127.0.0.1:5000", "attrs": {}})()


def _access(authorization: bool = True, authentication_whitelist: frozenset[int] = frozenset(),
            authorization_whitelist: frozenset[int] = frozenset()) -> UserAccess:
    return UserAccess(USERS.get, ACLS.get, cluster="", authentication=True, authorization=authorization,
                      authentication_whitelist=authentication_whitelist,
                      authorization_whitelist=authorization_whitelist, rules=NAMESRV_RULES)


def _by(access: UserAccess, who: str | None, code: int, fields: dict[str, object]) -> str | None:
    cmd = RemotingCommand.request(code, dict(fields))
    if who is not None:
        sign(cmd, who, USERS[who].password)
    refused = access.check(_conn(), cmd)
    if refused is None:
        return None
    assert refused.code == ResponseCode.NO_PERMISSION
    return refused.remark


REGISTER = {**BROKER, "haServerAddr": "10.0.0.1:10912"}


@pytest.mark.parametrize(("who", "code", "fields", "why"), [
    ("alice", C.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders"}, None),
    ("alice", C.GET_ROUTEINFO_BY_TOPIC, {"topic": "%RETRY%cg"}, None),
    ("alice", C.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}, None),
    ("alice", C.GET_ROUTEINFO_BY_TOPIC, {"topic": "Secret"},
     "User:alice has no permission to access Topic:Secret from 127.0.0.1, no matched policies."),
    ("alice", C.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"}, None),
    ("alice", C.GET_BROKER_CLUSTER_INFO, {},  # every cluster: Cluster:DefaultCluster does not cover it
     "User:alice has no permission to access Cluster:* from 127.0.0.1, no matched policies."),
    ("alice", C.REGISTER_BROKER, REGISTER,
     "User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."),
    ("ops", C.REGISTER_BROKER, REGISTER, None),  # Cluster:* covers every cluster
    ("ops", C.GET_BROKER_CLUSTER_INFO, {}, None),
    ("ops", C.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders"},
     "User:ops has no permission to access Topic:Orders from 127.0.0.1, no matched policies."),
    ("inner", C.REGISTER_BROKER, REGISTER, None),  # a broker's inner credentials: a super user
    ("root", C.DELETE_TOPIC_IN_NAMESRV, {"topic": "Orders"}, None),
    (None, C.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders"}, "username cannot be null."),
])
def test_who_gets_what_from_the_name_server(who, code, fields, why):
    assert _by(_access(), who, code, fields) == why


def test_authentication_alone_lets_any_enabled_user_read_every_route():
    access = _access(authorization=False)
    assert _by(access, "alice", C.GET_ROUTEINFO_BY_TOPIC, {"topic": "Secret"}) is None
    assert _by(access, None, C.GET_ROUTEINFO_BY_TOPIC, {"topic": "Secret"}) == "username cannot be null."


def test_a_whitelisted_code_skips_its_check():
    access = _access(authentication_whitelist=frozenset({C.GET_ROUTEINFO_BY_TOPIC}),
                     authorization_whitelist=frozenset({C.GET_ROUTEINFO_BY_TOPIC}))
    assert _by(access, None, C.GET_ROUTEINFO_BY_TOPIC, {"topic": "Secret"}) is None


PLAIN_ACL = """
accounts:
  - accessKey: carol01
    secretKey: carol-pass
    defaultTopicPerm: DENY
    topicPerms: [Orders=SUB]
"""
"""ACL 1.0: carol01 reads Orders only; ACL 2.0 lets her read every topic but no cluster."""


def test_with_acl1_and_acl2_on_a_request_passes_both(tmp_path):
    path = tmp_path / "plain_acl.yml"
    path.write_text(PLAIN_ACL)
    acl1 = AccessControl(str(path), NAMESRV_ADMIN_CODES, namesrv_needs)
    both = chained(acl1.check, _access().check)

    def by_carol(topic: str) -> str | None:
        cmd = RemotingCommand.request(C.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        sign(cmd, "carol01", "carol-pass")
        refused = both(_conn(), cmd)
        return None if refused is None else refused.remark

    assert by_carol("Orders") is None
    assert by_carol("Secret") == "AclException: No default permission for topic:Secret"  # 1.0 refuses
    cluster_info = RemotingCommand.request(C.GET_BROKER_CLUSTER_INFO, {})
    sign(cluster_info, "carol01", "carol-pass")  # 1.0: any account reads it; 2.0: no Cluster:* for her
    refused = both(_conn(), cluster_info)
    assert refused is not None and refused.code == ResponseCode.NO_PERMISSION
    assert refused.remark.startswith("User:carol01 has no permission to access Cluster:*")


# -- settings ---------------------------------------------------------------------------------------
def test_the_name_server_reads_acl2_keys_as_the_broker_does(tmp_path):
    from pyrocketmq.broker.settings import BrokerSettings
    from pyrocketmq.namesrv.settings import NamesrvSettings

    conf = {"authenticationEnabled": "true", "authorizationEnabled": "true",
            "authenticationWhitelist": "34, 11",
            "innerClientAuthenticationCredentials": '{"accessKey": "inner", "secretKey": "inner-pass"}'}
    ns = NamesrvSettings.from_conf({**conf, "kvConfigPath": str(tmp_path / "kv" / "kvConfig.json")})
    assert ns.auth == BrokerSettings.from_conf(conf).auth
    assert ns.auth.authentication_whitelist == {34, 11} and ns.auth_dir == str(tmp_path / "kv")
    assert not ns.extra and "inner-pass" not in repr(ns)
    assert NamesrvSettings.from_conf({"rocketmqHome": "/h"}).auth_dir == "/h/namesrv"
    assert not NamesrvSettings.from_conf({}).auth.enabled and NamesrvSettings.from_conf({}).auth_dir is None


@pytest.mark.parametrize(("conf", "message"), [
    ({"authenticationEnabled": "true"}, "give kvConfigPath or rocketmqHome"),
    ({"authorizationEnabled": "yes", "kvConfigPath": "/k/kv.json"}, "authorizationEnabled='yes'"),
    ({"authorizationWhitelist": "ROUTE"}, "authorizationWhitelist: expected request codes"),
    ({"innerClientAuthenticationCredentials": '{"accessKey": "inner"}'},
     "innerClientAuthenticationCredentials"),
])
def test_bad_acl2_settings_stop_the_name_server(conf, message):
    from pyrocketmq.namesrv.settings import NamesrvSettings

    with pytest.raises(ConfigError, match=message):
        NamesrvSettings.from_conf(conf)


def test_servers_sign_with_the_inner_credentials_before_the_acl1_keys():
    inner = AuthSettings(inner_credentials='{"accessKey": "inner", "secretKey": "inner-pass"}')
    assert outgoing_account(inner, "ak-1.0", "sk-1.0") == ("inner", "inner-pass")
    assert outgoing_account(AuthSettings(), "ak-1.0", "sk-1.0") == ("ak-1.0", "sk-1.0")
    assert outgoing_account(AuthSettings(), "", "") is None


def test_a_broker_registers_signed_by_its_inner_credentials():
    from pyrocketmq.broker.registration import outgoing_client
    from pyrocketmq.broker.settings import BrokerSettings

    settings = BrokerSettings.from_conf({
        "accessKey": "ak-1.0", "secretKey": "sk-1.0-secret",
        "innerClientAuthenticationCredentials": '{"accessKey": "inner", "secretKey": "inner-pass"}'})
    client = outgoing_client(settings)
    assert client.sign is not None
    cmd = RemotingCommand.request(C.REGISTER_BROKER, dict(REGISTER))
    client.sign(cmd)
    assert cmd.ext_fields[ACCESS_KEY] == "inner"
    assert _by(_access(), None, C.REGISTER_BROKER, {}) == "username cannot be null."
    assert _access().check(_conn(), cmd) is None  # signed with the super user's password


def test_a_name_server_with_acl2_serves_the_auth_codes_and_checks_every_request(tmp_path):
    from pyrocketmq.namesrv.app import NameServer
    from pyrocketmq.namesrv.settings import NamesrvSettings

    ns = NameServer(NamesrvSettings.from_conf({
        "kvConfigPath": str(tmp_path / "kvConfig.json"), "authenticationEnabled": "true",
        "authorizationEnabled": "true", "initAuthenticationUser": '{"username": "root", "password": "rp"}'}))
    assert {C.AUTH_CREATE_USER, C.AUTH_LIST_ACL} <= set(ns.server.handlers)
    assert ns.auth_meta is not None and ns.auth_meta.user("root") == User("root", "rp", UserType.SUPER)
    assert (tmp_path / "users.json").exists()
    assert ns.user_access is not None and ns.server.before == ns.user_access.check
    plain = NameServer(NamesrvSettings.from_conf({}))
    assert plain.auth_meta is None and C.AUTH_CREATE_USER not in plain.server.handlers


def test_the_examples_in_the_docstrings_hold():
    import doctest

    from pyrocketmq.server import acl_namesrv_table, auth_settings

    for module in (acl_namesrv_table, auth_settings):
        assert doctest.testmod(module).failed == 0, module.__name__
