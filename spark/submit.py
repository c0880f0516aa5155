"""Spark-on-Kubernetes submission: the ``spark-submit`` argument list and the ``SparkApplication``.

Pure: no Spark, no Kubernetes client. One :class:`K8sJob` describes a job (image, namespace,
service account, resources, the application file inside the image and its arguments); two
renderers turn it into what each submission path needs:

- :func:`spark_submit_args` — ``spark-submit --master k8s://… --deploy-mode cluster …``: Spark's
  own client creates the driver Pod, which creates the executor Pods;
- :func:`spark_application` — a ``SparkApplication`` (``sparkoperator.k8s.io/v1beta2``) for the
  Kubeflow Spark operator, which runs that same ``spark-submit`` in the cluster.

Both give the driver the service account (it needs RBAC to create and watch executor Pods, see
``spark/k8s/rbac.yaml``) and the image; the image must hold Java 17, PySpark and pyrocketmq, and
the application file at a ``local://`` path (``spark/k8s/Dockerfile`` builds one).

Example::

    job = K8sJob(api_server="https://127.0.0.1:6443", image="pyrocketmq-spark:dev",
                 app_args=("--name-server", "names-0.names-headless.default.svc:9876"))
    subprocess.run(spark_submit_args(job), check=True)

From a shell (``--dry-run`` prints the command instead of running it)::

    python -m pyrocketmq.spark.submit --api-server https://127.0.0.1:6443 --image pyrocketmq-spark:dev \
        --namespace default --service-account spark -- --name-server names-0.names-headless.default.svc:9876
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_IMAGE = "pyrocketmq-spark:dev"
DEFAULT_APP_FILE = "local:///opt/pyrocketmq/pipelines/order_totals.py"
SPARK_VERSION = "4.3.0"


@dataclass(frozen=True, slots=True)
class K8sJob:
    """One Spark job on Kubernetes."""

    api_server: str = "https://kubernetes.default.svc"
    """The API server URL (``k8s://`` is added when missing)."""
    image: str = DEFAULT_IMAGE
    """Image of driver and executors (``spark.kubernetes.container.image``)."""
    namespace: str = "default"
    """Namespace of the driver and executor Pods."""
    service_account: str = "spark"
    """Service account of the driver, allowed to manage its executor Pods."""
    name: str = "order-totals"
    """Application name; the driver Pod is ``<name>-…-driver``."""
    app_file: str = DEFAULT_APP_FILE
    """The Python file to run (``local://`` = inside the image)."""
    app_args: tuple[str, ...] = ()
    """Arguments of the application."""
    executors: int = 1
    """``spark.executor.instances``."""
    driver_cores: int = 1
    driver_memory: str = "1g"
    executor_cores: int = 1
    executor_memory: str = "1g"
    pull_policy: str = "IfNotPresent"
    """``spark.kubernetes.container.image.pullPolicy``."""
    python: str = "python3"
    """The Python of driver and executors, inside the image (``spark.pyspark.python``): set, so a
    ``PYSPARK_PYTHON`` of the machine that submits (a path there) never reaches the pods."""
    data_claim: str | None = None
    """A PersistentVolumeClaim (ReadWriteMany when executors run on several nodes) mounted at
    ``data_path`` in the driver and every executor, for file output such as Parquet."""
    data_path: str = "/data"
    """Where ``data_claim`` is mounted."""
    labels: Mapping[str, str] = field(default_factory=lambda: {"app.kubernetes.io/part-of": "pyrocketmq"})
    """Labels on the driver and executor Pods."""
    conf: Mapping[str, str] = field(default_factory=dict)
    """More ``--conf`` entries (they win over the generated ones)."""


def k8s_master(api_server: str) -> str:
    """``https://host:6443`` → ``k8s://https://host:6443`` (kept as is when already prefixed).

    >>> k8s_master("https://10.0.0.1:6443"), k8s_master("k8s://https://x")
    ('k8s://https://10.0.0.1:6443', 'k8s://https://x')
    """
    return api_server if api_server.startswith("k8s://") else f"k8s://{api_server}"


def spark_conf(job: K8sJob) -> dict[str, str]:
    """The Spark configuration of ``job`` (what ``--conf`` carries)."""
    conf = {
        "spark.kubernetes.container.image": job.image,
        "spark.kubernetes.container.image.pullPolicy": job.pull_policy,
        "spark.kubernetes.namespace": job.namespace,
        "spark.kubernetes.authenticate.driver.serviceAccountName": job.service_account,
        "spark.executor.instances": str(job.executors),
        "spark.driver.cores": str(job.driver_cores),
        "spark.driver.memory": job.driver_memory,
        "spark.executor.cores": str(job.executor_cores),
        "spark.executor.memory": job.executor_memory,
        "spark.pyspark.python": job.python,
        "spark.pyspark.driver.python": job.python,
    }
    if job.data_claim:
        for role in ("driver", "executor"):
            prefix = f"spark.kubernetes.{role}.volumes.persistentVolumeClaim.data"
            conf[f"{prefix}.options.claimName"] = job.data_claim
            conf[f"{prefix}.mount.path"] = job.data_path
    for k, v in sorted(job.labels.items()):
        conf[f"spark.kubernetes.driver.label.{k}"] = v
        conf[f"spark.kubernetes.executor.label.{k}"] = v
    conf.update({str(k): str(v) for k, v in job.conf.items()})
    return conf


def spark_submit_args(job: K8sJob, spark_submit: str = "spark-submit") -> list[str]:
    """The ``spark-submit`` command line that runs ``job`` in cluster mode.

    >>> args = spark_submit_args(K8sJob(api_server="https://h:6443", app_args=("--x", "1")))
    >>> args[:6]
    ['spark-submit', '--master', 'k8s://https://h:6443', '--deploy-mode', 'cluster', '--name']
    >>> args[-3:]
    ['local:///opt/pyrocketmq/pipelines/order_totals.py', '--x', '1']
    """
    args = [
        spark_submit,
        "--master",
        k8s_master(job.api_server),
        "--deploy-mode",
        "cluster",
        "--name",
        job.name,
    ]
    for k, v in spark_conf(job).items():
        args += ["--conf", f"{k}={v}"]
    return [*args, job.app_file, *job.app_args]


def spark_application(job: K8sJob) -> dict[str, Any]:
    """The Kubeflow Spark operator's ``SparkApplication`` for ``job``."""
    generated = spark_conf(job)
    # What the operator sets from dedicated fields stays out of sparkConf.
    dedicated = {
        "spark.kubernetes.container.image", "spark.kubernetes.container.image.pullPolicy",
        "spark.kubernetes.namespace", "spark.kubernetes.authenticate.driver.serviceAccountName",
        "spark.executor.instances", "spark.driver.cores", "spark.driver.memory", "spark.executor.cores",
        "spark.executor.memory", "spark.pyspark.python", "spark.pyspark.driver.python",
    }
    extra = {k: v for k, v in generated.items() if k not in dedicated and ".label." not in k}
    labels = dict(sorted(job.labels.items()))
    spec: dict[str, Any] = {
        "type": "Python",
        "pythonVersion": "3",
        "mode": "cluster",
        "image": job.image,
        "imagePullPolicy": job.pull_policy,
        "mainApplicationFile": job.app_file,
        "arguments": list(job.app_args),
        "sparkVersion": SPARK_VERSION,
        "restartPolicy": {"type": "OnFailure", "onFailureRetries": 3, "onFailureRetryInterval": 10,
                          "onSubmissionFailureRetries": 3, "onSubmissionFailureRetryInterval": 20},
        "driver": {"cores": job.driver_cores, "memory": job.driver_memory,
                   "serviceAccount": job.service_account, "labels": dict(labels)},
        "executor": {"instances": job.executors, "cores": job.executor_cores, "memory": job.executor_memory,
                     "labels": dict(labels)},
    }
    if extra:
        spec["sparkConf"] = extra
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": {"name": job.name, "namespace": job.namespace},
        "spec": spec,
    }


def parse_cli(argv: list[str]) -> tuple[K8sJob, bool, str]:
    """``(job, dry_run, spark_submit)`` from the command line of ``python -m pyrocketmq.spark.submit``.

    Arguments after ``--`` are the application's.

    >>> job, dry, _ = parse_cli(["--image", "img:1", "--conf", "a=b", "--dry-run",
    ...                          "--", "--name-server", "ns:9876"])
    >>> job.image, job.conf, job.app_args, dry
    ('img:1', {'a': 'b'}, ('--name-server', 'ns:9876'), True)
    """
    app_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, app_args = argv[:cut], argv[cut + 1:]
    d = K8sJob()
    p = argparse.ArgumentParser(prog="python -m pyrocketmq.spark.submit",
                                description="Submit a pyrocketmq Spark job to Kubernetes (cluster mode).")
    p.add_argument("--api-server", default=d.api_server)
    p.add_argument("--image", default=d.image)
    p.add_argument("--namespace", default=d.namespace)
    p.add_argument("--service-account", default=d.service_account)
    p.add_argument("--name", default=d.name)
    p.add_argument("--app-file", default=d.app_file)
    p.add_argument("--executors", type=int, default=d.executors)
    p.add_argument(
        "--data-claim", help="PersistentVolumeClaim mounted at --data-path in driver and executors"
    )
    p.add_argument("--data-path", default=d.data_path)
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--spark-submit", default=os.environ.get("SPARK_SUBMIT", "spark-submit"))
    p.add_argument("--dry-run", action="store_true", help="print the spark-submit command, do not run it")
    ns = p.parse_args(argv)
    conf = {}
    for item in ns.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            p.error(f"--conf {item!r}: use KEY=VALUE")
        conf[key] = value
    job = K8sJob(
        api_server=ns.api_server,
        image=ns.image,
        namespace=ns.namespace,
        service_account=ns.service_account,
        name=ns.name,
        app_file=ns.app_file,
        app_args=tuple(app_args),
        executors=ns.executors,
        data_claim=ns.data_claim,
        data_path=ns.data_path,
        conf=conf,
    )
    return job, ns.dry_run, ns.spark_submit


def main(argv: list[str] | None = None) -> int:
    job, dry_run, spark_submit = parse_cli(sys.argv[1:] if argv is None else argv)
    args = spark_submit_args(job, spark_submit)
    if dry_run:
        print(shlex.join(args))
        return 0
    os.execvp(args[0], args)
    return 0  # unreachable


if __name__ == "__main__":
    sys.exit(main())
