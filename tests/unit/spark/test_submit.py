"""Spark-on-Kubernetes submission: the spark-submit argument list, the SparkApplication, and the
checked-in manifest staying in step with them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from pyrocketmq.spark.pipelines.order_totals import parse_args
from pyrocketmq.spark.submit import K8sJob, k8s_master, spark_application, spark_conf, spark_submit_args

REPO = Path(__file__).resolve().parents[3]
MANIFEST = REPO / "spark" / "k8s" / "order-totals.yaml"


def _conf(args: list[str]) -> dict[str, str]:
    return dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--conf")


def test_spark_submit_args_cluster_mode():
    job = K8sJob(
        api_server="https://127.0.0.1:6443",
        image="registry.local/pyrocketmq-spark:1.2",
        namespace="data",
        service_account="spark-driver",
        executors=2,
        app_args=("--name-server", "ns:9876"),
        conf={"spark.kubernetes.submission.waitAppCompletion": "false"},
    )
    args = spark_submit_args(job, spark_submit="/opt/spark/bin/spark-submit")
    assert args[:7] == [
        "/opt/spark/bin/spark-submit",
        "--master",
        "k8s://https://127.0.0.1:6443",
        "--deploy-mode",
        "cluster",
        "--name",
        "order-totals",
    ]
    assert args[-3:] == ["local:///opt/pyrocketmq/pipelines/order_totals.py", "--name-server", "ns:9876"]
    conf = _conf(args)
    assert conf["spark.kubernetes.container.image"] == "registry.local/pyrocketmq-spark:1.2"
    assert conf["spark.kubernetes.namespace"] == "data"
    assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == "spark-driver"
    assert conf["spark.executor.instances"] == "2"
    assert conf["spark.kubernetes.driver.label.app.kubernetes.io/part-of"] == "pyrocketmq"
    assert conf["spark.kubernetes.submission.waitAppCompletion"] == "false"
    assert conf == spark_conf(job)


def test_extra_conf_wins_and_master_prefix_kept():
    job = K8sJob(api_server="k8s://https://h:1", conf={"spark.executor.instances": "5"})
    assert spark_submit_args(job)[2] == "k8s://https://h:1" == k8s_master("k8s://https://h:1")
    assert _conf(spark_submit_args(job))["spark.executor.instances"] == "5"


def test_spark_application_matches_the_submit_conf():
    job = K8sJob(namespace="data", service_account="spark-driver", executors=3, app_args=("--x",),
                 conf={"spark.sql.shuffle.partitions": "8"})
    app = spark_application(job)
    assert (app["apiVersion"], app["kind"], app["metadata"]) == (
        "sparkoperator.k8s.io/v1beta2", "SparkApplication", {"name": "order-totals", "namespace": "data"})
    spec = app["spec"]
    assert (spec["type"], spec["mode"], spec["image"], spec["mainApplicationFile"], spec["arguments"]) == (
        "Python", "cluster", "pyrocketmq-spark:dev", job.app_file, ["--x"])
    assert spec["driver"]["serviceAccount"] == "spark-driver" and spec["executor"]["instances"] == 3
    assert spec["sparkConf"] == {"spark.sql.shuffle.partitions": "8"}


def test_checked_in_manifest_is_what_the_renderer_makes():
    doc = yaml.safe_load(MANIFEST.read_text())
    job = K8sJob(app_args=tuple(doc["spec"]["arguments"]), conf=doc["spec"].get("sparkConf", {}))
    assert doc == spark_application(job)
    parse_args(doc["spec"]["arguments"])  # the pipeline accepts the manifest's arguments


def test_pure_modules_do_not_import_pyspark():
    code = ("import sys; import pyrocketmq.spark, pyrocketmq.spark.offsets, pyrocketmq.spark.planning, "
            "pyrocketmq.spark.options, pyrocketmq.spark.rows, pyrocketmq.spark.submit, "
            "pyrocketmq.spark.pipelines.order_totals; print('pyspark' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_data_claim_is_mounted_in_driver_and_executors():
    conf = spark_conf(K8sJob(data_claim="order-totals-data", data_path="/out"))
    for role in ("driver", "executor"):
        assert (
            conf[f"spark.kubernetes.{role}.volumes.persistentVolumeClaim.data.options.claimName"]
            == "order-totals-data"
        )
        assert conf[f"spark.kubernetes.{role}.volumes.persistentVolumeClaim.data.mount.path"] == "/out"


def test_command_line_dry_run_prints_the_spark_submit_command():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyrocketmq.spark.submit",
            "--api-server",
            "https://10.0.0.1:6443",
            "--image",
            "img:2",
            "--service-account",
            "sa",
            "--conf",
            "spark.executor.instances=3",
            "--dry-run",
            "--",
            "--name-server",
            "ns:9876",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    line = out.stdout.strip()
    assert line.startswith("spark-submit --master k8s://https://10.0.0.1:6443 --deploy-mode cluster")
    assert "spark.kubernetes.container.image=img:2" in line and "serviceAccountName=sa" in line
    assert "spark.executor.instances=3" in line and line.endswith("order_totals.py --name-server ns:9876")
