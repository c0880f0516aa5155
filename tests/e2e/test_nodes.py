"""The session's cluster has three real nodes: one per zone, each with its own pod network, reaching
each other's pods and the Services (which the host reaches too, through its own kube-proxy);
``scripts/k8s-node`` freezes and isolates one of them as a hung machine or a cut cable would, and
undoes it."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from localkube import config as lk_config
from tests.e2e.conftest import NODES, REPO_ROOT, E2EImages
from tests.e2e.helpers import delete_namespace
from tests.k8s.cluster import KubeCluster

pytestmark = pytest.mark.node_faults  # runs while no other e2e module runs

PORT = 8080


def _echo_pod(name: str, node: str, image: str) -> dict:
    """A pod on ``node`` serving its own name on PORT (python3 of the base image)."""
    script = (
        "import socket\n"
        f"s = socket.create_server(('', {PORT}))\n"
        "while True:\n"
        f"    c, _ = s.accept(); c.sendall(b'{name}'); c.close()\n"
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "echo", "echo": name}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "echo",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["python3", "-u", "-c", script],
                    "resources": {"requests": {"cpu": "5m", "memory": "16Mi"}},
                }
            ],
        },
    }


def _ask(address: str, timeout: float = 2) -> str:
    """What the echo server at ``address`` says, or '' if it does not answer in time."""
    try:
        with socket.create_connection((address, PORT), timeout=timeout) as conn:
            conn.settimeout(timeout)
            return conn.recv(64).decode()
    except OSError:
        return ""


def _ask_from(kube: KubeCluster, ns: str, pod: str, target: str) -> str:
    """What ``target`` (an address or a name) answers to a connection made inside ``pod``."""
    code = (
        "import socket,sys\n"
        "try:\n"
        f"    c = socket.create_connection((sys.argv[1], {PORT}), timeout=2); print(c.recv(64).decode())\n"
        "except OSError as e:\n"
        "    print('unreachable', e)\n"
    )
    return kube.kubectl("exec", "-n", ns, pod, "--", "python3", "-c", code, target, timeout=30).stdout.strip()


def _node_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO_ROOT / "scripts" / "k8s-node"), *args], capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def _ready(kube: KubeCluster, node: str) -> bool:
    conditions = kube.get("node", node)["status"]["conditions"]
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _ready_endpoints(kube: KubeCluster, ns: str) -> set[str]:
    """The pod addresses the echo Service's EndpointSlices list as ready."""
    slices = kube.get("endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=echo")["items"]
    return {
        address
        for endpoint_slice in slices
        for endpoint in endpoint_slice.get("endpoints") or []
        if (endpoint.get("conditions") or {}).get("ready")
        for address in endpoint["addresses"]
    }


@pytest.fixture(scope="module")
def echoes(node_cluster: KubeCluster, images: E2EImages) -> Iterator[tuple[str, dict[str, str]]]:
    """One echo pod per node, and a Service over all of them: (namespace, {node: pod IP})."""
    kube = node_cluster
    ns = kube.create_namespace("nodes")
    base = lk_config.HELPER_IMAGE
    names = {n.name: f"echo-{n.index}" for n in lk_config.nodes(NODES)}
    for node, pod in names.items():
        kube.apply(_echo_pod(pod, node, base), "-n", ns)
    kube.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "echo"},
                "spec": {"selector": {"app": "echo"}, "ports": [{"port": PORT}]}}, "-n", ns)  # fmt: skip
    try:
        kube.kubectl(
            "wait", "-n", ns, "--for=condition=Ready", "pod", "-l", "app=echo", "--timeout=120s", timeout=150
        )
        ips = {node: kube.get("pod", pod, "-n", ns)["status"]["podIP"] for node, pod in names.items()}
        kube.wait_until(lambda: _ready_endpoints(kube, ns) == set(ips.values()), timeout=60,
                        what="the echo Service's endpoints")  # fmt: skip
        yield ns, ips
    finally:
        for node in names:  # whatever a failed test left
            _node_script(node, "thaw")
            _node_script(node, "heal")
        delete_namespace(kube, ns)


def test_three_nodes_one_per_zone_each_with_its_own_pod_network(node_cluster: KubeCluster, echoes) -> None:
    ns, ips = echoes
    nodes = node_cluster.get("nodes")["items"]
    zones = {n["metadata"]["name"]: n["metadata"]["labels"].get("topology.kubernetes.io/zone") for n in nodes}
    assert zones == {n.name: n.zone for n in lk_config.nodes(NODES)}
    assert sorted(zones.values()) == ["zone-a", "zone-b", "zone-c"]
    for node in lk_config.nodes(NODES):
        assert ipaddress.ip_address(ips[node.name]) in ipaddress.ip_network(node.pod_cidr), (node, ips)
        assert _ask(ips[node.name]) == f"echo-{node.index}"  # the host reaches every node's pods


def test_pods_reach_pods_on_other_nodes_services_and_dns(node_cluster: KubeCluster, echoes) -> None:
    ns, ips = echoes
    for node in lk_config.nodes(NODES):
        others = [o for o in lk_config.nodes(NODES) if o != node]
        for other in others:
            assert _ask_from(node_cluster, ns, f"echo-{node.index}", ips[other.name]) == f"echo-{other.index}"
        # the Service by name: CoreDNS on the control plane, kube-proxy's rules on this node, which
        # follow the Service's endpoints within kube-proxy's sync period
        answer = ""
        deadline = time.monotonic() + 20
        while not answer.startswith("echo-") and time.monotonic() < deadline:
            answer = _ask_from(node_cluster, ns, f"echo-{node.index}", f"echo.{ns}.svc")
        assert answer.startswith("echo-"), (node.name, answer)


def test_the_host_reaches_a_service_through_its_cluster_ip(node_cluster: KubeCluster, echoes) -> None:
    """The control plane's own kube-proxy: a process on the host (this one) connects to a Service's
    ClusterIP and reaches its pods on every node, as on a cluster whose control-plane machines run
    kube-proxy too."""
    ns, _ = echoes
    cluster_ip = node_cluster.get("service", "echo", "-n", ns)["spec"]["clusterIP"]
    assert ipaddress.ip_address(cluster_ip) in ipaddress.ip_network(lk_config.SERVICE_CIDR)
    every = {f"echo-{n.index}" for n in lk_config.nodes(NODES)}
    answers: set[str] = set()
    deadline = time.monotonic() + 30
    while not every <= answers and time.monotonic() < deadline:
        answers.add(_ask(cluster_ip))  # kube-proxy picks one of the three at random each time
    assert answers - {""} == every, f"{cluster_ip}:{PORT} answered {sorted(answers)}"


def test_an_isolated_node_is_cut_off_from_the_others_and_comes_back(
    node_cluster: KubeCluster, echoes
) -> None:
    ns, ips = echoes
    cut, other = lk_config.nodes(NODES)[1], lk_config.nodes(NODES)[0]
    result = _node_script(cut.name, "isolate")
    assert result.returncode == 0 and '"isolated": true' in result.stdout, result.stderr
    try:
        assert _ask_from(node_cluster, ns, f"echo-{other.index}", ips[cut.name]).startswith("unreachable")
        assert _ask(ips[cut.name]) == f"echo-{cut.index}"  # its processes run; the host still sees it
    finally:
        assert _node_script(cut.name, "heal").returncode == 0
    assert _ask_from(node_cluster, ns, f"echo-{other.index}", ips[cut.name]) == f"echo-{cut.index}"


def test_a_frozen_node_stops_answering_goes_not_ready_and_recovers_on_thaw(
    node_cluster: KubeCluster, echoes
) -> None:
    ns, ips = echoes
    frozen = lk_config.nodes(NODES)[2]
    result = _node_script(frozen.name, "freeze")
    assert result.returncode == 0 and '"frozen": true' in result.stdout, result.stderr
    try:
        assert _ask(ips[frozen.name]) == ""  # the pod's process is stopped: the connection is never served
        deadline = time.monotonic() + 90
        while _ready(node_cluster, frozen.name) and time.monotonic() < deadline:
            time.sleep(1)
        assert not _ready(node_cluster, frozen.name), "the frozen node was still Ready after 90 s"
    finally:
        assert _node_script(frozen.name, "thaw").returncode == 0
    node_cluster.wait_until(
        lambda: _ready(node_cluster, frozen.name), timeout=60, what=f"{frozen.name} Ready"
    )
    assert _ask(ips[frozen.name], timeout=5) == f"echo-{frozen.index}"


def test_k8s_node_refuses_bad_arguments_with_usage() -> None:
    for args in ([], ["pyrocketmq-node-1"], ["pyrocketmq-node-1", "explode"], ["nonsense", "freeze"]):
        result = _node_script(*args)
        assert result.returncode == 2 and "usage: scripts/k8s-node" in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
