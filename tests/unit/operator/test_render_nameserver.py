"""NameServer renderer and the stable DNS names brokers are given."""

from __future__ import annotations

import pytest

from pyrocketmq.operator.model import NameServerModel
from pyrocketmq.operator.names import namesrv_addresses
from pyrocketmq.operator.render import render_nameserver
from pyrocketmq.operator.settings import RenderSettings

from .conftest import body, one

SETTINGS = RenderSettings(default_image="img:default")


def nameserver(**spec):
    return NameServerModel.from_body(body("NameServer", name="names", **spec))


@pytest.mark.parametrize("replicas", [1, 2, 3])
def test_objects_and_replicas(replicas):
    objects = render_nameserver(nameserver(replicas=replicas), SETTINGS)
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objects) == [
        ("PodDisruptionBudget", "names"),
        ("Service", "names"),
        ("Service", "names-headless"),
        ("ServiceAccount", "names-namesrv"),
        ("StatefulSet", "names"),
    ]
    sts = one(objects, "StatefulSet", "names")
    assert sts["spec"]["replicas"] == replicas
    assert sts["spec"]["serviceName"] == "names-headless"
    assert all(o["metadata"]["ownerReferences"][0]["kind"] == "NameServer" for o in objects)


def test_default_replicas_is_two():
    assert one(render_nameserver(nameserver(), SETTINGS), "StatefulSet", "names")["spec"]["replicas"] == 2


@pytest.mark.parametrize(
    ("namespace", "replicas", "domain", "expected"),
    [
        ("prod", 1, "", ["names-0.names-headless.prod.svc:9876"]),
        ("t", 2, "", ["names-0.names-headless.t.svc:9876", "names-1.names-headless.t.svc:9876"]),
        ("prod", 1, "cluster.local", ["names-0.names-headless.prod.svc.cluster.local:9876"]),
    ],
)
def test_dns_names(namespace, replicas, domain, expected):
    assert namesrv_addresses("names", namespace, replicas, domain) == expected


def test_headless_service_gives_every_pod_a_name_at_once():
    objects = render_nameserver(nameserver(), SETTINGS)
    headless = one(objects, "Service", "names-headless")
    assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"] is True
    sts = one(objects, "StatefulSet", "names")
    assert headless["spec"]["selector"] == sts["spec"]["selector"]["matchLabels"]
    client = one(objects, "Service", "names")
    assert client["spec"]["type"] == "ClusterIP"
    assert {p["name"]: p["port"] for p in client["spec"]["ports"]} == {"remoting": 9876, "metrics": 5557}


def test_container():
    model = nameserver(
        image="repo/x:1", resources={"limits": {"cpu": 1}}, metrics={"enabled": True, "port": 9100}
    )
    sts = one(render_nameserver(model, SETTINGS), "StatefulSet", "names")
    c = sts["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "repo/x:1" and c["resources"] == {"limits": {"cpu": "1"}}
    assert c["args"] == ["namesrv", "--listen-port", "9876"]
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"remoting": 9876, "metrics": 9100}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert sts["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == "9100"


def test_scheduling_overrides_replace_the_default_anti_affinity():
    default = one(render_nameserver(nameserver(), SETTINGS), "StatefulSet", "names")["spec"]["template"][
        "spec"
    ]
    assert "podAntiAffinity" in default["affinity"]
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
    pod = one(
        render_nameserver(
            nameserver(scheduling={"affinity": {"nodeAffinity": {}}, "topologySpreadConstraints": spread}),
            SETTINGS,
        ),
        "StatefulSet",
        "names",
    )["spec"]["template"]["spec"]
    assert pod["affinity"] == {"nodeAffinity": {}} and pod["topologySpreadConstraints"] == spread
