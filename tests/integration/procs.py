"""Real name-server and broker processes on loopback for integration tests.

Each process logs to a file under the test's tmp dir; a failed start shows the log's tail. Every
process started here is stopped (SIGTERM, then SIGKILL) by the fixture that started it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.cluster import free_port_run


def free_port(span: int = 1) -> int:
    """A free TCP port ``p`` on 127.0.0.1 such that ``p-2 .. p+span`` are free too (see
    :func:`tests.helpers.cluster.free_port_run`)."""
    return free_port_run(2, span)


def wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}:\n{tail(log)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} did not open within {timeout}s:\n{tail(log)}")


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_logged(line: str, proc: subprocess.Popen, log: Path, start: int, timeout: float = 30.0) -> None:
    """Until the process has written ``line`` to its log past byte ``start`` (this run's part)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log, "rb") as fh:
            fh.seek(start)
            if line.encode() in fh.read():
                return
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before logging {line!r}:\n{tail(log)}")
        time.sleep(0.05)
    raise RuntimeError(f"no {line!r} in the log within {timeout}s:\n{tail(log)}")


class Proc:
    def __init__(self, name: str, args: list[str], log: Path, port: int, ready: str | None = None) -> None:
        """``ready``: a line the process logs once it is ready, beyond its port being open."""
        self.name, self.args, self.log, self.port, self.ready = name, args, log, port, ready
        self.proc: subprocess.Popen | None = None

    def start(self) -> Proc:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.log, "ab")
        start = fh.tell()  # a restart appends: only what this run logs counts
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            self.args, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        fh.close()
        try:
            wait_port(self.port, self.proc, self.log)
            if self.ready is not None:
                wait_logged(self.ready, self.proc, self.log, start)
        except BaseException:
            self.kill9()  # never leave a process that did not come up behind
            raise
        return self

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, timeout: float = 15.0) -> int | None:
        p = self.proc
        if p is None or p.poll() is not None:
            return None if p is None else p.returncode
        p.send_signal(signal.SIGTERM)
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            return p.wait(5)

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def start_namesrv(tmp: Path, name: str = "namesrv", port: int | None = None, **sets: object) -> Proc:
    """A name server; ``sets`` are namesrv.conf keys (``--set``)."""
    port = port or free_port()
    args = [sys.executable, "-m", "pyrocketmq", "namesrv", "--listen-port", str(port)]
    for key, value in sets.items():
        args += ["--set", f"{key}={value}"]
    return Proc(name, args, tmp / "logs" / f"{name}.log", port).start()


BROKER_READY = "; registered with "
"""What a broker logs once its first registration with the name servers has ended (well or not)."""


def write_broker_conf(tmp: Path, namesrv: str, port: int, name: str = "broker-a", **extra: object) -> Path:
    conf = {
        "brokerClusterName": "DefaultCluster",
        "brokerName": name,
        "brokerId": 0,
        "namesrvAddr": namesrv,
        "listenPort": port,
        "brokerIP1": "127.0.0.1",
        "storePathRootDir": str(tmp / name / "store"),
        "flushDiskType": "ASYNC_FLUSH",
        "autoCreateTopicEnable": "true",
        "mappedFileSizeCommitLog": 16 * 1024 * 1024,
    }
    conf.update(extra)
    path = tmp / f"{name}.conf"
    path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
    return path


def start_broker(
    tmp: Path, namesrv: str, name: str = "broker-a", port: int | None = None, **extra: object
) -> Proc:
    port = port or free_port(span=1)
    conf = write_broker_conf(tmp, namesrv, port, name, **extra)
    # A broker serves before its first registration with the name servers ends: a client that routes
    # through them (a send to a topic the broker would create from TBW102) could find no route yet.
    return Proc(
        name,
        [sys.executable, "-m", "pyrocketmq", "broker", "-c", str(conf)],
        tmp / "logs" / f"{name}.log",
        port,
        ready=BROKER_READY,
    ).start()
