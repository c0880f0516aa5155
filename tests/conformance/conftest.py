"""Fixtures for the conformance tests: unmodified Apache RocketMQ Java programs against a cluster.

Fixtures (all session-scoped):

- ``rocketmq_jars`` -> ``RocketMQJars(client: Path, server: Path)``: jar directories in the cache
  (``maven.py``), resolved from Maven Central on first use.
- ``java`` -> ``JavaPrograms``: the programs of ``java/`` compiled; ``java.run(main, args, timeout,
  jvm_props)`` returns a ``JavaResult`` (``.json()`` = the program's output document).
- ``apache_cluster`` -> ``Cluster``: Apache RocketMQ name server + broker (``apache.py``).
- ``pyrocketmq_cluster`` -> ``Cluster``: our name server + broker (``tests/helpers/cluster.py``).

A ``Cluster`` has ``kind, namesrv_addr, broker_addr, broker_name, cluster_name, home, processes``;
when a test fails, the servers' log tails are attached to its report.

Missing prerequisites (java, javac, mvn, Maven Central) skip the tests, except with ``CI=true``,
where they fail: a CI run must never go green by skipping its conformance suite.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # so `tests.conformance` / `tests.helpers` import as packages
    sys.path.insert(0, str(REPO_ROOT))

from tests.conformance import apache, jvm, maven, probe  # noqa: E402
from tests.helpers import prereq  # noqa: E402
from tests.helpers.cluster import Cluster, cluster_logs_hook, start_pyrocketmq_cluster  # noqa: E402


def missing_prerequisite(reason: str) -> None:
    prereq.missing_prerequisite("conformance", reason)


@dataclass(frozen=True, slots=True)
class RocketMQJars:
    client: Path  # rocketmq-client/tools 4.9.8 (+ example 4.7.0) closure
    server: Path  # rocketmq-namesrv/broker 4.9.7 closure


@pytest.fixture(scope="session")
def rocketmq_jars() -> RocketMQJars:
    try:
        jvm.java_executable()
        return RocketMQJars(client=maven.resolve(maven.CLIENT), server=maven.resolve(maven.SERVER))
    except maven.PrerequisiteMissing as exc:
        missing_prerequisite(str(exc))
        raise  # unreachable: skip/fail raise


# Both brokers check unresolved transactions every 2 s instead of RocketMQ's 60 s (half messages still
# wait the default 6 s before a check), so the check-back scenarios do not idle for a minute.
TEST_BROKER_CONF = {"transactionCheckInterval": 2000}


@pytest.fixture(scope="session")
def java(rocketmq_jars: RocketMQJars, tmp_path_factory: pytest.TempPathFactory) -> jvm.JavaPrograms:
    programs = jvm.JavaPrograms(rocketmq_jars.client, log_dir=tmp_path_factory.mktemp("java-client-logs"))
    try:
        programs.compile()
    except maven.PrerequisiteMissing as exc:
        missing_prerequisite(str(exc))
    return programs


@pytest.fixture(scope="session")
def apache_cluster(rocketmq_jars: RocketMQJars, tmp_path_factory: pytest.TempPathFactory):
    cluster = apache.start_apache_cluster(
        tmp_path_factory.mktemp("apache-rocketmq"), broker_overrides=TEST_BROKER_CONF
    )
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def pyrocketmq_cluster(tmp_path_factory: pytest.TempPathFactory):
    def registered(c: Cluster) -> None:
        probe.wait_for_route(c.namesrv_addr, "TBW102", timeout=30, alive=c.alive)

    cluster = start_pyrocketmq_cluster(tmp_path_factory.mktemp("pyrocketmq"), ready=registered,
                                       broker_overrides=TEST_BROKER_CONF)
    try:
        yield cluster
    finally:
        cluster.stop()


pytest_runtest_makereport = cluster_logs_hook(lambda value: value if isinstance(value, Cluster) else None)


@pytest.fixture(scope="session")
def java5(tmp_path_factory: pytest.TempPathFactory) -> jvm.JavaPrograms:
    """The programs of ``java5/`` compiled against the official 5.x Java client (gRPC)."""
    try:
        jvm.java_executable()
        lib = maven.resolve(maven.CLIENT5)
        programs = jvm.JavaPrograms(lib, log_dir=tmp_path_factory.mktemp("java5-client-logs"),
                                    sources=jvm.JAVA_SOURCES.with_name("java5"))
        programs.compile()
    except maven.PrerequisiteMissing as exc:
        missing_prerequisite(str(exc))
        raise
    return programs
