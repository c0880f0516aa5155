"""Plain ACL rules without a socket: the file, addresses, signatures and what each request needs.
(``tests/conformance/test_acl.py`` holds the same requests up against Apache's broker.)"""

from __future__ import annotations

import time

import pytest
import yaml

from pyrocketmq.remoting.acl_sign import sign
from pyrocketmq.remoting.body import ConsumerData, HeartbeatData, SubscriptionData
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.server.acl import (
    PUB,
    SUB,
    AclConfigError,
    AclValidator,
    address_matcher,
    check_permission,
    parse_perm,
    parse_plain_acl,
)
from pyrocketmq.server.acl_service import AccessControl
from tests.integration import wire

ACL = {
    "globalWhiteRemoteAddresses": ["10.9.*.*"],
    "accounts": [
        {
            "accessKey": "alice01",
            "secretKey": "alice-secret-key",
            "defaultTopicPerm": "DENY",
            "defaultGroupPerm": "SUB",
            "topicPerms": ["Allowed=PUB|SUB", "ReadOnly=SUB"],
            "groupPerms": ["gdeny=DENY"],
        },
        {"accessKey": "rootadmin", "secretKey": "root-secret-key", "admin": True},
        {"accessKey": "trusted1", "secretKey": "trusted-secret", "whiteRemoteAddress": "192.168.0.{1,2}"},
    ],
}


def signed(cmd: RemotingCommand, ak="alice01", sk="alice-secret-key") -> RemotingCommand:
    sign(cmd, ak, sk)
    return cmd


@pytest.fixture
def validator():
    return AclValidator(parse_plain_acl(ACL))


def heartbeat(group: str, topic: str) -> RemotingCommand:
    data = HeartbeatData(client_id="c", consumer_data_set=[
        ConsumerData(group_name=group, subscription_data_set=(SubscriptionData.build(topic, "*", 1),))])
    return RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.to_json())


@pytest.mark.parametrize(
    ("cmd", "ip", "why"),
    [
        (wire.send_v2("Allowed", b"x"), "127.0.0.1", "No accessKey is configured"),
        (
            RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {}),
            "127.0.0.1",
            "No accessKey is configured",
        ),
        (
            signed(wire.send_v2("Allowed", b"x"), "bobbybob", "whatever"),
            "127.0.0.1",
            "No acl config for bobbybob",
        ),
        (
            signed(wire.send_v2("Allowed", b"x"), "alice01", "not-her-key"),
            "127.0.0.1",
            "Check signature failed for accessKey=alice01",
        ),
        (signed(wire.send_v2("Allowed", b"x")), "127.0.0.1", None),
        (signed(wire.send_v2("ReadOnly", b"x")), "127.0.0.1", "No default permission for topic:ReadOnly"),
        (signed(wire.send_v2("Other", b"x")), "127.0.0.1", "No default permission for topic:Other"),
        (
            signed(wire.create_topic("Zed")),
            "127.0.0.1",
            "Need admin permission for request code=17, but accessKey=alice01 is not",
        ),
        (signed(wire.create_topic("Zed"), "rootadmin", "root-secret-key"), "127.0.0.1", None),
        (
            signed(wire.pull("Allowed", 0, 0, group="gdeny")),
            "127.0.0.1",
            "No default permission for group:gdeny",
        ),
        (signed(wire.pull("Allowed", 0, 0, group="gok")), "127.0.0.1", None),
        (signed(wire.pull("Other", 0, 0, group="gok")), "127.0.0.1", "No default permission for topic:Other"),
        (signed(heartbeat("gok", "Other")), "127.0.0.1", "No default permission for topic:Other"),
        (signed(heartbeat("gok", "Allowed")), "127.0.0.1", None),
        (wire.send_v2("Other", b"x"), "10.9.3.4", None),  # globally white: no check at all
        (
            RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"AccessKey": "trusted1", "b": "Other"}),
            "192.168.0.2",
            None,
        ),
        (
            RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"AccessKey": "trusted1", "b": "Other"}),
            "192.168.0.3",
            "Check signature failed for accessKey=trusted1",
        ),
    ],
)
def test_refusals_in_apaches_words(validator, cmd, ip, why):
    assert validator.refusal(cmd, ip) == why


def test_a_signed_request_changed_in_transit_is_refused(validator):
    cmd = signed(wire.send_v2("Allowed", b"x"))
    cmd.body = b"y"
    assert validator.refusal(cmd, "127.0.0.1") == "Check signature failed for accessKey=alice01"


def test_addresses_and_permissions():
    assert address_matcher("*")("1.2.3.4") and not address_matcher("")("1.2.3.4")
    assert address_matcher("192.168.1.*")("192.168.1.77") and not address_matcher("192.168.1.*")(
        "192.168.2.1"
    )
    assert address_matcher("10.0.0.1-5")("10.0.0.5") and not address_matcher("10.0.0.1-5")("10.0.0.6")
    assert address_matcher("10.0.0.{1,3}")("10.0.0.3") and not address_matcher("10.0.0.{1,3}")("10.0.0.2")
    assert address_matcher("::1")("::1")
    with pytest.raises(AclConfigError, match="remote address"):
        address_matcher("10.0.x.1")
    assert (
        parse_perm("sub|pub") == PUB | SUB
        and check_permission(SUB, PUB | SUB)
        and not check_permission(PUB, SUB)
    )
    assert not check_permission(SUB, parse_perm("DENY"))


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ({"accounts": [{"accessKey": "short", "secretKey": "long-enough"}]}, "longer than 6"),
        (
            {"accounts": [{"accessKey": "alice01", "secretKey": "12345678", "topicPerms": ["T=WRITE"]}]},
            "use DENY, PUB",
        ),
        (
            {"accounts": [{"accessKey": "alice01", "secretKey": "12345678", "topicPerms": ["T"]}]},
            "is not name=PERM",
        ),
        ({"accounts": [{"accessKey": "alice01", "secretKey": "12345678"}] * 2}, "appears twice"),
        (["not", "a", "mapping"], "not a mapping"),
    ],
)
def test_bad_acl_files_say_what_is_wrong(doc, words):
    with pytest.raises(AclConfigError, match=words):
        parse_plain_acl(doc)


def test_the_file_is_reloaded_and_a_broken_edit_keeps_the_rules(tmp_path):
    path = tmp_path / "plain_acl.yml"
    path.write_text(yaml.safe_dump(ACL))
    acl = AccessControl(str(path))
    conn = type("C", (), {"remote_addr": "127.0.0.1:5000", "attrs": {}})()
    other = signed(wire.send_v2("Other", b"x"))
    assert acl.check(conn, other) is not None
    time.sleep(0.01)
    opened = {**ACL, "accounts": [{**ACL["accounts"][0], "defaultTopicPerm": "PUB"}]}
    path.write_text(yaml.safe_dump(opened))
    assert acl.reload_if_changed() and acl.check(conn, signed(wire.send_v2("Other", b"x"))) is None
    time.sleep(0.01)
    path.write_text("accounts: [ {accessKey: x")
    assert not acl.reload_if_changed()
    assert acl.check(conn, signed(wire.send_v2("Other", b"x"))) is None  # the previous rules stay
    refused = acl.check(conn, wire.send_v2("Other", b"x"))
    assert (
        refused is not None
        and refused.code == 1
        and refused.remark == "AclException: No accessKey is configured"
    )


def test_a_broker_signs_its_own_requests_when_given_an_account(validator):
    from pyrocketmq.broker.registration import outgoing_client
    from pyrocketmq.broker.settings import BrokerSettings

    client = outgoing_client(
        BrokerSettings.from_conf({"accessKey": "rootadmin", "secretKey": "root-secret-key"})
    )
    cmd = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {})
    assert client.sign is not None
    client.sign(cmd)
    assert validator.refusal(cmd, "127.0.0.1") is None
    assert outgoing_client(BrokerSettings.from_conf({})).sign is None


def test_the_name_servers_rules_admin_for_changes_a_topic_right_for_its_route():
    from pyrocketmq.server.acl import NAMESRV_ADMIN_CODES, namesrv_needs

    ns = AclValidator(parse_plain_acl(ACL), NAMESRV_ADMIN_CODES, namesrv_needs)
    route = RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Other"}
    )  # alice: topics DENY
    assert ns.refusal(signed(route), "127.0.0.1") == "No default permission for topic:Other"
    cluster = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {})
    assert ns.refusal(signed(cluster), "127.0.0.1") is None  # a read naming no topic: any account
    unsigned = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert ns.refusal(unsigned, "127.0.0.1") == "No accessKey is configured"
    broker = {"brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911", "clusterName": "c", "brokerId": 0}
    for code, ext in (
        (RequestCode.REGISTER_BROKER, {**broker, "haServerAddr": "10.0.0.1:10912"}),
        (RequestCode.UNREGISTER_BROKER, broker),
        (RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T"}),
        (RequestCode.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"}),
        (RequestCode.DELETE_KV_CONFIG, {"namespace": "n", "key": "k"}),
        (RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}),
    ):
        by_alice = signed(RemotingCommand.request(code, ext))
        assert (
            ns.refusal(by_alice, "127.0.0.1")
            == f"Need admin permission for request code={int(code)}, but accessKey=alice01 is not"
        )
        by_admin = signed(RemotingCommand.request(code, ext), "rootadmin", "root-secret-key")
        assert ns.refusal(by_admin, "127.0.0.1") is None
