"""Settings from namesrv.conf, the KV config file, and the CLI's argument handling."""

from __future__ import annotations

import os

import pytest

from pyrocketmq.namesrv.app import main
from pyrocketmq.namesrv.kv_config import KVConfigError, KVConfigManager
from pyrocketmq.namesrv.settings import NamesrvSettings
from pyrocketmq.remoting.properties import ConfigError, read_properties


def test_defaults():
    s = NamesrvSettings()
    assert (s.listen_port, s.host, s.kv_config_path, s.scan_interval_ms, s.broker_expiry_ms) == (
        9876, "0.0.0.0", None, 10_000, 120_000,
    )  # fmt: skip


def test_read_properties_java_syntax(tmp_path):
    path = tmp_path / "namesrv.conf"
    path.write_text(
        "# comment\n! other comment\n\nlistenPort = 9988\nbindAddress:127.0.0.1\nkvConfigPath /x/kv.json\n"
        "long=a\\\n   b\nempty=\n"
    )
    conf = read_properties(str(path))
    assert conf == {
        "listenPort": "9988",
        "bindAddress": "127.0.0.1",
        "kvConfigPath": "/x/kv.json",
        "long": "ab",
        "empty": "",
    }
    s = NamesrvSettings.from_conf(conf)
    assert (s.listen_port, s.host, s.kv_config_path) == (9988, "127.0.0.1", "/x/kv.json")
    assert s.extra == {"long": "ab", "empty": ""}


def test_rocketmq_home_gives_kv_path():
    s = NamesrvSettings.from_conf({"rocketmqHome": "/opt/rmq"})
    assert s.kv_config_path == os.path.join("/opt/rmq", "namesrv", "kvConfig.json")


@pytest.mark.parametrize(
    "conf, message",
    [
        ({"listenPort": "x"}, "listenPort='x': expected an integer"),
        ({"listenPort": "70000"}, "listenPort=70000: expected 0..65535"),
        ({"scanNotActiveBrokerInterval": "1"}, "scanNotActiveBrokerInterval=1"),
        ({"enableControllerInNamesrv": "yes"}, "enableControllerInNamesrv='yes'"),
        ({"controllerPeers": "127.0.0.1:9876"}, "expected id-host:port"),
        ({"controllerPeers": "n0-a:1;n0-b:2"}, "every id must be different"),
        ({"controllerPeers": "n0-a:1;n1-b:2", "controllerSelfId": "n7"}, "not among controllerPeers"),
    ],
)
def test_bad_settings(conf, message):
    with pytest.raises(ConfigError, match=message):
        NamesrvSettings.from_conf(conf)


def test_controller_settings():
    s = NamesrvSettings.from_conf(
        {
            "enableControllerInNamesrv": "true",
            "controllerPeers": "n0-a:1; n1-b:2;n2-c:3",
            "controllerSelfId": "n1",
            "controllerStorePath": "/x/c.json",
        }
    )
    assert s.controller and s.controller_self_id == "n1" and s.controller_store_path == "/x/c.json"
    assert s.controller_peers == (("n0", "a:1"), ("n1", "b:2"), ("n2", "c:3"))
    by_address = NamesrvSettings.from_conf({"controllerPeers": "n0-a:1;n1-b:2", "controllerSelfId": "b:2"})
    assert by_address.controller_self_id == "n1"


def test_load_with_overrides(tmp_path):
    path = tmp_path / "namesrv.conf"
    path.write_text("listenPort=1234\nbindAddress=10.0.0.1\n")
    s = NamesrvSettings.load(str(path), listen_port=0, host=None)
    assert (s.listen_port, s.host) == (0, "10.0.0.1")


def test_kv_config_persists_atomically(tmp_path):
    path = tmp_path / "sub" / "kvConfig.json"
    kv = KVConfigManager(str(path))
    kv.load()  # no file yet: empty
    kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4")
    kv.put("ns", "k", "v")
    assert kv.delete("ns", "k") and not kv.delete("ns", "k")
    again = KVConfigManager(str(path))
    again.load()
    assert again.table == {"ORDER_TOPIC_CONFIG": {"T": "broker-a:4"}}
    assert [p.name for p in path.parent.iterdir()] == ["kvConfig.json"]  # no temp file left behind


def test_kv_config_reads_java_file_and_rejects_garbage(tmp_path):
    path = tmp_path / "kvConfig.json"
    path.write_text('{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"a:1;b:2"}}}')
    kv = KVConfigManager(str(path))
    kv.load()
    assert kv.get("ORDER_TOPIC_CONFIG", "T") == "a:1;b:2"
    assert kv.namespace("nope") is None and kv.namespace_body("nope") is None
    path.write_text("[1,2]")
    with pytest.raises(KVConfigError, match="not a KV config table"):
        KVConfigManager(str(path)).load()


def test_kv_config_in_memory_only():
    kv = KVConfigManager()
    kv.put("a", "b", "c")
    kv.load()
    assert kv.get("a", "b") == "c"


def test_cli_usage_errors_print_usage_not_traceback(capsys, tmp_path):
    assert main(["--bogus"]) == 2
    err = capsys.readouterr().err
    assert "usage: pyrocketmq namesrv" in err and "Traceback" not in err
    assert main(["-c", str(tmp_path / "missing.conf")]) == 2
    assert "config file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.conf"
    bad.write_text("listenPort=abc\n")
    assert main(["-c", str(bad)]) == 2
    assert "listenPort='abc'" in capsys.readouterr().err
    assert main(["--listen-port", "99999"]) == 2
    assert main(["-h"]) == 0


def test_cli_print_config(capsys):
    assert main(["--listen-port", "0", "--host", "127.0.0.1", "-p"]) == 0
    out = capsys.readouterr().out
    assert "listen_port=0" in out and "host='127.0.0.1'" in out


def test_kv_docstring_example():
    import doctest

    from pyrocketmq.namesrv import kv_config

    assert doctest.testmod(kv_config).failed == 0


def test_pyrocketmq_controller_is_a_name_server_with_the_controller(capsys):
    from pyrocketmq.cli import main

    assert main(["controller", "--listen-port", "0", "-p"]) == 0
    assert "controller=True" in capsys.readouterr().out


def test_with_acl2_and_auth_seed_wait_it_is_ready_once_given_its_users(tmp_path, monkeypatch):
    from pyrocketmq.namesrv import app as app_module

    conf = {"authenticationEnabled": "true", "kvConfigPath": str(tmp_path / "kv.json"),
            "authSeedWaitMs": "5000",
            "initAuthenticationUser": '{"username":"root","password":"pw"}'}  # fmt: skip
    server = app_module.NameServer(NamesrvSettings.from_conf(conf))
    server.port = 9876  # serving
    now = [100.0]
    monkeypatch.setattr(app_module.time, "monotonic", lambda: now[0])
    server._started = 100.0
    assert "users" in (server._not_ready() or "")
    server.kv.put(*app_module.AUTH_SEEDED, "true")  # the operator's mark
    assert server._not_ready() is None
    other_kv = {**conf, "kvConfigPath": str(tmp_path / "b.json")}
    fresh = app_module.NameServer(NamesrvSettings.from_conf(other_kv))
    fresh.port, fresh._started = 9876, 100.0
    assert fresh._not_ready() is not None
    now[0] = 106.0  # nobody came within authSeedWaitMs: ready anyway
    assert fresh._not_ready() is None
