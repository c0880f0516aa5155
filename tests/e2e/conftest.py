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

In parallel workers (``-n 2 --dist loadscope --no-loadscope-reorder``, as the test command runs
them) the xdist controller builds, starts and installs once before its workers start, and removes
it all after the last of them; the workers read what it set up from a state file. Each module has
its own namespace and runs on one worker; a module marked ``node_faults`` runs while no other module
runs, and those modules are collected last.

Needs root (containers, network) and the tools ``scripts/k8s-up`` installs. Without them the
tests skip locally and fail with ``CI=true``. Cluster start and image builds run right after
collection, outside every test's timeout, and report their wall time.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
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
    spark_node: str = "pyrocketmq-node-1"  # the one node holding the Spark image: Spark's pods run there


@dataclass
class _Session:
    started_here: bool = False
    error: str | None = None
    prerequisite: bool = False
    images: list[str] | None = None  # the project and Spark image names, built and imported
    timings: dict[str, float] | None = None
    release: bool = False  # the chart, installed by the xdist controller for all its workers

    def save(self, path: str) -> None:
        Path(path).write_text(json.dumps(dataclasses.asdict(self)))

    def load(self, path: str) -> None:
        for key, value in json.loads(Path(path).read_text()).items():
            setattr(self, key, value)


_session = _Session()

STATE = "PYROCKETMQ_E2E_STATE"
"""Set by the xdist controller for its workers: the file holding what it set up for them."""

START_AFTER = "PYROCKETMQ_E2E_START_AFTER"
"""A file whose appearance the e2e tests wait for once the cluster and images are ready: the test
command sets it so that the pods' tests run after the CPU-heavy worker lane, not beside it (on two
cores, Spark jobs and broker pods beside that lane starved each other into time-outs)."""


FAULTS_STARTED = "PYROCKETMQ_E2E_FAULTS_STARTED"
"""A file the first ``node_faults`` module creates once it runs: from then on only those modules run,
one at a time, and they leave most of the CPU idle (the test command starts its control-plane lane
then)."""


def _worker() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ


def _controller(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not _worker()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: runs on real pods of the local three-node cluster (root)")
    config.addinivalue_line(
        "markers", "node_faults: freezes, isolates or drains nodes: runs while no other e2e module runs"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [item for item in items if HERE in Path(str(item.path)).resolve().parents]
    for item in mine:
        item.add_marker(pytest.mark.e2e)
    # Parallel workers take modules in this order: the longest first, the ones that fault nodes last
    # (they run alone: the other worker runs the rest side by side before them).
    def rank(item: pytest.Item) -> int:
        if item.get_closest_marker("node_faults"):
            return 2
        return 0 if Path(str(item.path)).name in LONGEST else 1

    items.sort(key=rank)  # stable: each module's tests keep their order


LONGEST = ("test_spark_on_pods.py",)  # about 4 minutes, a Spark job on pods


def _say(config: pytest.Config):
    reporter = config.pluginmanager.get_plugin("terminalreporter")

    def progress(message: str) -> None:
        if reporter is not None:
            reporter.write_line(f"[e2e] {message}")

    return progress


def _set_up(progress) -> None:
    """Build the images, start the cluster and import the images (a cold start builds binaries)."""
    if os.geteuid() != 0:
        _session.error, _session.prerequisite = "the e2e tests run containers and need root", True
        return
    layout = lk_node.layout_from_env()
    timings: dict[str, float] = {}
    # With a start signal the tests wait for other lanes anyway: builds and imports yield the CPU to
    # those lanes (beside them at full share, Spark jobs there starved into time-outs).
    background = bool(os.environ.get(START_AFTER))
    # Prometheus, which only the metrics test runs, compiles beside the image builds, the cluster's
    # start and the imports, once the node's binaries are built (test.sh builds them; the cluster's
    # start must not wait behind Prometheus for the build lock).
    cluster_started = threading.Event()

    def build_prometheus() -> None:
        while not cluster_started.is_set() and not all(lk_tools.is_built(n) for n in lk_tools.NODE):
            cluster_started.wait(2)
        lk_tools.ensure(["prometheus"], progress=progress, background=background)

    prometheus = _in_thread(build_prometheus)
    try:
        # The images first: they need only the Debian packages, so on a cold machine they are
        # built while the Kubernetes binaries still compile (scripts/test.sh starts that build).
        t0 = time.monotonic()
        lk_node.install_packages(progress)
        built = lk_images.build_project_images(TAG, spark=True, progress=progress, background=background)
        timings["image builds"] = time.monotonic() - t0
        t0 = time.monotonic()
        _session.started_here = not lk_node.healthy(layout)
        lk_node.up(layout, progress, nodes=NODES)
        timings["cluster up"] = time.monotonic() - t0
        cluster_started.set()
        t0 = time.monotonic()
        # The Spark image (1.4 GB) goes to one node, where the Spark test pins its pods; the project
        # image to every node.
        project, spark = built[0], built[1]
        lk_worker.import_images(layout, [project], progress, background=background)
        lk_worker.import_images(layout, [spark], progress, background=background, only=[E2EImages.spark_node])
        timings["image imports"] = time.monotonic() - t0
        t0 = time.monotonic()
        prometheus()
        timings["prometheus build (after the imports)"] = time.monotonic() - t0
    except (lk_tools.PrerequisiteMissing, lk_images.ImageError) as exc:
        _session.error, _session.prerequisite = str(exc), True
    except lk_node.ClusterError as exc:
        _session.error = f"the local cluster did not start: {exc}"
    else:
        _session.images = built[:2]
    finally:
        cluster_started.set()  # the Prometheus thread stops waiting for the node's binaries
    _session.timings = timings
    progress("; ".join(f"{k} {v:.0f} s" for k, v in timings.items()))


def _in_thread(work):
    """Start ``work`` in a thread; the returned function waits for it and raises what it raised."""
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(work)
    pool.shutdown(wait=False)
    return future.result


def _wants_setup(session: pytest.Session) -> bool:
    return not session.config.option.collectonly


def pytest_sessionstart(session: pytest.Session) -> None:
    """The xdist controller sets up once, before its workers start (its hook runs before xdist's)."""
    if not _controller(session.config) or not _wants_setup(session):
        return
    progress = _say(session.config)
    _set_up(progress)
    if _session.error is None:
        try:
            _install_release(_kube(_controller_dir()), _e2e_images())
            _session.release = True
        except Exception as exc:  # the workers' tests fail with it
            _session.error = f"the chart did not install: {exc}"
    _wait_for_start_signal(progress)
    path = _controller_dir() / "session.json"
    _session.save(str(path))
    os.environ[STATE] = str(path)  # the workers inherit it


@functools.cache
def _controller_dir() -> Path:
    """The xdist controller's own files (state, helm's and kubectl's caches), removed at its end."""
    return Path(tempfile.mkdtemp(prefix="pyrocketmq-e2e-"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Without xdist: set up before the first test. In a worker: read what the controller set up."""
    if _worker():
        if os.environ.get(STATE):
            _session.load(os.environ[STATE])
        else:
            _session.error = "an e2e worker without the controller's state (run with -n, not -p xdist alone)"
        return
    if not _wants_setup(session):
        return
    if not any(HERE in Path(str(item.path)).resolve().parents for item in session.items):
        return
    progress = _say(session.config)
    _set_up(progress)
    _wait_for_start_signal(progress)


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
    """The xdist controller removes what it set up; without xdist this is a fallback for the package
    fixture, which removes the cluster right after the last e2e test."""
    if _worker():
        return
    progress = _say(session.config)
    if _session.release and not _session.started_here:  # a cluster this session started goes as a whole
        _uninstall_release(_kube(_controller_dir()))
    _session.release = False
    left = _remove_cluster(progress)
    if _controller(session.config):
        shutil.rmtree(_controller_dir(), ignore_errors=True)
    if left:
        progress(f"LEFT BEHIND on the host: {left}")
        session.exitstatus = 1


def _kube(workdir: Path) -> KubeCluster:
    layout = lk_node.layout_from_env()
    bins = lk_tools.bin_dir()
    env = dict(os.environ)
    env.update(
        KUBECONFIG=str(layout.kubeconfig),
        PATH=f"{bins}{os.pathsep}{env.get('PATH', '')}",
        KUBECACHEDIR=str(workdir / "kube-cache"),
        HELM_CACHE_HOME=str(workdir / "helm" / "cache"),
        HELM_CONFIG_HOME=str(workdir / "helm" / "config"),
        HELM_DATA_HOME=str(workdir / "helm" / "data"),
    )
    return KubeCluster(
        workdir,
        bins,
        layout.server,
        layout.kubeconfig,
        layout.pki / "ca.crt",
        None,  # type: ignore[arg-type]  (no PKI object: the node's certificates are in layout.pki)
        env,
    )


def _e2e_images() -> E2EImages:
    assert _session.images is not None
    return E2EImages(_session.images[0], _session.images[1], "pyrocketmq", TAG)


def _install_release(kube: KubeCluster, images: E2EImages) -> None:
    kube.helm(
        "install", RELEASE, str(REPO_ROOT / "charts" / "pyrocketmq"),
        "-n", OPERATOR_NAMESPACE, "--create-namespace",
        "--set", f"image.repository={images.repository}", "--set", f"image.tag={images.tag}",
        "--set", "image.pullPolicy=Never", "--set", "operator.resyncInterval=10",
        "--set", "monitoring.scrapeConfigs.enabled=true",
        # Users, managed certificates and the Secrets of spec.tls/acl/auth (least privilege, the
        # default, is checked in tests/k8s/test_helm_chart.py, where no other test shares the release)
        "--set", "rbac.manageSecrets=true",
        "--wait", "--timeout", "180s",
        timeout=240,
    )  # fmt: skip


def upgrade_release(kube: KubeCluster, *sets: str) -> None:
    """``helm upgrade --reuse-values`` of the shared release with ``--set`` ``sets`` (``key=value``),
    one worker at a time (Helm refuses a second operation on a release while one is under way)."""
    state = os.environ.get(STATE)
    with open(state + ".release.lock" if state else os.devnull, "a") as fh:
        if state:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        kube.helm("upgrade", RELEASE, str(REPO_ROOT / "charts" / "pyrocketmq"), "-n", OPERATOR_NAMESPACE,
                  "--reuse-values", *(a for kv in sets for a in ("--set", kv)), "--wait", "--timeout", "120s",
                  timeout=180)  # fmt: skip


def _uninstall_release(kube: KubeCluster) -> None:
    kube.helm("uninstall", RELEASE, "-n", OPERATOR_NAMESPACE, "--wait", check=False, timeout=180)
    kube.kubectl("delete", "namespace", OPERATOR_NAMESPACE, "--ignore-not-found", check=False)


@pytest.fixture(scope="package")
def node_cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[KubeCluster]:
    """The cluster; removed (if this session started it) once the last e2e test is done, so the
    rest of the suite does not share the machine with it (in parallel workers: by the controller)."""
    if _session.error is not None:
        if _session.prerequisite:
            prereq.missing_prerequisite("e2e", _session.error)
        pytest.fail(_session.error)
    yield _kube(tmp_path_factory.mktemp("e2e"))
    if _worker():
        return
    left = _remove_cluster(_say(request.config))
    assert not left, f"left behind on the host after k8s-down: {left}"


@pytest.fixture(scope="package")
def images(node_cluster: KubeCluster) -> E2EImages:
    return _e2e_images()


@pytest.fixture(scope="package")
def operator_release(node_cluster: KubeCluster, images: E2EImages) -> Iterator[str]:
    """``helm install`` of charts/pyrocketmq with the built image; uninstalled at the end."""
    if _worker():  # the controller installed it for every worker, and removes it
        assert _session.release, "the xdist controller did not install the chart"
        yield OPERATOR_NAMESPACE
        return
    _install_release(node_cluster, images)
    try:
        yield OPERATOR_NAMESPACE
    finally:
        if not _session.started_here:  # a cluster this session started goes as a whole, right after
            _uninstall_release(node_cluster)


class _ModuleLock:
    """Across parallel workers: a module runs under a shared lock, a ``node_faults`` module under an
    exclusive one, so a node is never frozen, cut off or drained under another module's pods. Taken
    before a module's first test and released after its last, outside the tests' time-outs."""

    def __init__(self) -> None:
        self.fh = None

    def enter(self, item: pytest.Item) -> None:
        state = os.environ.get(STATE)
        if self.fh is not None or not state or not _worker():
            return
        self.fh = open(state + ".modules.lock", "a")  # noqa: SIM115 (held across hook calls)
        faults = item.get_closest_marker("node_faults") is not None
        fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX if faults else fcntl.LOCK_SH)
        if faults and os.environ.get(FAULTS_STARTED):
            Path(os.environ[FAULTS_STARTED]).touch()

    def leave(self) -> None:
        if self.fh is not None:
            self.fh.close()  # releases the lock
            self.fh = None


_module_lock = _ModuleLock()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    _module_lock.enter(item)
    try:
        yield
    finally:
        if nextitem is None or getattr(nextitem, "module", None) is not getattr(item, "module", None):
            _module_lock.leave()


@pytest.fixture
def faults(node_cluster: KubeCluster) -> Iterator[NodeFaults]:
    done = NodeFaults(node_cluster)
    try:
        yield done
    finally:
        done.restore()
