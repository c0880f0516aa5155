"""End-to-end tests on real pods: the three-node cluster of ``scripts/k8s-up --nodes 3`` (``localkube``), the
project's images built from its Dockerfiles with buildah and imported into the node's containerd,
and the Helm chart installed as a user installs it. Nothing here reaches a broker except through
the cluster: no loopback brokers, no address overrides.

Fixtures:

- ``node_cluster`` (package) -> ``KubeCluster`` bound to the cluster's admin kubeconfig (``kubectl``,
  ``helm``, ``get``, ``apply``, ``wait_until``). Brought up by the session if it was not running,
  and then removed after the last e2e test, with a check that nothing is left on the host.
- ``images`` (package) -> ``E2EImages``: the project and Spark image names, built and imported.
- ``operator_release`` (package): the chart installed in ``pyrocketmq-system`` with those images.
- ``faults`` -> ``NodeFaults``: freeze, isolate or drain nodes; whatever the test left is undone.

Needs root (containers, network) and the tools ``scripts/k8s-up`` installs. Without them the
tests skip locally and fail with ``CI=true``. Cluster start and image builds run right after
collection, outside every test's timeout, and report their wall time.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from localkube import (  # noqa: E402
    images as lk_images,
    node as lk_node,
    tools as lk_tools,
    worker as lk_worker,
)
from tests.e2e.helpers import NodeFaults  # noqa: E402
from tests.helpers import prereq  # noqa: E402
from tests.k8s.cluster import KubeCluster  # noqa: E402

TAG = "e2e"
NODES = 3  # every e2e test shares one cluster of three nodes, one per zone
RELEASE = "pyrocketmq"
OPERATOR_NAMESPACE = "pyrocketmq-system"


@dataclass(frozen=True)
class E2EImages:
    project: str  # docker.io/library/pyrocketmq:e2e
    spark: str
    repository: str  # as a pod spec names it: pyrocketmq
    tag: str


@dataclass
class _Session:
    started_here: bool = False
    error: str | None = None
    prerequisite: bool = False
    images: E2EImages | None = None
    timings: dict[str, float] | None = None


_session = _Session()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: runs on real pods of the local three-node cluster (root)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.e2e)


def _say(session: pytest.Session):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")

    def progress(message: str) -> None:
        if reporter is not None:
            reporter.write_line(f"[e2e] {message}")

    return progress


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the cluster and build the images before the first test (a cold start builds binaries)."""
    if session.config.option.collectonly:
        return
    if not any(HERE in Path(str(item.path)).resolve().parents for item in session.items):
        return
    progress = _say(session)
    if os.geteuid() != 0:
        _session.error, _session.prerequisite = "the e2e tests run containers and need root", True
        return
    layout = lk_node.layout_from_env()
    timings: dict[str, float] = {}
    try:
        # The images first: they need only the Debian packages, so on a cold machine they are
        # built while the Kubernetes binaries still compile (scripts/test.sh starts that build).
        t0 = time.monotonic()
        lk_node.install_packages(progress)
        # With a start signal the tests wait for other lanes anyway: builds and imports yield the
        # CPU to those lanes (beside them at full share, Spark jobs there starved into time-outs).
        background = bool(os.environ.get(START_AFTER))
        built = lk_images.build_project_images(TAG, spark=True, progress=progress, background=background)
        timings["image builds"] = time.monotonic() - t0
        t0 = time.monotonic()
        _session.started_here = not lk_node.healthy(layout)
        lk_node.up(layout, progress, nodes=NODES)
        timings["cluster up"] = time.monotonic() - t0
        t0 = time.monotonic()
        lk_tools.ensure(["prometheus"], progress=progress)  # for the metrics test, on the node
        timings["prometheus build"] = time.monotonic() - t0
        t0 = time.monotonic()
        lk_worker.import_images(layout, built, progress, background=background)
        timings["image imports"] = time.monotonic() - t0
    except (lk_tools.PrerequisiteMissing, lk_images.ImageError) as exc:
        _session.error, _session.prerequisite = str(exc), True
    except lk_node.ClusterError as exc:
        _session.error = f"the local cluster did not start: {exc}"
    else:
        _session.images = E2EImages(built[0], built[1], "pyrocketmq", TAG)
    _session.timings = timings
    progress("; ".join(f"{k} {v:.0f} s" for k, v in timings.items()))
    _wait_for_start_signal(progress)


START_AFTER = "PYROCKETMQ_E2E_START_AFTER"
"""A file whose appearance the e2e tests wait for once the cluster and images are ready: the test
command sets it so that the pods' tests run after the CPU-heavy worker lane, not beside it (on two
cores, Spark jobs and broker pods beside that lane starved each other into time-outs)."""


def _wait_for_start_signal(progress) -> None:
    signal = os.environ.get(START_AFTER)
    if not signal or os.path.exists(signal):
        return
    t0 = time.monotonic()
    progress(f"ready; waiting for {signal} before the tests")
    while not os.path.exists(signal):
        time.sleep(1)
    progress(f"started after waiting {time.monotonic() - t0:.0f} s")


def _remove_cluster(progress) -> list[str]:
    """Remove the cluster if this session started it; return what was left on the host."""
    if not _session.started_here:
        return []
    _session.started_here = False
    t0 = time.monotonic()
    left = lk_node.down(lk_node.layout_from_env(), progress)
    progress(f"cluster removed in {time.monotonic() - t0:.0f} s")
    return left


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A fallback: the package fixture removes the cluster after the last e2e test."""
    left = _remove_cluster(_say(session))
    if left:
        _say(session)(f"LEFT BEHIND on the host: {left}")
        session.exitstatus = 1


@pytest.fixture(scope="package")
def node_cluster(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[KubeCluster]:
    """The cluster; removed (if this session started it) once the last e2e test is done, so the
    rest of the suite does not share the machine with it."""
    if _session.error is not None:
        if _session.prerequisite:
            prereq.missing_prerequisite("e2e", _session.error)
        pytest.fail(_session.error)
    layout = lk_node.layout_from_env()
    bins = lk_tools.bin_dir()
    workdir = tmp_path_factory.mktemp("e2e")
    env = dict(os.environ)
    env.update(
        KUBECONFIG=str(layout.kubeconfig),
        PATH=f"{bins}{os.pathsep}{env.get('PATH', '')}",
        KUBECACHEDIR=str(workdir / "kube-cache"),
        HELM_CACHE_HOME=str(workdir / "helm" / "cache"),
        HELM_CONFIG_HOME=str(workdir / "helm" / "config"),
        HELM_DATA_HOME=str(workdir / "helm" / "data"),
    )
    yield KubeCluster(
        workdir,
        bins,
        layout.server,
        layout.kubeconfig,
        layout.pki / "ca.crt",
        None,  # type: ignore[arg-type]  (no PKI object: the node's certificates are in layout.pki)
        env,
    )
    left = _remove_cluster(_say(request.session))
    assert not left, f"left behind on the host after k8s-down: {left}"


@pytest.fixture(scope="package")
def images(node_cluster: KubeCluster) -> E2EImages:
    assert _session.images is not None
    return _session.images


@pytest.fixture(scope="package")
def operator_release(node_cluster: KubeCluster, images: E2EImages) -> Iterator[str]:
    """``helm install`` of charts/pyrocketmq with the built image; uninstalled at the end."""
    node_cluster.helm(
        "install", RELEASE, str(REPO_ROOT / "charts" / "pyrocketmq"),
        "-n", OPERATOR_NAMESPACE, "--create-namespace",
        "--set", f"image.repository={images.repository}", "--set", f"image.tag={images.tag}",
        "--set", "image.pullPolicy=Never", "--set", "operator.resyncInterval=10",
        "--set", "monitoring.scrapeConfigs.enabled=true",
        "--wait", "--timeout", "180s",
        timeout=240,
    )  # fmt: skip
    try:
        yield OPERATOR_NAMESPACE
    finally:
        if not _session.started_here:  # a cluster this session started goes as a whole, right after
            node_cluster.helm("uninstall", RELEASE, "-n", OPERATOR_NAMESPACE, "--wait", check=False, timeout=180)
            node_cluster.kubectl("delete", "namespace", OPERATOR_NAMESPACE, "--ignore-not-found", check=False)



@pytest.fixture
def faults(node_cluster: KubeCluster) -> Iterator[NodeFaults]:
    done = NodeFaults(node_cluster)
    try:
        yield done
    finally:
        done.restore()
