"""Small helpers for the e2e tests: resources as users write them, pods that run one command,
and reading what a broker pod holds through the admin protocol (from the node, pod IPs route)."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from tests.k8s.cluster import KubeCluster

GROUP = "pyrocketmq.io/v1alpha1"


def nameserver_cr(name: str, replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "NameServer",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}},
        },
    }


def broker_cr(name: str, nameserver: str, *, groups: int = 2, replicas: int = 2, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "Broker",
        "metadata": {"name": name},
        "spec": {
            "nameServer": {"name": nameserver},
            "clusterName": f"{name.capitalize()}Cluster",
            "groups": groups,
            "replicasPerGroup": replicas,
            "replicationMode": "SYNC",
            "flushMode": "ASYNC",
            "storage": {"type": "persistent", "size": "1Gi"},
            "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "1Gi"}},
            "config": {"mappedFileSizeCommitLog": "67108864"},
            **spec,
        },
    }


def topic_cr(name: str, topic: str, cluster: str, queues: int = 4) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "Topic",
        "metadata": {"name": name},
        "spec": {"clusterRef": {"name": cluster}, "topicName": topic, "readQueueNums": queues,
                 "writeQueueNums": queues},
    }  # fmt: skip


def group_cr(name: str, group: str, cluster: str) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "ConsumerGroup",
        "metadata": {"name": name},
        "spec": {"clusterRef": {"name": cluster}, "groupName": group},
    }


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c.get("type") == kind:
            return c
    return {}


def get(kube: KubeCluster, kind: str, name: str, ns: str) -> dict[str, Any] | None:
    proc = kube.kubectl("get", kind, name, "-n", ns, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def wait_ready(kube: KubeCluster, kind: str, name: str, ns: str, timeout: float = 180) -> dict[str, Any]:
    def ready():
        obj = get(kube, kind, name, ns)
        return obj if condition(obj, "Ready").get("status") == "True" else None

    return kube.wait_until(ready, timeout, f"{kind}/{name} Ready", interval=1)


def pods(kube: KubeCluster, ns: str, selector: str = "") -> list[dict[str, Any]]:
    args = ["pods", "-n", ns] + (["-l", selector] if selector else [])
    return kube.get(*args)["items"]


def pod_ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", ()))


def pod_ip(kube: KubeCluster, ns: str, name: str) -> str:
    return kube.get("pod", name, "-n", ns)["status"]["podIP"]


def run_pod(
    kube: KubeCluster, ns: str, image: str, args: list[str], *, name: str = "", timeout: float = 180
) -> tuple[str, str]:
    """Run ``args`` in a one-off pod of ``image``; return (phase, logs) once it has finished."""
    name = name or f"run-{secrets.token_hex(3)}"
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": image,
                        "imagePullPolicy": "Never",
                        "args": args,
                        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}},
                    }
                ],
            },
        },
        "-n",
        ns,
    )
    deadline = time.monotonic() + timeout
    phase = ""
    while time.monotonic() < deadline:
        phase = kube.get("pod", name, "-n", ns)["status"].get("phase", "")
        if phase in ("Succeeded", "Failed"):
            break
        time.sleep(1)
    logs = kube.kubectl("logs", name, "-n", ns, check=False).stdout
    return phase, logs
