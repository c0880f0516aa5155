"""Fixtures for tests against a real Kubernetes control plane (``cluster.py``), built by ``tools.py``.

Fixtures:

- ``kube_bin_dir`` (session) -> ``Path`` holding ``kube-apiserver``, ``kube-controller-manager``,
  ``kubectl``, ``etcd`` and ``helm``, built from the Go module proxy on first use and cached under
  ``${PYROCKETMQ_CACHE:-~/.cache/pyrocketmq}/k8s/<version>/bin``.
- ``kube`` (session) -> ``cluster.KubeCluster``: etcd + kube-apiserver (RBAC) + kube-controller-manager
  on loopback, admin kubeconfig; stopped (and checked gone) at the end of the session.
- ``kube_namespace`` (function) -> ``str``: a fresh namespace, deleted after the test.

Every test in this directory gets the ``k8s`` marker. When a selected test uses ``kube``, the
binaries are built right after collection, outside any test's timeout (a cold build takes a while;
progress goes to the terminal). A missing prerequisite (Go, openssl, the module proxy, a failed
build) skips the tests, except with ``CI=true``, where it fails them: a CI run must never go green
by skipping its Kubernetes suite. A control plane that does not start is always an error.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
if str(REPO_ROOT) not in sys.path:  # so `tests.k8s` / `tests.helpers` import as packages
    sys.path.insert(0, str(REPO_ROOT))

from localkube import tools  # noqa: E402
from tests.helpers import prereq  # noqa: E402
from tests.k8s.cluster import KubeCluster, PrerequisiteMissing, start_kube  # noqa: E402

_build_error: str | None = None  # set by the post-collection build, reported by the fixture


def missing_prerequisite(reason: str) -> None:
    prereq.missing_prerequisite("k8s", reason)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "k8s: runs a real kube-apiserver + etcd (+ controller manager) on loopback"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.k8s)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the binaries now (not in a fixture) so a cold build does not count against a test's timeout."""
    global _build_error
    if session.config.option.collectonly:
        return
    if not any("kube_bin_dir" in getattr(item, "fixturenames", ()) for item in session.items):
        return
    if all(tools.is_built(name) for name in tools.NODE):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")

    def progress(message: str) -> None:
        if reporter is not None:
            reporter.write_line(f"[k8s tools] {message}")

    progress("first use: building the Kubernetes binaries from the Go module proxy (cached afterwards)")
    try:
        tools.ensure(progress=progress)
    except (tools.PrerequisiteMissing, OSError) as exc:
        _build_error = str(exc)
        progress(f"build failed: {exc}")


@pytest.fixture(scope="session")
def kube_bin_dir() -> Path:
    if _build_error is not None:
        missing_prerequisite(_build_error)
    try:
        return tools.ensure()
    except (tools.PrerequisiteMissing, OSError) as exc:
        missing_prerequisite(str(exc))
        raise  # unreachable: skip/fail raise


@pytest.fixture(scope="session")
def kube(kube_bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    try:
        cluster = start_kube(tmp_path_factory.mktemp("kube"), kube_bin_dir)
    except PrerequisiteMissing as exc:
        missing_prerequisite(str(exc))
        raise  # unreachable
    try:
        yield cluster
    finally:
        cluster.stop()  # asserts every process is gone


@pytest.fixture
def kube_namespace(kube: KubeCluster) -> Iterator[str]:
    name = kube.create_namespace("t")
    yield name
    kube.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.when in ("setup", "call"):
        cluster = getattr(item, "funcargs", {}).get("kube")
        if isinstance(cluster, KubeCluster):
            report.sections.append(("kubernetes control plane logs (tail)", cluster.log_tails()))
