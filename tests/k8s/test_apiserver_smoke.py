"""The k8s harness itself: a real API server validates CRDs (OpenAPI + CEL), enforces RBAC, and the
controller manager turns workloads into Pods; kubectl and helm talk to it.

If these fail, every operator test would fail for reasons that are not the operator's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localkube import tools
from tests.k8s.cluster import KubeCluster, KubeCommandError

pytestmark = pytest.mark.k8s

GROUP = "smoke.pyrocketmq.io"

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wdg"]},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["replicas"],
                                "properties": {
                                    "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                                    "minReplicas": {"type": "integer", "minimum": 0},
                                    "flushDiskType": {
                                        "type": "string",
                                        "enum": ["ASYNC_FLUSH", "SYNC_FLUSH"],
                                        "default": "ASYNC_FLUSH",
                                    },
                                },
                                "x-kubernetes-validations": [
                                    {
                                        "rule": "!has(self.minReplicas) || self.minReplicas <= self.replicas",
                                        "message": "minReplicas must not exceed replicas",
                                        "fieldPath": ".minReplicas",
                                    }
                                ],
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def widget(name: str, namespace: str, **spec: object) -> dict:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


@pytest.fixture(scope="module")
def widget_crd(kube: KubeCluster) -> str:
    kube.apply(WIDGET_CRD)
    kube.kubectl("wait", "--for=condition=Established", f"crd/widgets.{GROUP}", "--timeout=60s")
    return f"widgets.{GROUP}"


def test_versions(kube: KubeCluster) -> None:
    version = json.loads(kube.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"] == tools.K8S_VERSION
    assert version["clientVersion"]["gitVersion"] == tools.K8S_VERSION
    assert tools.HELM_VERSION in kube.helm("version", "--short").stdout


def test_crd_defaults_and_validation(kube: KubeCluster, kube_namespace: str, widget_crd: str) -> None:
    kube.apply(widget("good", kube_namespace, replicas=3, minReplicas=1))
    stored = kube.get(widget_crd, "good", "-n", kube_namespace)
    assert stored["spec"] == {"replicas": 3, "minReplicas": 1, "flushDiskType": "ASYNC_FLUSH"}  # defaulted

    with pytest.raises(KubeCommandError) as cel:
        kube.apply(widget("bad-cel", kube_namespace, replicas=2, minReplicas=5))
    assert "spec.minReplicas" in cel.value.stderr
    assert "minReplicas must not exceed replicas" in cel.value.stderr

    with pytest.raises(KubeCommandError) as schema:
        kube.apply(widget("bad-schema", kube_namespace, replicas=11, flushDiskType="NEVER"))
    assert "spec.replicas" in schema.value.stderr
    assert "spec.flushDiskType" in schema.value.stderr

    names = {w["metadata"]["name"] for w in kube.get(widget_crd, "-n", kube_namespace)["items"]}
    assert names == {"good"}


def _pods(kube: KubeCluster, namespace: str, selector: str) -> list[dict]:
    return kube.get("pods", "-n", namespace, "-l", selector)["items"]


def _workload(kind: str, name: str, replicas: int, **extra: object) -> dict:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                # Never pulled: there is no kubelet, Pods stay Pending.
                "spec": {"containers": [{"name": "main", "image": "registry.invalid/pyrocketmq:smoke"}]},
            },
            **extra,
        },
    }


def test_controller_manager_creates_pods(kube: KubeCluster, kube_namespace: str) -> None:
    ns = kube_namespace
    kube.apply(_workload("Deployment", "web", 2), "-n", ns)
    rs = kube.wait_until(
        lambda: kube.get("replicasets", "-n", ns, "-l", "app=web")["items"], 60, "a ReplicaSet"
    )
    assert rs[0]["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    pods = kube.wait_until(lambda: len(p := _pods(kube, ns, "app=web")) == 2 and p, 60, "2 Deployment pods")
    assert all(p["status"]["phase"] == "Pending" for p in pods)

    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "store"},
            "spec": {"clusterIP": "None", "selector": {"app": "store"}, "ports": [{"port": 10911}]},
        },
        "-n",
        ns,
    )
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    kube.apply(
        _workload(
            "StatefulSet",
            "store",
            2,
            serviceName="store",
            podManagementPolicy="Parallel",
            volumeClaimTemplates=[claim],
        ),
        "-n",
        ns,
    )
    pods = kube.wait_until(
        lambda: len(p := _pods(kube, ns, "app=store")) == 2 and p, 60, "2 StatefulSet pods"
    )
    assert sorted(p["metadata"]["name"] for p in pods) == ["store-0", "store-1"]
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet" for p in pods)
    pvcs = {c["metadata"]["name"] for c in kube.get("pvc", "-n", ns)["items"]}
    assert pvcs == {"data-store-0", "data-store-1"}

    # Garbage collection follows owner references (unscheduled Pods are deleted at once).
    kube.kubectl("delete", "statefulset", "store", "-n", ns, "--wait=false")
    kube.wait_until(lambda: not _pods(kube, ns, "app=store"), 60, "StatefulSet pods garbage-collected")


def test_rbac_is_enforced_for_service_accounts(kube: KubeCluster, kube_namespace: str) -> None:
    ns = kube_namespace
    kube.kubectl("create", "serviceaccount", "reader", "-n", ns)
    kube.kubectl("create", "role", "read-cm", "--verb=get,list", "--resource=configmaps", "-n", ns)
    kube.kubectl(
        "create", "rolebinding", "reader", "--role=read-cm", f"--serviceaccount={ns}:reader", "-n", ns
    )
    cfg = kube.service_account_kubeconfig(ns, "reader")
    as_reader = ["--kubeconfig", str(cfg), "-n", ns]
    assert kube.kubectl("get", "configmaps", *as_reader, check=False).returncode == 0
    denied = kube.kubectl("get", "secrets", *as_reader, check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()


def test_helm_installs_a_chart(kube: KubeCluster, kube_namespace: str, tmp_path: Path) -> None:
    chart = tmp_path / "smoke"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: smoke\nversion: 0.1.0\nkubeVersion: '>=1.30.0-0'\n"
    )
    (chart / "values.yaml").write_text("greeting: hello\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n"
        "data:\n  greeting: {{ .Values.greeting | quote }}\n"
        "  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n"
    )
    kube.helm(
        "install",
        "smoke",
        str(chart),
        "-n",
        kube_namespace,
        "--set",
        "greeting=hi",
        "--wait",
        "--timeout=60s",
    )
    data = kube.get("configmap", "smoke-cm", "-n", kube_namespace)["data"]
    assert data == {"greeting": "hi", "kube": tools.K8S_VERSION}
    releases = json.loads(kube.helm("list", "-n", kube_namespace, "-o", "json").stdout)
    assert [r["name"] for r in releases] == ["smoke"]
    kube.helm("uninstall", "smoke", "-n", kube_namespace, "--wait")
