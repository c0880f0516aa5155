"""Spark on Kubernetes on real pods (h): ``python -m pyrocketmq.spark.submit`` from the node runs
``spark-submit --master k8s://… --deploy-mode cluster`` with the Spark image; the driver pod starts an
executor pod; together they consume a ConsumerGroup's topic into Parquet files on a volume and
complete. The group's committed offsets show in ``pyrocketmq admin consumerProgress``; a second run
with the same checkpoint reads nothing new."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from pyrocketmq.client import Message, SyncProducer
from tests.e2e.helpers import MQ, group_cr, mq_fixture, topic_cr, wait_ready
from tests.k8s.cluster import KubeCluster

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_CLAIM = "spark-data"
BASE_TS = 1_763_800_020_000  # 2025-11-22T08:27:00Z: events over four whole minutes from here
TAGS = ("books", "music", "games")


mq = mq_fixture("e2e-spark", wait=True)


def spark_rbac(ns: str) -> list[dict]:
    docs = [d for d in yaml.safe_load_all((REPO_ROOT / "spark" / "k8s" / "rbac.yaml").read_text()) if d]
    for d in docs:
        d["metadata"]["namespace"] = ns
        for s in d.get("subjects", []):
            s["namespace"] = ns
    return docs


def data_claim() -> dict:
    # One node: ReadWriteOnce is enough for driver and executor (local-path has no ReadWriteMany).
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": DATA_CLAIM},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def orders(n: int) -> list[tuple[str, dict]]:
    out = []
    for i in range(n):
        cents = 100 + (i * 7919) % 40_000
        out.append(
            (
                TAGS[i % len(TAGS)],
                {
                    "orderId": f"o-{i}",
                    "amount": f"{cents // 100}.{cents % 100:02d}",
                    "ts": BASE_TS + i * 240_000 // n,
                },
            )
        )
    # Ten minutes later: moves the watermark past every minute above, so each one is emitted.
    out.append(("flush", {"orderId": "flush", "amount": "1.00", "ts": BASE_TS + 14 * 60_000}))
    return out


def expected_counts(events: list[tuple[str, dict]]) -> Counter:
    return Counter((datetime.fromtimestamp(o["ts"] // 60_000 * 60, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S"), tag)
                   for tag, o in events if tag != "flush")


def spark_submit(kube: KubeCluster, mq: MQ, name: str, app_args: list[str]) -> subprocess.CompletedProcess:
    kubeconfig = kube.service_account_kubeconfig(mq.ns, "spark")
    cmd = [
        sys.executable, "-m", "pyrocketmq.spark.submit",
        "--api-server", kube.server, "--image", mq.images.spark, "--namespace", mq.ns,
        "--service-account", "spark", "--name", name, "--executors", "1", "--data-claim", DATA_CLAIM,
        "--conf", "spark.kubernetes.container.image.pullPolicy=Never",
        # The one node the Spark image was imported into (tests/e2e/conftest.py).
        "--conf", f"spark.kubernetes.node.selector.kubernetes.io/hostname={mq.images.spark_node}",
        # Two cores for the whole node: a tenth of a core each is what the pods ask the scheduler for.
        "--conf", "spark.kubernetes.driver.request.cores=100m",
        "--conf", "spark.kubernetes.executor.request.cores=100m",
        "--conf", "spark.driver.memory=700m", "--conf", "spark.executor.memory=700m",
        # Keep the executor pods after the job, so the test can see they ran.
        "--conf", "spark.kubernetes.executor.deleteOnTermination=false",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=true",
        "--spark-submit", str(Path(sys.executable).with_name("spark-submit")),
        "--", *app_args,
    ]  # fmt: skip
    import pyspark

    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "SPARK_HOME": str(Path(pyspark.__file__).parent),
           "PYSPARK_PYTHON": sys.executable}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def app_pods(kube: KubeCluster, ns: str, name: str) -> tuple[dict, list[dict]]:
    (driver,) = [p for p in kube.get("pods", "-n", ns, "-l", "spark-role=driver")["items"]
                 if p["metadata"]["name"].startswith(f"{name}-")]
    app = driver["metadata"]["labels"]["spark-app-selector"]
    executors = kube.get("pods", "-n", ns, "-l", f"spark-role=executor,spark-app-selector={app}")["items"]
    return driver, executors


READ_PARQUET = """
import glob, json, pyarrow.parquet as pq
rows = []
for d in sorted(glob.glob('/data/totals/batch=*')):
    for r in pq.read_table(d).to_pylist():
        rows.append({'batch': d.rsplit('=', 1)[1], 'minute': r['minute'].strftime('%Y-%m-%dT%H:%M:%S'),
                     'tag': r['tag'], 'orders': r['orders']})
print('ROWS ' + json.dumps(rows))
"""


def parquet_rows(mq: MQ) -> list[dict]:
    """Read the Parquet output from the volume in a pod of the Spark image (pyarrow is in it)."""
    name = f"read-{secrets.token_hex(3)}"
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"kubernetes.io/hostname": mq.images.spark_node},
            "containers": [{"name": "main", "image": mq.images.spark, "imagePullPolicy": "Never",
                            "command": ["/opt/pyrocketmq/bin/python", "-c", READ_PARQUET],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": DATA_CLAIM}}],
        },
    }  # fmt: skip
    mq.kube.apply(pod, "-n", mq.ns)
    mq.kube.wait_until(
        lambda: mq.kube.get("pod", name, "-n", mq.ns)["status"].get("phase") in ("Succeeded", "Failed"),
        180,
        "the Parquet reader pod",
        interval=1,
    )
    logs = mq.kube.kubectl("logs", name, "-n", mq.ns).stdout
    line = next((ln for ln in logs.splitlines() if ln.startswith("ROWS ")), None)
    assert line is not None, logs[-3000:]
    return json.loads(line[5:])


def consumer_progress(mq: MQ, group: str, topic: str) -> tuple[int, int]:
    """``(sum of the group's consumer offsets, Consume Diff Total)`` as ``pyrocketmq admin`` prints them."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyrocketmq",
            "admin",
            "consumerProgress",
            "-n",
            mq.namesrv_addr(),
            "-g",
            group,
            "-t",
            topic,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    rows = [ln.split() for ln in out.stdout.splitlines() if ln.startswith(topic)]
    assert rows, out.stdout
    diff = re.search(r"Consume Diff Total: (-?\d+)", out.stdout)
    assert diff, out.stdout
    return sum(int(r[4]) for r in rows), int(diff.group(1))


@pytest.mark.timeout(1200)
def test_h_a_spark_job_on_kubernetes_consumes_a_group_into_files_and_a_rerun_reads_nothing_new(mq: MQ):
    kube, ns = mq.kube, mq.ns
    suffix = secrets.token_hex(3)
    topic, out_topic, group = f"SparkOrders_{suffix}", f"SparkTotals_{suffix}", f"order-totals-{suffix}"
    kube.apply(topic_cr("spark-in", topic, "orders"), "-n", ns)
    kube.apply(topic_cr("spark-out", out_topic, "orders"), "-n", ns)
    kube.apply(group_cr("spark-group", group, "orders"), "-n", ns)
    for kind, name in (("topic", "spark-in"), ("topic", "spark-out"), ("consumergroup", "spark-group")):
        wait_ready(kube, kind, name, ns, timeout=90)
    kube.apply(spark_rbac(ns), "-n", ns)
    kube.apply(data_claim(), "-n", ns)

    events = orders(300)
    with SyncProducer(f"P_{suffix}", mq.namesrv_addr()) as producer:
        for tag, o in events:
            producer.send(Message(topic, json.dumps(o).encode(), tags=tag))

    app_args = ["--name-server", mq.in_cluster_namesrv(), "--input-topic", topic, "--output-topic", out_topic,
                "--mode", "stream", "--trigger", "available-now", "--starting-offsets", "earliest",
                "--group", group, "--watermark", "2 minutes",
                "--parquet", "/data/totals", "--checkpoint", "/data/checkpoints/order-totals"]
    first = spark_submit(kube, mq, "totals-first", app_args)
    assert first.returncode == 0, f"spark-submit failed:\n{first.stdout[-3000:]}\n{first.stderr[-6000:]}"
    driver, executors = app_pods(kube, ns, "totals-first")
    assert driver["status"]["phase"] == "Succeeded", kube.kubectl(
        "logs", driver["metadata"]["name"], "-n", ns, check=False
    ).stdout[-4000:]
    assert executors, "no executor pod ran"
    started = [s for p in executors for s in p["status"].get("containerStatuses", ())
               if "terminated" in s.get("state", {}) or "running" in s.get("state", {})]
    assert started, [p["status"] for p in executors]

    rows = parquet_rows(mq)
    got = Counter()
    for r in rows:
        got[(r["minute"], r["tag"])] += r["orders"]
    assert got == expected_counts(events), (sorted(got.items()), sorted(expected_counts(events).items()))
    committed, lag = consumer_progress(mq, group, topic)
    assert (committed, lag) == (len(events), 0)

    # The same job again, nothing new sent: the checkpoint (and the group) say everything was read.
    second = spark_submit(kube, mq, "totals-second", app_args)
    assert second.returncode == 0, f"spark-submit failed:\n{second.stdout[-3000:]}\n{second.stderr[-6000:]}"
    driver, _ = app_pods(kube, ns, "totals-second")
    assert driver["status"]["phase"] == "Succeeded"
    again = parquet_rows(mq)
    assert sorted(again, key=json.dumps) == sorted(rows, key=json.dumps), "the second run wrote new output"
    assert consumer_progress(mq, group, topic) == (len(events), 0)
