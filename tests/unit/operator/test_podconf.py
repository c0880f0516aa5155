"""The broker pod entrypoint: brokerId and role from the ordinal, brokerIP1 from the pod IP."""

from __future__ import annotations

import pytest

from pyrocketmq.operator.podconf import PodConfError, main, pod_conf, pod_ordinal, role_for_ordinal

TEMPLATE = """# rendered
brokerClusterName=c
brokerName=orders-0
brokerId=0
brokerRole=SYNC_MASTER
namesrvAddr=n-0.n-headless.p.svc:9876
"""


@pytest.mark.parametrize(
    ("ordinal", "master", "expected"),
    [
        (0, "ASYNC_MASTER", (0, "ASYNC_MASTER")),
        (0, "SYNC_MASTER", (0, "SYNC_MASTER")),
        (1, "ASYNC_MASTER", (1, "SLAVE")),
        (1, "SYNC_MASTER", (1, "SLAVE")),
        (7, "ASYNC_MASTER", (7, "SLAVE")),
    ],
)
def test_role_per_ordinal(ordinal, master, expected):
    assert role_for_ordinal(ordinal, master) == expected


@pytest.mark.parametrize(("name", "ordinal"), [("orders-0-0", 0), ("orders-12-3", 3), ("a-b-c-10", 10)])
def test_ordinal_from_pod_name(name, ordinal):
    assert pod_ordinal(name) == ordinal


@pytest.mark.parametrize("name", ["orders", "orders-x", ""])
def test_pod_names_without_ordinal_are_refused(name):
    with pytest.raises(PodConfError):
        pod_ordinal(name)


def test_master_role_in_template_must_be_a_master():
    with pytest.raises(PodConfError, match="SLAVE"):
        role_for_ordinal(0, "SLAVE")


def test_slave_conf_keeps_everything_else():
    out = pod_conf(TEMPLATE, {"POD_NAME": "orders-0-2", "POD_IP": "10.0.0.7"})
    lines = out.splitlines()
    assert "brokerId=2" in lines and "brokerRole=SLAVE" in lines and "brokerIP1=10.0.0.7" in lines
    assert "brokerId=0" not in lines and "brokerRole=SYNC_MASTER" not in lines
    assert "brokerName=orders-0" in lines and "# rendered" in lines
    assert sum(1 for line in lines if line.startswith("brokerId")) == 1


def test_master_conf():
    lines = pod_conf(TEMPLATE, {"POD_NAME": "orders-0-0", "POD_IP": "10.0.0.8"}).splitlines()
    assert "brokerId=0" in lines and "brokerRole=SYNC_MASTER" in lines and "brokerIP1=10.0.0.8" in lines


@pytest.mark.parametrize(
    ("env", "missing"), [({"POD_IP": "1.2.3.4"}, "POD_NAME"), ({"POD_NAME": "a-0"}, "POD_IP")]
)
def test_missing_downward_api_is_reported(env, missing):
    with pytest.raises(PodConfError, match=missing):
        pod_conf(TEMPLATE, env)


def test_main_prints_the_pod_conf(tmp_path, monkeypatch, capsys):
    template = tmp_path / "broker.conf"
    template.write_text(TEMPLATE)
    monkeypatch.setenv("BROKER_CONF_TEMPLATE", str(template))
    monkeypatch.setenv("POD_NAME", "orders-0-1")
    monkeypatch.setenv("POD_IP", "10.9.9.9")
    assert main(["--print"]) == 0
    assert "brokerRole=SLAVE" in capsys.readouterr().out


def test_main_fails_cleanly_without_a_template(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BROKER_CONF_TEMPLATE", str(tmp_path / "absent.conf"))
    assert main(["--print"]) == 2
    assert "pyrocketmq entrypoint" in capsys.readouterr().err
