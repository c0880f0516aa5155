"""Fixtures for the Spark tests: real PySpark (``local[2]``) against real name-server and broker processes.

- ``spark`` (session): one SparkSession with the ``pyrocketmq`` format registered; small
  shuffle partition counts and no UI, to stay light on 2 cores.
- ``rmq`` (session): our name server + one broker (``tests/helpers/cluster.py``) on free ports,
  with helpers to create topics and produce (:class:`Rmq`).
- ``spark_env``: environment for Spark subprocesses (``spark-submit``, a streaming driver that
  a test kills) so they use this interpreter and the repository's packages.
- :func:`read_stream` / :func:`run_available_now` / :func:`wait_for`: a ``pyrocketmq`` stream,
  an AvailableNow run of a query, and polling a running query.

PySpark and Java are prerequisites: without them the tests skip, except with ``CI=true``, where
they fail.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.helpers import prereq  # noqa: E402
from tests.helpers.cluster import Cluster, cluster_logs_hook, start_pyrocketmq_cluster  # noqa: E402
from tests.helpers.routes import wait_for_route  # noqa: E402


def missing_prerequisite(reason: str) -> None:
    prereq.missing_prerequisite("Spark test", reason)


@functools.cache
def _scratch() -> str:
    """This test process's directory for what Spark's JVMs write to a temporary directory (block
    managers, staged files, native libraries), removed at the end of the session (``spark_scratch``)."""
    return tempfile.mkdtemp(prefix="pyrocketmq-spark-")


@pytest.fixture(scope="session", autouse=True)
def spark_scratch() -> Iterator[None]:
    yield
    if _scratch.cache_info().currsize:
        shutil.rmtree(_scratch(), ignore_errors=True)


def spark_env(**extra: str) -> dict[str, str]:
    """Environment for Spark processes: this Python for driver and workers, quiet logs, and their
    scratch files in this session's directory (a JVM that is killed leaves none in /tmp)."""
    env = dict(os.environ)
    env.update(
        SPARK_LOCAL_DIRS=_scratch(),
        SPARK_SUBMIT_OPTS=f"-Djava.io.tmpdir={_scratch()}",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PYTHONUNBUFFERED="1",
        SPARK_LOCAL_IP="127.0.0.1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p),
    )
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        missing_prerequisite(f"pyspark is not installed ({e}); pip install -e '.[test]'")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        missing_prerequisite("java (17+) is not on PATH and JAVA_HOME is unset")
    for k, v in spark_env().items():
        os.environ.setdefault(k, v)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("pyrocketmq-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.pollingDelay", "100ms")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("WARN")
    from pyrocketmq.spark import register

    register(session)
    try:
        yield session
    finally:
        session.stop()


@dataclass
class Rmq:
    """A running cluster plus the client calls tests need."""

    cluster: Cluster

    @property
    def ns(self) -> str:
        return self.cluster.namesrv_addr

    def create_topic(self, topic: str, queues: int = 4) -> None:
        from pyrocketmq.client import SyncAdmin

        with SyncAdmin(self.ns) as admin:
            admin.create_topic(
                topic, cluster=self.cluster.cluster_name, read_queues=queues, write_queues=queues
            )
            wait_for_route(admin, topic)

    def produce(self, topic: str, bodies: list[bytes], tags: list[str] | None = None,
                keys: list[str] | None = None, properties: dict[str, str] | None = None) -> list:
        from pyrocketmq.client import Message, SyncProducer

        out = []
        with SyncProducer("spark-test-producer", self.ns) as producer:
            futures = [
                producer.send_async(Message(topic, body, tags=tags[i] if tags else None,
                                            keys=keys[i] if keys else None, properties=properties))
                for i, body in enumerate(bodies)
            ]
            out = [f.result(30) for f in futures]
        return out

    def committed(self, group: str, topic: str) -> dict:
        from pyrocketmq.client import SyncPullConsumer

        with SyncPullConsumer(group, self.ns) as c:
            return {mq: c.committed(mq) for mq in c.fetch_queues(topic)}

    def max_offsets(self, topic: str) -> dict:
        from pyrocketmq.client import SyncAdmin

        with SyncAdmin(self.ns) as admin:
            route_queues = admin.topic_stats(topic)
            return {mq: v.max_offset for mq, v in route_queues.items()}


def read_stream(spark, rmq: Rmq, topic: str | None = None, **opts: object):
    """``spark.readStream.format("pyrocketmq")`` on ``rmq`` with ``topic`` (if given) and ``opts``."""
    reader = spark.readStream.format("pyrocketmq").option("nameServer", rmq.ns)
    if topic is not None:
        reader = reader.option("topic", topic)
    for k, v in opts.items():
        reader = reader.option(k, v)
    return reader.load()


def run_available_now(df, out: Path, checkpoint: Path):
    """Run ``df`` into Parquet at ``out`` with Trigger.AvailableNow; the finished query."""
    q = (
        df.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert q.awaitTermination(300), "the AvailableNow query did not finish"
    assert q.exception() is None, q.exception()
    return q


def wait_for(query, done, what: str, timeout: float = 120.0) -> None:
    """Poll ``done()`` every 0.1 s while ``query`` runs; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not done():
        assert query.isActive, f"the query stopped while waiting for {what}: {query.exception()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _wait_registered(c: Cluster) -> None:
    from pyrocketmq.client import SyncAdmin

    deadline = time.monotonic() + 30
    with SyncAdmin(c.namesrv_addr) as admin:
        while time.monotonic() < deadline:
            if not c.alive():
                raise RuntimeError("a server exited")
            try:
                if admin.cluster_info().broker_addr_table:
                    return
            except Exception:
                pass
            time.sleep(0.2)
    raise TimeoutError("the broker did not register with the name server")


def start_cluster(home: Path, **broker_overrides: object) -> Cluster:
    return start_pyrocketmq_cluster(home, ready=_wait_registered, broker_overrides=broker_overrides)


@pytest.fixture(scope="session")
def rmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rmq]:
    cluster = start_cluster(tmp_path_factory.mktemp("rmq"))
    try:
        yield Rmq(cluster)
    finally:
        cluster.stop()


pytest_runtest_makereport = cluster_logs_hook(lambda value: value.cluster if isinstance(value, Rmq) else None)
