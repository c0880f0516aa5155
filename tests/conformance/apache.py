"""Run an Apache RocketMQ name server + broker with ``java -cp``: 4.9.7 (the conformance peer), or any
other ``Release`` (5.5.1, the benchmarks' second 4.x-protocol peer) started the same way.

The shipped ``mqnamesrv``/``mqbroker`` scripts do not work on JDK 17 (``-Djava.ext.dirs``, CMS and
PermSize flags are fatal) and ask for 8 GiB heaps, so the JVMs are launched directly:

- ``-Drocketmq.home.dir=<home>``: both servers load ``<home>/conf/logback_{namesrv,broker}.xml`` at
  start and exit if it is missing; ours log to stdout, which goes to ``<home>/*.log``.
- ``-Duser.home=<home>``: several defaults (``kvConfig.json``, ``storePathCommitLog``, the config
  backup paths) live under ``user.home``; this keeps every file under the test's directory.
- ``SERVER_JDK17_FLAGS`` (jvm.py): module openings for the mmap cleanup code; 5.x also needs
  ``sun.nio.ch`` exported (``SERVER5_JDK17_FLAGS``).
- 5.x logs through its own logback configuration inside the jars (files under ``user.home/logs``)
  and ignores ``conf/logback_*.xml``; both print their boot line to stdout, which is what we wait for.
- Small heaps (``-Xmx512m``, ``-XX:MaxDirectMemorySize=512m``) and a 64 MiB commitlog segment.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.conformance import jvm, maven, probe
from tests.helpers.cluster import (
    Cluster,
    ManagedProcess,
    broker_identity,
    free_broker_port,
    free_port,
    wait_for_tcp,
    write_properties,
)

NAMESRV_MAIN = "org.apache.rocketmq.namesrv.NamesrvStartup"
BROKER_MAIN = "org.apache.rocketmq.broker.BrokerStartup"

SERVER_HEAP = ["-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m", "-XX:+UseG1GC"]


@dataclass(frozen=True, slots=True)
class Release:
    """One Apache RocketMQ server release: where its jars come from and what its JVM needs."""

    kind: str
    """Names the cluster and its processes (``<kind>-namesrv``, ``<kind>-broker``, ``<kind>-slave``)."""
    jars: maven.Profile
    """The name server + broker closure (``maven.resolve``)."""
    jdk17_flags: tuple[str, ...]
    """Module openings on JDK 17."""

    @property
    def version(self) -> str:
        return self.jars.version


V4_9_7 = Release("apache", maven.SERVER, tuple(jvm.SERVER_JDK17_FLAGS))
"""The conformance peer: the tag PROTOCOL.md was read from."""
V5_5_1 = Release("apache55", maven.SERVER55, tuple(jvm.SERVER5_JDK17_FLAGS))
"""The newest release: a 5.x broker serving the 4.x remoting protocol (no proxy)."""

_LOGBACK = """<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level [%thread] %logger{24} - %msg%n</pattern></encoder>
  </appender>
  <logger name="RocketmqStats" level="WARN"/>
  <logger name="RocketmqCommercial" level="WARN"/>
  <logger name="RocketmqWaterMark" level="WARN"/>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
"""


def boot_namesrv(namesrv: ManagedProcess, port: int, timeout: float) -> None:
    """Start an Apache name server; return once it has logged its boot and accepts on ``port``."""
    namesrv.start()
    namesrv.wait_for_log("The Name Server boot success", timeout)
    wait_for_tcp("127.0.0.1", port, timeout, namesrv.alive)


def apache_broker_conf(namesrv_addr: str, listen_port: int, home: Path) -> dict[str, object]:
    store = home / "store"
    return {
        **broker_identity(namesrv_addr, listen_port),
        "brokerRole": "ASYNC_MASTER",
        "flushDiskType": "ASYNC_FLUSH",
        "storePathRootDir": store,
        "storePathCommitLog": store / "commitlog",
        "autoCreateTopicEnable": True,
        "mappedFileSizeCommitLog": 64 * 1024 * 1024,
        # 2-core CI machines: queueing a send for up to 1 s is not "busy"
        "waitTimeMillsInSendQueue": 1000,
    }


def _server_argv(release: Release, home: Path, heap: Sequence[str], main: str, conf: Path) -> list[str]:
    """The JVM command line of an Apache name server or broker of ``release`` living under ``home``."""
    return [jvm.java_executable(), *heap, *release.jdk17_flags, f"-Drocketmq.home.dir={home}",
            f"-Duser.home={home}", "-Dfile.encoding=UTF-8",
            "-cp", maven.classpath(maven.resolve(release.jars)), main, "-c", str(conf)]  # fmt: skip


def start_apache_cluster(
    home: Path,
    *,
    timeout: float = 90.0,
    broker_overrides: Mapping[str, object] | None = None,
    broker_heap: Sequence[str] = SERVER_HEAP,
    release: Release = V4_9_7,
    namesrv_port: int | None = None,
) -> Cluster:
    """Start ``release``'s name server + master broker under ``home``; return once TBW102 has a route.

    ``broker_overrides`` replaces broker.conf keys (the benchmarks set the flush mode);
    ``broker_heap`` replaces the broker JVM's heap flags (the name server keeps ``SERVER_HEAP``);
    ``namesrv_port`` is the name server's port (default: a free one).
    """
    conf_dir = home / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "logback_namesrv.xml").write_text(_LOGBACK)
    (conf_dir / "logback_broker.xml").write_text(_LOGBACK)

    ns_port = namesrv_port or free_port()
    broker_port = free_broker_port()
    namesrv_addr = f"127.0.0.1:{ns_port}"
    ns_conf = write_properties(conf_dir / "namesrv.conf", {"listenPort": ns_port})
    broker_values = {**apache_broker_conf(namesrv_addr, broker_port, home), **dict(broker_overrides or {})}
    broker_conf = write_properties(conf_dir / "broker.conf", broker_values)

    namesrv = ManagedProcess(
        f"{release.kind}-namesrv",
        _server_argv(release, home, SERVER_HEAP, NAMESRV_MAIN, ns_conf),
        home / "namesrv.log",
        cwd=home,
    )
    broker = ManagedProcess(
        f"{release.kind}-broker",
        _server_argv(release, home, broker_heap, BROKER_MAIN, broker_conf),
        home / "broker.log",
        cwd=home,
    )
    cluster = Cluster(
        release.kind,
        namesrv_addr,
        f"127.0.0.1:{broker_port}",
        str(broker_values["brokerName"]),
        str(broker_values["brokerClusterName"]),
        home,
        [namesrv],
    )
    try:
        boot_namesrv(namesrv, ns_port, timeout)
        cluster.processes.append(broker.start())
        broker.wait_for_log("boot success", timeout)
        probe.wait_for_route(namesrv_addr, "TBW102", timeout, alive=cluster.alive)
    except BaseException as exc:
        raise cluster.failed_to_start(f"Apache RocketMQ {release.version}", exc) from exc
    return cluster


def run_mqadmin(home: Path, args: Sequence[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Apache's own ``mqadmin`` (``MQAdminStartup`` from the server distribution's jars) with ``args``.
    Its logs stay under ``home``; the message lookups write each body to ``/tmp/rocketmq/msgbodys``
    (a fixed path in Apache's tools): callers remove what they read."""
    lib = maven.resolve(maven.SERVER)
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "tmp").mkdir(exist_ok=True)
    (home / "conf" / "logback_tools.xml").write_text(_LOGBACK.replace('level="INFO"', 'level="WARN"'))
    cmd = [jvm.java_executable(), *jvm.CLIENT_JVM_FLAGS, f"-Drocketmq.home.dir={home}", f"-Duser.home={home}",
           f"-Djava.io.tmpdir={home / 'tmp'}",
           "-cp", maven.classpath(lib), "org.apache.rocketmq.tools.command.MQAdminStartup", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def start_apache_slave(
    namesrv_addr: str,
    home: Path,
    *,
    broker_overrides: Mapping[str, object] | None = None,
    broker_heap: Sequence[str] = SERVER_HEAP,
    timeout: float = 90.0,
    release: Release = V4_9_7,
) -> tuple[ManagedProcess, int]:
    """Start ``release``'s broker as brokerId 1, SLAVE of broker-a (it finds the master's HA address
    through the name server); returns the process, booted, and its listen port."""
    conf_dir = home / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "logback_broker.xml").write_text(_LOGBACK)
    port = free_broker_port()
    values = {**apache_broker_conf(namesrv_addr, port, home), **dict(broker_overrides or {}),
              "brokerId": 1, "brokerRole": "SLAVE"}  # fmt: skip
    conf = write_properties(conf_dir / "broker.conf", values)
    argv = _server_argv(release, home, broker_heap, BROKER_MAIN, conf)
    slave = ManagedProcess(f"{release.kind}-slave", argv, home / "broker.log", cwd=home)
    slave.start()
    try:
        slave.wait_for_log("boot success", timeout)
    except BaseException:
        slave.stop()
        raise
    return slave, port
