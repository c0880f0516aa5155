from __future__ import annotations

import pytest

from pyrocketmq.broker.settings import BrokerRole, BrokerSettings
from pyrocketmq.remoting.properties import ConfigError, read_properties


def test_rocketmq_keys_are_read(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "# a comment\n"
        "brokerClusterName = C1\n"
        "brokerName=broker-b\n"
        "brokerId=0\n"
        "namesrvAddr=10.0.0.1:9876;10.0.0.2:9876\n"
        "listenPort=20911\n"
        "brokerIP1=10.1.1.1\n"
        "storePathRootDir=/data/store\n"
        "flushDiskType=SYNC_FLUSH\n"
        "brokerRole=SYNC_MASTER\n"
        "autoCreateTopicEnable=false\n"
        "mappedFileSizeCommitLog=1048576\n"
        "fileReservedTime=48\n"
        "maxMessageSize=65536\n"
        "someJavaOnlyKey=1\n"
    )
    s = BrokerSettings.from_conf(read_properties(str(conf)))
    assert s.identity.cluster_name == "C1" and s.identity.broker_name == "broker-b"
    assert s.identity.role == BrokerRole.SYNC_MASTER
    assert s.network.namesrv_addrs == ("10.0.0.1:9876", "10.0.0.2:9876")
    assert s.network.listen_port == 20911 and s.addr == "10.1.1.1:20911"
    assert s.topics.auto_create_topic is False
    assert s.store.store_path_root_dir == "/data/store"
    assert s.store.sync_flush
    assert s.store.mapped_file_size_commit_log == 1048576
    assert s.store.retention.file_reserved_time == 48
    assert s.store.max_message_size == 65536
    assert s.extra == {"someJavaOnlyKey": "1"}


@pytest.mark.parametrize(
    "conf, words",
    [
        ({"listenPort": "abc"}, "listenPort"),
        ({"listenPort": "70000"}, "listenPort"),
        ({"brokerRole": "LEADER"}, "brokerRole"),
        ({"brokerRole": "SLAVE", "brokerId": "0"}, "brokerId"),
        ({"autoCreateTopicEnable": "yes"}, "autoCreateTopicEnable"),
        ({"namesrvAddr": "nohostport"}, "namesrvAddr"),
        ({"enableControllerMode": "true"}, "controllerAddr"),
        ({"enableControllerMode": "true", "controllerAddr": "x"}, "controllerAddr"),
        ({"enableControllerMode": "true", "controllerAddr": "h:1", "brokerId": "0"}, "brokerId"),
        (
            {"enableControllerMode": "true", "controllerAddr": "h:1", "brokerId": "1", "brokerRole": "SLAVE"},
            "brokerRole",
        ),
        ({"minInSyncReplicas": "0"}, "minInSyncReplicas"),
    ],
)
def test_bad_values_name_the_key(conf, words):
    with pytest.raises(ConfigError, match=words):
        BrokerSettings.from_conf(conf)


def test_slave_keeps_its_id_and_master_is_zero():
    assert BrokerSettings.from_conf({"brokerRole": "SLAVE", "brokerId": "2"}).identity.broker_id == 2
    assert BrokerSettings.from_conf({"brokerId": "3"}).identity.broker_id == 0


def test_grpc_listen_port():
    from pyrocketmq.broker.settings import BrokerSettings
    from pyrocketmq.remoting.properties import ConfigError

    assert BrokerSettings.from_conf({}).network.grpc_port is None
    assert BrokerSettings.from_conf({"grpcListenPort": "8081"}).network.grpc_port == 8081
    assert BrokerSettings.from_conf({"grpcListenPort": "0"}).network.grpc_port == 0
    for bad in ("x", "70000", "10911", "10912"):
        try:
            BrokerSettings.from_conf({"grpcListenPort": bad})
        except ConfigError as e:
            assert "grpcListenPort" in str(e)
        else:
            raise AssertionError(bad)


def test_controller_mode_starts_as_a_slave_named_by_its_broker_id():
    s = BrokerSettings.from_conf(
        {
            "enableControllerMode": "true",
            "controllerAddr": "h:1;h:2",
            "brokerId": "2",
            "brokerRole": "SYNC_MASTER",
        }
    )
    i = s.identity
    assert (i.role, i.broker_id, i.replica_id, i.master_role) == (
        BrokerRole.SLAVE,
        2,
        2,
        BrokerRole.SYNC_MASTER,
    )
    assert s.controller.addrs == ("h:1", "h:2") and s.controller.heartbeat_interval_ms == 1000


def test_acl2_keys_are_apaches_and_kept_out_of_the_shown_config():
    s = BrokerSettings.from_conf({"authenticationEnabled": "true", "authorizationEnabled": "false",
                                  "initAuthenticationUser": '{"username":"root","password":"p"}',
                                  "authenticationWhitelist": "34, 11"})
    assert s.auth.authentication_enabled and not s.auth.authorization_enabled and s.auth.enabled
    assert s.auth.authentication_whitelist == {34, 11} and s.auth.init_user.startswith('{"username"')
    assert "initAuthenticationUser" not in s.effective and s.effective["authenticationEnabled"] == "true"
    assert not BrokerSettings.from_conf({}).auth.enabled


def test_acl2_covers_the_grpc_endpoint_too():
    s = BrokerSettings.from_conf({"authenticationEnabled": "true", "authorizationEnabled": "true",
                                  "grpcListenPort": "0"})
    assert s.auth.authentication_enabled and s.auth.authorization_enabled and s.network.grpc_port == 0


@pytest.mark.parametrize(("conf", "message"), [
    ({"authorizationWhitelist": "SEND"}, "authorizationWhitelist: expected request codes"),
    ({"authenticationEnabled": "yes"}, "authenticationEnabled='yes'"),
])
def test_bad_acl2_settings_are_refused(conf, message):
    with pytest.raises(ConfigError, match=message):
        BrokerSettings.from_conf(conf)
