"""Probes and the metrics port of rendered name server and broker pods: HTTP health endpoints when
metrics are served, TCP otherwise; the broker's metricsPort is owned by the operator."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.settings import BrokerSettings
from pyrocketmq.namesrv.settings import NamesrvSettings
from pyrocketmq.operator.model import BrokerModel, NameServerModel, SpecError
from pyrocketmq.operator.names import namesrv_addresses
from pyrocketmq.operator.render import broker_conf, render_broker, render_nameserver

from .conftest import SETTINGS, body, conf_dict, one

NS = namesrv_addresses("names", "prod", 1)


def broker_container(**spec):
    model = BrokerModel.from_body(body("Broker", nameServer={"name": "names"}, **spec))
    sts = one(render_broker(model, NS, SETTINGS), "StatefulSet", "orders-0")
    return model, sts["spec"]["template"]["spec"]["containers"][0]


def namesrv_container(**spec):
    model = NameServerModel.from_body(body("NameServer", name="names", **spec))
    return one(render_nameserver(model, SETTINGS), "StatefulSet", "names")["spec"]["template"]["spec"][
        "containers"
    ][0]


@pytest.mark.parametrize("render", [broker_container, namesrv_container])
def test_metrics_on_probes_use_the_health_endpoints(render):
    c = render(metrics={"enabled": True, "port": 9100})
    c = c[1] if isinstance(c, tuple) else c
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert {"name": "metrics", "containerPort": 9100, "protocol": "TCP"} in c["ports"]
    assert {"name": "PYROCKETMQ_METRICS_PORT", "value": "9100"} in c["env"]


@pytest.mark.parametrize("render", [broker_container, namesrv_container])
def test_metrics_off_probes_fall_back_to_tcp(render):
    c = render(metrics={"enabled": False})
    c = c[1] if isinstance(c, tuple) else c
    assert c["readinessProbe"]["tcpSocket"] == {"port": "remoting"}
    assert c["livenessProbe"]["tcpSocket"] == {"port": "remoting"}
    assert all(p["name"] != "metrics" for p in c["ports"])


def test_broker_startup_probe_waits_for_recovery_on_the_remoting_port():
    _, c = broker_container()
    assert (
        c["startupProbe"]["tcpSocket"] == {"port": "remoting"} and c["startupProbe"]["failureThreshold"] == 60
    )


@pytest.mark.parametrize(("metrics", "port"), [({}, 5557), ({"port": 9100}, 9100), ({"enabled": False}, 0)])
def test_broker_conf_owns_the_metrics_port(metrics, port):
    model, _ = broker_container(metrics=metrics)
    conf = conf_dict(broker_conf(model, 0, NS))
    assert conf["metricsPort"] == str(port)
    assert BrokerSettings.from_conf(conf).network.metrics_port == port


def test_metrics_port_cannot_be_set_through_config():
    with pytest.raises(SpecError, match="metricsPort"):
        BrokerModel.from_body(body("Broker", nameServer={"name": "names"}, config={"metricsPort": "1234"}))


def test_namesrv_takes_the_port_from_the_pod_environment(monkeypatch):
    monkeypatch.setenv("PYROCKETMQ_METRICS_PORT", "5557")
    assert NamesrvSettings.from_conf({}).metrics_port == 5557
    assert NamesrvSettings.from_conf({"metricsPort": "0"}).metrics_port == 0
    monkeypatch.delenv("PYROCKETMQ_METRICS_PORT")
    assert NamesrvSettings.from_conf({}).metrics_port == 0
