"""Start and stop server processes for integration and conformance tests.

- ``free_port()`` / ``free_broker_port()``: loopback ports that are free right now. A broker needs
  three: ``listenPort``, ``listenPort + 1`` (HA) and ``listenPort - 2`` (the "VIP"/fast channel the
  Java broker always opens), so ``free_broker_port()`` checks all of them.
- ``ManagedProcess``: a subprocess in its own session, logging to a file, stopped with SIGTERM then
  SIGKILL; ``tail()`` for failure reports. Every process started here is also stopped at interpreter
  exit, so an aborted test run leaves nothing behind.
- ``start_pyrocketmq_cluster()``: our name server + one master broker, launched through the agreed CLI
  (``python -m pyrocketmq namesrv --listen-port P`` / ``python -m pyrocketmq broker -c broker.conf``);
  ``start_server_process()``: one name server or broker alone, with the arguments given.

Nothing here imports ``pyrocketmq``: the helpers must work while the code under test is broken.
"""

from __future__ import annotations

import atexit
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

_handed_out: set[int] = set()
_live: list[ManagedProcess] = []


def _bindable(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel considers free now (it may be taken by someone else before you bind it)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise RuntimeError("no free port found")


def _worker_slice(low: int, high: int) -> tuple[int, int]:
    """This pytest-xdist worker's share of ``[low, high)``: workers of one run pick ports from
    disjoint slices, so one cannot take a port another has picked and not yet bound."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    if not worker.startswith("gw") or not worker[2:].isdigit() or count <= 1:
        return low, high
    size = (high - low) // count
    start = low + int(worker[2:]) % count * size
    return start, start + size


def free_port_run(below: int = 2, above: int = 1, host: str = "127.0.0.1", low: int = 20000,
                  high: int = 32000) -> int:
    """A port ``p`` such that ``p-below .. p+above`` are all free (a broker's ``listenPort``: ``-2`` is
    its fast channel, ``+1`` its HA port).

    Picked at random below Linux's ephemeral range (32768+), so outgoing connections of other
    processes cannot grab one between now and the bind, and from this xdist worker's own slice.
    """
    low, high = _worker_slice(low, high)
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(500):
        port = rng.randrange(low + below, high - above)
        group = range(port - below, port + above + 1)
        if any(p in _handed_out for p in group):
            continue
        if all(_bindable(p, host) for p in group):
            _handed_out.update(group)
            return port
    raise RuntimeError(f"no {below + above + 1} free ports in a row found in {low}-{high}")


def free_broker_port(host: str = "127.0.0.1") -> int:
    """A ``listenPort`` such that it, ``+1`` (HA) and ``-2`` (fast channel) are all free."""
    return free_port_run(2, 1, host)


def write_properties(path: Path, values: Mapping[str, object]) -> Path:
    """Write a Java-style ``key=value`` file (RocketMQ's broker.conf / namesrv.conf format)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for key, value in values.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        lines.append(f"{key}={text.replace(chr(92), chr(92) * 2)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def wait_for_tcp(host: str, port: int, timeout: float, alive: Callable[[], bool] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise RuntimeError(f"process exited before {host}:{port} accepted connections")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"{host}:{port} did not accept connections within {timeout:.0f} s")


@dataclass
class ManagedProcess:
    """One server subprocess with its output in ``log_path``."""

    name: str
    argv: Sequence[str]
    log_path: Path
    cwd: Path | None = None
    env: Mapping[str, str] | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> ManagedProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(self.env or {})
        with open(self.log_path, "ab") as log:
            log.write(f"$ {' '.join(map(str, self.argv))}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [str(a) for a in self.argv],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.cwd,
                env=env,
                start_new_session=True,
            )
        _live.append(self)
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def wait_for_log(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.log_text():
                return
            if not self.alive():
                raise RuntimeError(
                    f"{self.name} exited (code {self.proc and self.proc.returncode}) "
                    f"before logging {needle!r}:\n{self.tail()}"
                )
            time.sleep(0.1)
        raise TimeoutError(f"{self.name} did not log {needle!r} within {timeout:.0f} s:\n{self.tail()}")

    def stop(self, grace: float = 20.0) -> int | None:
        """SIGTERM the process group, SIGKILL after ``grace`` seconds; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait(10)
        # children of the session (if any) go too
        self._signal(signal.SIGKILL)
        if self in _live:
            _live.remove(self)
        return self.proc.returncode

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


@atexit.register
def _stop_leftovers() -> None:
    for p in list(_live):
        p.stop(grace=5)


def stop_all(processes: Sequence[ManagedProcess]) -> None:
    """Stop in reverse start order (broker before name server) and assert every one is gone."""
    for p in reversed(processes):
        p.stop()
    for p in processes:
        assert p.proc is None or p.proc.poll() is not None, f"{p.name} (pid {p.pid}) is still running"


@dataclass
class Cluster:
    """What a test needs to reach a running name server + broker, whoever implements them."""

    kind: str  # "apache" or "pyrocketmq"
    namesrv_addr: str
    broker_addr: str
    broker_name: str
    cluster_name: str
    home: Path
    processes: list[ManagedProcess]

    def log_tails(self, lines: int = 60) -> str:
        return "\n".join(f"===== {p.name} ({p.log_path}) =====\n{p.tail(lines)}" for p in self.processes)

    def alive(self) -> bool:
        return all(p.alive() for p in self.processes)

    def stop(self) -> None:
        stop_all(self.processes)

    def failed_to_start(self, what: str, exc: BaseException) -> RuntimeError:
        """Stop what has started; the error to raise for ``exc``, carrying the processes' log tails."""
        tails = self.log_tails()
        self.stop()
        return RuntimeError(f"{what} did not start: {exc}\n{tails}")


def cluster_logs_hook(
    cluster_of: Callable[[object], Cluster | None],
) -> Callable[[pytest.Item, pytest.CallInfo], Generator[None, Any, None]]:
    """A conftest's ``pytest_runtest_makereport = cluster_logs_hook(...)``: when a test's setup or call
    failed, the log tails of each cluster that ``cluster_of`` finds among its arguments go into its
    report."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        if report.failed and call.when in ("setup", "call"):
            for value in getattr(item, "funcargs", {}).values():
                cluster = cluster_of(value)
                if cluster is not None:
                    report.sections.append((f"{cluster.kind} cluster logs (tail)", cluster.log_tails()))

    return pytest_runtest_makereport


def broker_identity(namesrv_addr: str, listen_port: int) -> dict[str, object]:
    """The broker.conf keys that make a broker ``broker-a`` (id 0) of ``DefaultCluster`` on 127.0.0.1."""
    return {
        "brokerClusterName": "DefaultCluster",
        "brokerName": "broker-a",
        "brokerId": 0,
        "namesrvAddr": namesrv_addr,
        "listenPort": listen_port,
        "brokerIP1": "127.0.0.1",
    }


def pyrocketmq_broker_conf(namesrv_addr: str, listen_port: int, store: Path, **overrides: object) -> dict:
    """The broker.conf keys the agreed CLI understands (RocketMQ names)."""
    conf: dict[str, object] = {
        **broker_identity(namesrv_addr, listen_port),
        "storePathRootDir": store,
        "flushDiskType": "ASYNC_FLUSH",
        "autoCreateTopicEnable": True,
        "mappedFileSizeCommitLog": 64 * 1024 * 1024,
    }
    conf.update(overrides)
    return conf


def start_server_process(
    role: str, args: Sequence[object], log_dir: Path, port: int, timeout: float = 30.0
) -> ManagedProcess:
    """``python -m pyrocketmq <role> <args>`` (``namesrv`` or ``broker``), logging to
    ``log_dir/<role>.log``; returns once ``port`` accepts TCP (stopped again if it never does)."""
    process = ManagedProcess(role, [sys.executable, "-m", "pyrocketmq", role, *map(str, args)],
                             log_dir / f"{role}.log", env={"PYTHONUNBUFFERED": "1"}).start()
    try:
        wait_for_tcp("127.0.0.1", port, timeout, process.alive)
    except BaseException:
        process.stop()
        raise
    return process


def start_pyrocketmq_cluster(
    home: Path,
    *,
    python: str | None = None,
    timeout: float = 30.0,
    ready: Callable[[Cluster], None] | None = None,
    broker_overrides: Mapping[str, object] | None = None,
    env: Mapping[str, str] | None = None,
    namesrv_port: int | None = None,
) -> Cluster:
    """Start our name server and one master broker under ``home``; return once both accept TCP.

    ``ready`` (optional) is called with the cluster after the ports are open and should block until
    the cluster is usable (e.g. the broker's routes are registered), raising otherwise. On any
    failure the processes are stopped and the error carries their log tails. ``namesrv_port`` is the
    name server's port (default: a free one).
    """
    python = python or sys.executable
    home.mkdir(parents=True, exist_ok=True)
    ns_port = namesrv_port or free_port()
    broker_port = free_broker_port()
    namesrv_addr = f"127.0.0.1:{ns_port}"
    conf = pyrocketmq_broker_conf(namesrv_addr, broker_port, home / "store", **dict(broker_overrides or {}))
    conf_path = write_properties(home / "broker.conf", conf)
    env = {"PYTHONUNBUFFERED": "1", **dict(env or {})}
    namesrv = ManagedProcess(
        "pyrocketmq-namesrv",
        [python, "-m", "pyrocketmq", "namesrv", "--listen-port", str(ns_port)],
        home / "namesrv.log",
        cwd=REPO_ROOT,
        env=env,
    )
    broker = ManagedProcess(
        "pyrocketmq-broker",
        [python, "-m", "pyrocketmq", "broker", "-c", str(conf_path)],
        home / "broker.log",
        cwd=REPO_ROOT,
        env=env,
    )
    cluster = Cluster(
        "pyrocketmq",
        namesrv_addr,
        f"127.0.0.1:{broker_port}",
        str(conf["brokerName"]),
        str(conf["brokerClusterName"]),
        home,
        [namesrv],
    )
    try:
        namesrv.start()
        wait_for_tcp("127.0.0.1", ns_port, timeout, namesrv.alive)
        cluster.processes.append(broker.start())
        wait_for_tcp("127.0.0.1", broker_port, timeout, broker.alive)
        if ready is not None:
            ready(cluster)
    except BaseException as exc:
        raise cluster.failed_to_start("pyrocketmq cluster", exc) from exc
    return cluster


def start_pyrocketmq_slave(
    namesrv_addr: str,
    home: Path,
    *,
    python: str | None = None,
    broker_overrides: Mapping[str, object] | None = None,
    timeout: float = 30.0,
) -> tuple[ManagedProcess, int]:
    """Start our broker as brokerId 1, SLAVE of broker-a (the master's HA address comes from the
    name server); returns the process, accepting TCP, and its listen port."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_broker_port()
    conf = pyrocketmq_broker_conf(namesrv_addr, port, home / "store", **dict(broker_overrides or {}))
    conf.update(brokerId=1, brokerRole="SLAVE")
    slave = ManagedProcess(
        "pyrocketmq-slave",
        [
            python or sys.executable,
            "-m",
            "pyrocketmq",
            "broker",
            "-c",
            str(write_properties(home / "broker.conf", conf)),
        ],
        home / "broker.log",
        cwd=REPO_ROOT,
        env={"PYTHONUNBUFFERED": "1"},
    )
    slave.start()
    try:
        wait_for_tcp("127.0.0.1", port, timeout, slave.alive)
    except BaseException:
        slave.stop()
        raise
    return slave, port
