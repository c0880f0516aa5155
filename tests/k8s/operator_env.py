"""Helpers for the operator's tests against the real API server (``kube`` from conftest.py).

- :class:`OperatorProcess`: ``python -m pyrocketmq.operator`` as a subprocess with a kubeconfig
  (the admin's, or a ServiceAccount's to test the chart's RBAC), a short resync interval and fast
  backoff; ``restart()``, ``kill()`` for the restart test, its log for failure reports.
- fixtures to import into a test module: ``crds`` (the CRDs applied and Established), ``operator``
  (one cluster-wide operator per module), ``ns`` (a fresh namespace per test).
- small readers: ``conditions()``, ``wait_condition()``, ``objects()``.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cluster import ManagedProcess, free_port
from tests.k8s.cluster import KubeCluster

ROOT = Path(__file__).resolve().parents[2]
CRDS_DIR = ROOT / "crds"
EXAMPLES = ROOT / "examples"
CHART = ROOT / "charts" / "pyrocketmq"
CRD_NAMES = [f"{p}.pyrocketmq.io" for p in ("nameservers", "brokers", "topics", "consumergroups", "users")]
RESYNC = 2.0
TEST_IMAGE = "registry.invalid/pyrocketmq:test"  # never pulled: there is no kubelet


class OperatorProcess:
    """The operator in a subprocess, cluster-wide unless namespaces are given."""

    def __init__(
        self,
        kube: KubeCluster,
        workdir: Path,
        *,
        kubeconfig: Path | None = None,
        namespaces: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        name: str = "operator",
    ) -> None:
        self.kube, self.workdir, self.name = kube, workdir, name
        self.kubeconfig = kubeconfig or kube.kubeconfig
        self.namespaces = namespaces
        self.extra_env = env or {}
        self.proc: ManagedProcess | None = None
        self.starts = 0

    def start(self) -> OperatorProcess:
        self.starts += 1
        health, metrics = free_port(), free_port()
        self.health_url = f"http://127.0.0.1:{health}/healthz"
        self.metrics_url = f"http://127.0.0.1:{metrics}/metrics"
        scope = [a for ns in self.namespaces for a in ("-n", ns)] or ["--all-namespaces"]
        argv = [sys.executable, "-m", "pyrocketmq.operator", *scope, "--resync-interval", str(RESYNC),
                "--liveness", self.health_url, "--metrics-port", str(metrics), "--log-level", "INFO"]
        env = {
            **self.kube.env,
            "KUBECONFIG": str(self.kubeconfig),
            "PYROCKETMQ_OPERATOR_IMAGE": TEST_IMAGE,
            "PYROCKETMQ_OPERATOR_RESYNC_INITIAL_DELAY": "0.5",
            "PYROCKETMQ_OPERATOR_BACKOFF_BASE": "0.5",
            "PYROCKETMQ_OPERATOR_BACKOFF_MAX": "4",
            "PYROCKETMQ_OPERATOR_ADMIN_TIMEOUT": "2",
            **self.extra_env,
        }
        self.proc = ManagedProcess(
            self.name, argv, self.workdir / f"{self.name}.log", cwd=self.workdir, env=env
        ).start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not self.proc.alive():
                raise RuntimeError(f"the operator exited:\n{self.proc.tail(60)}")
            try:
                with urllib.request.urlopen(self.health_url, timeout=1) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"the operator's liveness endpoint did not answer:\n{self.proc.tail(60)}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def stop(self) -> int | None:
        return self.proc.stop(grace=15) if self.proc else None

    def kill(self) -> None:
        """SIGKILL: no cleanup, as a crashed or evicted operator."""
        if self.proc is not None and self.proc.proc is not None:
            self.proc.proc.kill()
            self.proc.proc.wait(10)

    def restart(self) -> OperatorProcess:
        self.stop()
        return self.start()

    def log(self) -> str:
        return self.proc.log_text() if self.proc else ""

    def metrics(self) -> str:
        with urllib.request.urlopen(self.metrics_url, timeout=5) as resp:
            return resp.read().decode()


def install_crds(kube: KubeCluster) -> None:
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRDS_DIR))
    kube.kubectl("wait", "--for=condition=Established", *(f"crd/{n}" for n in CRD_NAMES), "--timeout=60s")


@pytest.fixture(scope="module")
def crds(kube: KubeCluster) -> KubeCluster:
    install_crds(kube)
    return kube


@pytest.fixture(scope="module")
def operator(crds: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    op = OperatorProcess(crds, tmp_path_factory.mktemp("operator")).start()
    try:
        yield op
    finally:
        op.stop()
        # Every failure the operator met was an expected one (a reason on a condition), never a crash.
        assert "reconcile failed unexpectedly" not in op.log(), op.log()[-6000:]


@pytest.fixture
def ns(kube: KubeCluster) -> Iterator[str]:
    name = kube.create_namespace("op")
    yield name
    kube.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


# -- readers ----------------------------------------------------------------------------------------


def get(kube: KubeCluster, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
    proc = kube.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def conditions(obj: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in ((obj or {}).get("status") or {}).get("conditions") or ()}


def wait_for(
    kube: KubeCluster, fn, timeout: float = 30, what: str = "condition", op: OperatorProcess | None = None
):
    try:
        return kube.wait_until(fn, timeout, what)
    except TimeoutError as e:
        if op is not None:
            raise TimeoutError(
                f"{e}\n--- operator log (tail) ---\n{op.proc.tail(80) if op.proc else ''}"
            ) from None
        raise


def wait_condition(
    kube: KubeCluster,
    kind: str,
    name: str,
    namespace: str,
    type_: str,
    status: str,
    reason: str | None = None,
    timeout: float = 30,
    op: OperatorProcess | None = None,
) -> dict[str, Any]:
    def check():
        obj = get(kube, kind, name, namespace)
        cond = conditions(obj).get(type_)
        if cond and cond["status"] == status and (reason is None or cond.get("reason") == reason):
            return obj
        return None

    return wait_for(kube, check, timeout, f"{kind}/{name} {type_}={status} {reason or ''}", op)


def names(kube: KubeCluster, kind: str, namespace: str, selector: str | None = None) -> list[str]:
    args = ["-l", selector] if selector else []
    return sorted(o["metadata"]["name"] for o in kube.get(kind, "-n", namespace, *args)["items"])


def events(kube: KubeCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    items = kube.get("events", "-n", namespace, "--field-selector", f"involvedObject.name={name}")["items"]
    return items
