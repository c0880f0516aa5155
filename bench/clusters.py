"""Start our broker or Apache RocketMQ's with comparable settings, and sample their processes.

Apache's side of a 4.x-protocol row is two releases, each run the same way (one starter,
``apache.start_apache_cluster``, parameterised by ``apache.Release``): 4.9.7 (``apache``), the
release our protocol sheet was read from, and 5.5.1 (``apache55``), the newest; the gRPC rows
compare with 5.2.0's proxy in local mode (``apache5``). Every broker gets the same ``flushDiskType``,
the same commitlog segment size (``mappedFileSizeCommitLog``, RocketMQ's 1 GiB default), stores under
one work directory (one disk), and a pre-created topic with the same number of queues. The Apache
brokers run with the JDK 17 module openings of the conformance harness (5.x: one more) and
``runbroker.sh``'s G1 flags, with the heap scaled from 8 GiB down to 2 GiB for a 2-core / 24 GiB
machine (no ``AlwaysPreTouch``, so its RSS is what it touches, as ours is).

``ProcessSampler`` reads ``/proc/<pid>/stat`` (utime + stime, in clock ticks) and
``/proc/<pid>/status`` (``VmRSS``) of one broker process on a background thread; a scenario takes a
``mark()`` before and a ``since(mark)`` after, giving CPU seconds and the peak RSS of that window.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.relay import RegistrationRelay
from tests.conformance import apache, apache5, maven
from tests.helpers.cluster import (
    REPO_ROOT,
    Cluster,
    ManagedProcess,
    free_port,
    start_pyrocketmq_cluster,
    start_pyrocketmq_slave,
)

SEGMENT_SIZE = 1024 * 1024 * 1024
QUEUES = 8

# runbroker.sh (4.9.x) uses -Xms8g -Xmx8g -Xmn4g and 15g direct memory with these G1 settings.
APACHE_BROKER_HEAP = [
    "-Xms2g",
    "-Xmx2g",
    "-Xmn1g",
    "-XX:MaxDirectMemorySize=2g",
    "-XX:+UseG1GC",
    "-XX:G1HeapRegionSize=16m",
    "-XX:G1ReservePercent=25",
    "-XX:InitiatingHeapOccupancyPercent=30",
    "-XX:SoftRefLRUPolicyMSPerMB=0",
    "-XX:-OmitStackTraceInFastThrow",
]

KINDS = ("pyrocketmq", "apache")
"""The sides of a row (``--brokers``): ours, and Apache's (the ``--peers`` its protocol has)."""
RELEASES = {"apache": apache.V4_9_7, "apache55": apache.V5_5_1}
"""The Apache brokers started by ``apache.start_apache_cluster``, by kind."""
PEERS = {"remoting": ("apache", "apache55"), "grpc5": ("apache5",)}
"""Apache's kinds a row of each protocol is compared with: for the 4.x remoting protocol 4.9.7's and
5.5.1's brokers, for gRPC 5.2.0's proxy in local mode (its broker in the proxy's process)."""
VERSIONS = {**{kind: release.version for kind, release in RELEASES.items()}, "apache5": maven.SERVER5.version}
"""The Apache RocketMQ version of each peer (row labels, the JSON's ``meta.peers``)."""
_TICKS = os.sysconf("SC_CLK_TCK")


MODES = ("ASYNC_FLUSH", "SYNC_FLUSH", "SYNC_MASTER")
"""What a run varies: the flush mode of a lone master, or a SYNC_MASTER (asynchronous flush) whose
every send waits for its slave, both on this machine (master and slave of the same implementation)."""


def broker_settings(flush: str) -> dict[str, object]:
    """broker.conf keys both brokers share for a run."""
    replicated = flush == "SYNC_MASTER"
    return {
        "flushDiskType": "ASYNC_FLUSH" if replicated else flush,
        "brokerRole": "SYNC_MASTER" if replicated else "ASYNC_MASTER",
        "mappedFileSizeCommitLog": SEGMENT_SIZE,
        "autoCreateTopicEnable": True,
        # 2 busy cores: a send queued for up to 1 s is not "busy" (the conformance harness does the same)
        "waitTimeMillsInSendQueue": 1000,
    }


def start(kind: str, home: Path, flush: str, *, grpc: bool = False, topics: int = 0,
          relay: RegistrationRelay | None = None) -> tuple[Cluster, str | None]:
    """Start ``kind``'s name server + broker under ``home`` (wiped first); with ``grpc``, its 5.x
    endpoint too; for SYNC_MASTER, its slave as well, returning once a send is acknowledged by both.
    With ``topics``, the store starts with that many topics (``write_topics``); with ``relay``, the
    broker registers with its name server through it. Returns the cluster and the gRPC endpoint
    (None without ``grpc``)."""
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    if topics:
        write_topics(home / "store", topics)
    cluster, endpoint = _start_master(kind, home, flush, grpc=grpc, relay=relay)
    if topics:
        try:
            wait_for_route(cluster, f"{TOPIC_PREFIX}{topics - 1}")
        except BaseException:
            cluster.stop()
            raise
    if flush == "SYNC_MASTER":
        try:
            if kind in RELEASES:
                slave, _ = apache.start_apache_slave(cluster.namesrv_addr, home / "slave",
                                                     broker_overrides=broker_settings(flush),
                                                     broker_heap=APACHE_BROKER_HEAP,
                                                     release=RELEASES[kind])  # fmt: skip
            elif kind == "pyrocketmq":
                slave, _ = start_pyrocketmq_slave(cluster.namesrv_addr, home / "slave",
                                                  broker_overrides=broker_settings(flush))  # fmt: skip
            cluster.processes.append(slave)
            wait_replicated(cluster)
        except BaseException:
            cluster.stop()
            raise
    return cluster, endpoint


def wait_replicated(cluster: Cluster, timeout: float = 90) -> None:
    """Until a send to the master answers SEND_OK (a SYNC_MASTER without its slave answers
    SLAVE_NOT_AVAILABLE)."""
    from pyrocketmq.client import Message, SyncProducer

    deadline = time.monotonic() + timeout
    last = ""
    with SyncProducer("BenchProbe", cluster.namesrv_addr) as producer:
        while time.monotonic() < deadline:
            try:
                status = producer.send(Message("BenchProbe", b"probe")).status.name
                if status == "SEND_OK":
                    return
                last = status
            except Exception as exc:  # noqa: BLE001 — the route or the topic may not be there yet
                last = f"{type(exc).__name__}: {exc}"
            time.sleep(0.5)
    raise RuntimeError(f"the master did not acknowledge a replicated send in {timeout:.0f} s (last: {last})")


def wait_for_route(cluster: Cluster, topic: str, timeout: float = 120) -> None:
    """Until the name server routes ``topic`` (our start returns once the ports accept, Apache's once
    TBW102 has a route: a broker with thousands of topics may register later than either)."""
    from pyrocketmq.client import SyncAdmin
    from tests.helpers.routes import wait_for_route as wait

    with SyncAdmin(cluster.namesrv_addr) as admin:
        wait(admin, topic, timeout)


def _start_master(kind: str, home: Path, flush: str, *, grpc: bool,
                  relay: RegistrationRelay | None) -> tuple[Cluster, str | None]:
    overrides = broker_settings(flush)
    ns_port = None
    if relay is not None:
        ns_port = relay.target_port = free_port()
        overrides["namesrvAddr"] = relay.addr
    if kind in RELEASES:
        return apache.start_apache_cluster(
            home, broker_overrides=overrides, broker_heap=APACHE_BROKER_HEAP,
            release=RELEASES[kind], namesrv_port=ns_port,
        ), None
    if kind == "apache5":
        return apache5.start_apache5_cluster(
            home, broker_overrides=broker_settings(flush), broker_heap=APACHE_BROKER_HEAP
        )
    if kind == "pyrocketmq":
        endpoint = None
        if grpc:
            port = free_port()
            overrides["grpcListenPort"] = port
            endpoint = f"127.0.0.1:{port}"
        return start_pyrocketmq_cluster(home, python=sys.executable, broker_overrides=overrides,
                                        namesrv_port=ns_port), endpoint
    raise ValueError(f"unknown broker kind {kind!r}")


TOPIC_PREFIX = "BenchTopic_"
"""The many-topics rows' topics: ``BenchTopic_0`` … ``BenchTopic_<n-1>``."""


def write_topics(store: Path, count: int, queues: int = QUEUES) -> None:
    """``<store>/config/topics.json`` with ``count`` topics of ``queues`` read and write queues, in the
    shape every broker loads at start (``TopicConfigSerializeWrapper``, as a Java broker persists it;
    each adds its system topics beside them). The fastest way to give 10 000 topics to every broker
    alike: created one by one, each creation rewrites the whole file (4.9.7 and ours) and 4.9.7 has
    no batch request."""
    table = {
        f"{TOPIC_PREFIX}{i}": {"topicName": f"{TOPIC_PREFIX}{i}", "readQueueNums": queues,
                               "writeQueueNums": queues, "perm": 6, "topicFilterType": "SINGLE_TAG",
                               "topicSysFlag": 0, "order": False}
        for i in range(count)
    }
    doc = {"topicConfigTable": table, "dataVersion": {"timestamp": int(time.time() * 1000), "counter": 1}}
    (store / "config").mkdir(parents=True, exist_ok=True)
    (store / "config" / "topics.json").write_text(json.dumps(doc))


def open_files(pid: int) -> int:
    """How many file descriptors the process holds (``/proc/<pid>/fd``); 0 once it is gone."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def memory_maps(pid: int) -> int:
    """How many mappings the process has (``/proc/<pid>/maps`` lines; ``vm.max_map_count`` bounds it)."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            return sum(1 for _ in fh)
    except OSError:
        return 0


def broker_process(cluster: Cluster) -> ManagedProcess:
    return next(p for p in cluster.processes if p.name.endswith("broker"))


def admin(namesrv: str, *argv: str, timeout: float = 60) -> str:
    """Run our CLI's ``admin`` command (works against both brokers); returns stdout."""
    cmd = [sys.executable, "-m", "pyrocketmq", "admin", argv[0], "-n", namesrv, *argv[1:]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def create_topic(cluster: Cluster, topic: str, queues: int = QUEUES) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            admin(cluster.namesrv_addr, "updateTopic", "-c", cluster.cluster_name, "-t", topic,
                  "-r", str(queues), "-w", str(queues))
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def client_lib() -> Path:
    """The 4.9.8 client jars incl. rocketmq-example (the remoting rows' load generators), resolved from
    Maven Central and cached; each Apache broker resolves its own server jars when it starts."""
    return maven.resolve(maven.CLIENT)


def client5_lib() -> Path:
    """The official 5.x Java client (the gRPC scenarios' load generator)."""
    return maven.resolve(maven.CLIENT5)


@dataclass(frozen=True, slots=True)
class Usage:
    cpu_seconds: float
    peak_rss_mib: float
    """Resident set: the process's own memory plus the file pages of its mappings that are resident
    (the commitlog segments written in the window and before, so it grows with the data written)."""
    peak_anon_mib: float
    """Anonymous resident memory only (``RssAnon``): heap, stacks, the interpreter or the JVM; what the
    process holds whatever it has written."""


def stat_cpu_seconds(stat: str) -> float:
    """utime + stime (fields 14 and 15) of a ``/proc/<pid>/stat`` or ``/proc/<pid>/task/<tid>/stat`` text."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


class ProcessSampler:
    """Samples one process's CPU time and RSS every ``interval`` seconds on a daemon thread."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid = pid
        self.interval = interval
        self._peaks = (0, 0)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"sampler-{pid}", daemon=True)
        self._thread.start()

    def cpu_seconds(self) -> float:
        try:
            with open(f"/proc/{self.pid}/stat") as fh:
                return stat_cpu_seconds(fh.read())
        except OSError:
            return 0.0

    def memory(self) -> tuple[int, int]:
        """(VmRSS, RssAnon) in bytes; zeros once the process is gone."""
        rss = anon = 0
        try:
            with open(f"/proc/{self.pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1]) * 1024
                    elif line.startswith("RssAnon:"):
                        anon = int(line.split()[1]) * 1024
        except OSError:
            pass
        return rss, anon

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._note(self.memory())

    def _note(self, sample: tuple[int, int]) -> None:
        with self._lock:
            self._peaks = (max(self._peaks[0], sample[0]), max(self._peaks[1], sample[1]))

    def mark(self) -> float:
        """Start a window: resets the peak; returns the CPU seconds so far (pass it to ``since``)."""
        sample = self.memory()
        with self._lock:
            self._peaks = sample
        return self.cpu_seconds()

    def since(self, cpu_mark: float) -> Usage:
        self._note(self.memory())
        with self._lock:
            rss, anon = self._peaks
        return Usage(round(self.cpu_seconds() - cpu_mark, 2), round(rss / 2**20, 1), round(anon / 2**20, 1))

    def close(self) -> None:
        self._stop.set()
