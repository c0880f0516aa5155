"""Spark on Kubernetes against the real API server: ``spark-submit --deploy-mode cluster`` (PySpark's
own client, run through ``python -m pyrocketmq.spark.submit``) creates the driver Pod of the
order-totals pipeline with the image, service account, arguments and Spark configuration asked for.

There is no kubelet: the driver stays Pending, so the test reads what Spark's client created. The
submission authenticates as the ``spark`` ServiceAccount of ``spark/k8s/rbac.yaml`` (its own rights
suffice to create the driver Pod, its ConfigMap and Service), with a token kubeconfig in
``$KUBECONFIG``, the way a CI job or a developer's context would."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.k8s.cluster import KubeCluster

REPO_ROOT = Path(__file__).resolve().parents[2]
IMAGE = "registry.example/pyrocketmq-spark:test"
NAMESRV = "names-0.names-headless.{ns}.svc:9876;names-1.names-headless.{ns}.svc:9876"


def spark_submit_binary() -> str:
    found = Path(sys.executable).with_name("spark-submit")
    if found.exists():
        return str(found)
    which = shutil.which("spark-submit")
    if which is None:
        pytest.fail(
            "spark-submit not found: PySpark is part of the test extra (scripts/setup.sh installs it)"
        )
    return which


def rbac_in(namespace: str) -> list[dict]:
    docs = [d for d in yaml.safe_load_all((REPO_ROOT / "spark" / "k8s" / "rbac.yaml").read_text()) if d]
    for d in docs:
        d["metadata"]["namespace"] = namespace
        for s in d.get("subjects", []):
            s["namespace"] = namespace
    return docs


def driver_pods(kube: KubeCluster, ns: str) -> list[dict]:
    return kube.get("pods", "-n", ns, "-l", "spark-role=driver")["items"]


def test_cluster_mode_submission_creates_the_driver_pod(kube: KubeCluster, kube_namespace: str):
    ns = kube_namespace
    kube.apply(rbac_in(ns))
    kubeconfig = kube.service_account_kubeconfig(ns, "spark")
    namesrv = NAMESRV.format(ns=ns)
    cmd = [
        sys.executable, "-m", "pyrocketmq.spark.submit",
        "--api-server", kube.server,
        "--image", IMAGE,
        "--namespace", ns,
        "--service-account", "spark",
        "--data-claim", "order-totals-data",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
        "--spark-submit", spark_submit_binary(),
        "--",
        "--name-server", namesrv, "--mode", "stream", "--parquet", "/data/order-totals",
    ]
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None and spec.origin, (
        "PySpark is part of the test extra (scripts/setup.sh installs it)"
    )
    # spark-submit finds its jars through SPARK_HOME (else through whatever `python3` is on PATH).
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "SPARK_HOME": str(Path(spec.origin).parent),
           "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, (
        f"spark-submit failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    )

    (pod,) = kube.wait_until(lambda: driver_pods(kube, ns), 60, "the driver Pod")
    spec = pod["spec"]
    assert pod["metadata"]["name"].startswith("order-totals-") and pod["metadata"]["name"].endswith("-driver")
    assert pod["metadata"]["labels"]["app.kubernetes.io/part-of"] == "pyrocketmq"
    assert spec["serviceAccountName"] == "spark"
    (container,) = spec["containers"]
    assert container["image"] == IMAGE
    args = container["args"]
    assert args[0] == "driver"
    assert "local:///opt/pyrocketmq/pipelines/order_totals.py" in args
    tail = args[args.index("local:///opt/pyrocketmq/pipelines/order_totals.py") + 1:]
    assert tail[:2] == ["--name-server", namesrv] and "--parquet" in tail
    # The data claim is mounted at /data in the driver.
    claims = {
        v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"] if "persistentVolumeClaim" in v
    }
    assert claims == {"order-totals-data"}
    assert any(m["mountPath"] == "/data" for m in container["volumeMounts"])
    # The Spark configuration travels in a ConfigMap the driver mounts.
    maps = kube.get("configmaps", "-n", ns)["items"]
    conf_text = "\n".join(v for m in maps for v in (m.get("data") or {}).values())
    assert f"spark.kubernetes.container.image={IMAGE}" in conf_text.replace("\\", "")
    assert "spark.kubernetes.authenticate.driver.serviceAccountName=spark" in conf_text.replace("\\", "")
    # No kubelet here: the driver waits to be scheduled.
    assert pod["status"].get("phase", "Pending") == "Pending"
