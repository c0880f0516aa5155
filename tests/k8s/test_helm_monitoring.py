"""The chart's observability and default-cluster values: ``helm template`` renders the PodMonitors,
the ServiceMonitor, the PrometheusRule (the rules file, unchanged) and the dashboards as ConfigMaps
for Grafana's sidecar; ``helm install`` with ``cluster.enabled`` creates the NameServer, Broker,
Topic and ConsumerGroup on the real API server, and the running operator reconciles them."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.k8s.cluster import KubeCluster
from tests.k8s.operator_env import (  # noqa: F401 (fixtures)
    CHART,
    OperatorProcess,
    crds,
    get,
    names,
    operator,
    wait_condition,
    wait_for,
)

MONITORING_KINDS = ("PodMonitor", "ServiceMonitor", "PrometheusRule")


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def render(kube: KubeCluster, *values: str) -> list[dict]:
    return docs(kube.helm("template", "rel", str(CHART), "-n", "ops", *values).stdout)


def test_monitoring_values_render_monitors_rules_and_dashboards(kube: KubeCluster) -> None:
    kube.helm(
        "lint", str(CHART), "--strict", "--set", "monitoring.enabled=true", "--set", "cluster.enabled=true"
    )
    rendered = render(kube, "--set", "monitoring.enabled=true", "--set", "monitoring.labels.release=kps")
    by_kind: dict[str, list[dict]] = {}
    for d in rendered:
        by_kind.setdefault(d["kind"], []).append(d)

    pod_monitors = {d["metadata"]["name"]: d for d in by_kind["PodMonitor"]}
    assert sorted(pod_monitors) == ["rel-pyrocketmq-broker", "rel-pyrocketmq-namesrv"]
    for component in ("broker", "namesrv"):
        spec = pod_monitors[f"rel-pyrocketmq-{component}"]["spec"]
        # The pods the operator renders carry these labels and a port named "metrics".
        assert spec["selector"]["matchLabels"] == {"app.kubernetes.io/name": "pyrocketmq",
                                                   "app.kubernetes.io/component": component}
        endpoint = spec["podMetricsEndpoints"][0]
        assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"
        assert {
            "action": "replace",
            "targetLabel": "job",
            "replacement": f"pyrocketmq-{component}",
        } in endpoint["relabelings"]
        assert spec["namespaceSelector"] == {"any": True}
    (service_monitor,) = by_kind["ServiceMonitor"]
    assert service_monitor["spec"]["endpoints"][0]["port"] == "metrics"
    for kind in MONITORING_KINDS:
        assert all(d["metadata"]["labels"]["release"] == "kps" for d in by_kind[kind])

    (rule,) = by_kind["PrometheusRule"]
    assert rule["spec"] == yaml.safe_load((CHART / "files" / "rules.yaml").read_text())
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert alerts == {"PyRocketMQConsumerLagGrowing", "PyRocketMQBrokerDiskFull", "PyRocketMQBrokerDown",
                      "PyRocketMQDeadLetters", "PyRocketMQNoNameServer"}

    dashboards = [d for d in by_kind["ConfigMap"] if d["metadata"]["labels"].get("grafana_dashboard") == "1"]
    files = {p.name: json.loads(p.read_text()) for p in (CHART / "dashboards").glob("*.json")}
    assert len(dashboards) == len(files) == 3
    for cm in dashboards:
        ((key, text),) = cm["data"].items()
        assert json.loads(text) == files[key]


def test_monitoring_auto_follows_the_prometheus_operator_api(kube: KubeCluster) -> None:
    kinds = lambda docs_: {d["kind"] for d in docs_}  # noqa: E731
    assert not kinds(render(kube)) & set(MONITORING_KINDS)
    assert kinds(render(kube, "--api-versions", "monitoring.coreos.com/v1")) >= set(MONITORING_KINDS)
    assert not kinds(
        render(kube, "--api-versions", "monitoring.coreos.com/v1", "--set", "monitoring.enabled=false")
    ) & set(MONITORING_KINDS)
    namespaced = render(kube, "--set", "monitoring.enabled=true", "--set", "rbac.scope=namespaced",
                        "--set", "rbac.watchNamespaces={a,b}")
    selectors = [d["spec"]["namespaceSelector"] for d in namespaced if d["kind"] == "PodMonitor"]
    assert selectors == [{"matchNames": ["a", "b"]}] * 2
    with pytest.raises(Exception, match="/monitoring/enabled"):  # values.schema.json names the value
        render(kube, "--set", "monitoring.enabled=sometimes")


def test_default_cluster_values_create_resources_the_operator_reconciles(
    crds: KubeCluster, operator: OperatorProcess  # noqa: F811
) -> None:
    kube = crds
    namespace = kube.create_namespace("rel")
    try:
        assert not [d for d in render(kube) if d["kind"] in ("NameServer", "Broker")]  # off by default
        kube.helm("install", "demo", str(CHART), "-n", namespace, "--set", "cluster.enabled=true",
                  "--set", "cluster.broker.storage.type=ephemeral", "--set", "metrics.service.enabled=false",
                  "--wait=false")
        assert get(kube, "nameserver", "pyrocketmq", namespace)["spec"]["replicas"] == 1
        broker = get(kube, "broker", "pyrocketmq", namespace)
        assert (
            broker["spec"]["nameServer"] == {"name": "pyrocketmq"}
            and broker["spec"]["metrics"]["enabled"] is True
        )
        topic = get(kube, "topic", "example-topic", namespace)
        assert topic["spec"]["topicName"] == "TopicTest" and topic["spec"]["clusterRef"] == {
            "name": "pyrocketmq"
        }
        assert get(kube, "consumergroup", "example-group", namespace)["spec"]["groupName"] == "GID_EXAMPLE"

        # The operator reconciles them: workloads exist; no pod runs (no kubelet), so not Ready yet.
        wait_condition(kube, "broker", "pyrocketmq", namespace, "Ready", "False", "PodsNotReady", op=operator)
        wait_condition(
            kube, "nameserver", "pyrocketmq", namespace, "Ready", "False", "PodsNotReady", op=operator
        )
        wait_condition(kube, "topic", "example-topic", namespace, "Ready", "False", op=operator, timeout=40)
        wait_condition(
            kube, "consumergroup", "example-group", namespace, "Ready", "False", op=operator, timeout=40
        )
        assert names(kube, "statefulsets", namespace) == ["pyrocketmq", "pyrocketmq-0"]
        sts = kube.get("statefulset", "pyrocketmq-0", "-n", namespace)
        container = sts["spec"]["template"]["spec"]["containers"][0]
        assert container["readinessProbe"]["httpGet"] == {
            "path": "/readyz",
            "port": "metrics",
            "scheme": "HTTP",
        }
        assert container["livenessProbe"]["httpGet"] == {
            "path": "/healthz",
            "port": "metrics",
            "scheme": "HTTP",
        }
    finally:
        kube.helm("uninstall", "demo", "-n", namespace, "--wait", check=False)
        kube.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
