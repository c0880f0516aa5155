"""One node of the local cluster: start it, stop it, and do to it what a hung machine or a cut
cable does (``scripts/k8s-node NAME freeze|thaw|isolate|heal|status``).

A node is a network namespace linked to the host's bridge (``config.Node``: its address, its pods'
range, its zone) with its own containerd + runc, kubelet and kube-proxy, its own state directory
and its own cgroup: the daemons run in ``<cgroup>/daemons`` (the runtime's shims stay there with
them), the kubelet puts its pods in ``<cgroup>/kubepods``. So:

- freeze stops every process of the node at once with the cgroup freezer: the kubelet stops
  reporting, the pods stop answering and nothing of it runs until thaw, as on a machine that hangs;
- isolate drops everything the bridge would carry between the node and the other nodes (and
  their pods) while its processes keep running; the control plane, on the host, still reaches it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from localkube import config as cfg, host, images, pki

NODE_DAEMONS = ("containerd", "kubelet", "kube-proxy")  # start order; stop() goes in reverse
ZONE_LABEL = "topology.kubernetes.io/zone"

Progress = Callable[[str], None]


class NodeError(RuntimeError):
    """A node did not start, or an action on it failed; the message says which and why."""


def daemon(node: cfg.Node, name: str) -> str:
    """The pid-file and log name of one of a node's daemons."""
    return f"{node.name}-{name}"


def running(layout: cfg.Layout, node: cfg.Node) -> dict[str, bool]:
    return {name: host.daemon_pid(daemon(node, name), layout.run) is not None for name in NODE_DAEMONS}


def present(layout: cfg.Layout) -> list[cfg.Node]:
    """The nodes this cluster has (a state directory each)."""
    root = layout.state / "nodes"
    found = [cfg.node_named(p.name) for p in root.iterdir() if p.is_dir()] if root.is_dir() else []
    return sorted(found, key=lambda n: n.index)


# -- configuration ------------------------------------------------------------------------------


def write_configs(layout: cfg.Layout, node: cfg.Node) -> None:
    d = layout.node_dir(node)
    (d / "cni").mkdir(parents=True, exist_ok=True)
    layout.local_path(node).mkdir(parents=True, exist_ok=True)
    identity = f"kubelet-{node.name}"
    if not (layout.pki / f"{identity}.crt").is_file():
        ca = (layout.pki / "ca.crt", layout.pki / "ca.key")
        pki.issue(layout.pki, identity, f"/O=system:nodes/CN=system:node:{node.name}", ca)
    creds = pki.cert_credentials(layout.pki / f"{identity}.crt", layout.pki / f"{identity}.key")
    pki.write_kubeconfig(d / "kubelet.kubeconfig", layout.server, layout.pki / "ca.crt", identity, creds,
                         cfg.CLUSTER_NAME)  # fmt: skip
    _write(d / "containerd.toml", cfg.containerd_config(layout, node))
    _write(d / "cni" / "10-pyrocketmq.conflist", cfg.cni_config(layout, node))
    _write(d / "kubelet.json", cfg.kubelet_config(layout, node))
    _write(d / "kube-proxy.json", cfg.kube_proxy_config(layout, node))


def _write(path: Path, text: str) -> None:
    """Write ``path`` unless it already says ``text``: a running kube-proxy exits when its
    configuration file is written to, even with the same content (adding nodes rewrites them all)."""
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def link(node: cfg.Node, others: list[cfg.Node]) -> None:
    """The node's network namespace and veth, and the routes between its pods and everyone else's:
    the host and every other node reach its pods through its address, directly over the bridge."""
    host.ensure_node_link(node.netns, node.veth, cfg.BRIDGE, f"{node.ip}/24", cfg.CONTROL_IP)
    host.route(node.pod_cidr, node.ip)
    for other in others:
        if other.index == node.index:
            continue
        host.route(other.pod_cidr, other.ip, netns=node.netns)
        if (host.NETNS_DIR / other.netns).exists():
            host.route(node.pod_cidr, node.ip, netns=other.netns)


# -- start and stop -----------------------------------------------------------------------------


def _wait(what: str, check: Callable[[], bool], timeout: float, layout: cfg.Layout, node: cfg.Node,
          name: str) -> None:  # fmt: skip
    def error(message: str) -> NodeError:
        return NodeError(f"{node.name}: {message}")

    host.wait_for(
        what, check, timeout, daemon=daemon(node, name), run_dir=layout.run, logs=layout.logs, error=error
    )


def start(layout: cfg.Layout, nodes: list[cfg.Node], bins: Path, progress: Progress) -> None:
    """Start the nodes' daemons (those not running yet): the runtimes first, then the images every
    node needs (into all at once), then the kubelets and proxies; the caller waits for Ready."""

    def launch(node: cfg.Node, name: str, argv: list) -> None:
        if host.daemon_pid(daemon(node, name), layout.run) is None:
            host.start_daemon(daemon(node, name), argv, layout.run, layout.logs,
                              netns=node.netns, cgroup=f"{node.cgroup}/daemons")  # fmt: skip

    for node in nodes:
        host.ensure_cgroup(f"{node.cgroup}/daemons")
        launch(node, "containerd", ["containerd", f"--config={layout.node_dir(node) / 'containerd.toml'}"])
    for node in nodes:
        socket = layout.containerd_socket(node)
        _wait("the containerd socket", socket.exists, 60, layout, node, "containerd")
    base = [images.ensure_pause(progress), images.ensure_base(progress)]
    images.import_into_containerd(base, [layout.containerd_socket(n) for n in nodes], progress)
    for node in nodes:
        d = layout.node_dir(node)
        launch(node, "kubelet", [
            bins / "kubelet", f"--config={d / 'kubelet.json'}", f"--kubeconfig={d / 'kubelet.kubeconfig'}",
            f"--root-dir={d / 'kubelet'}", f"--cert-dir={d / 'kubelet-pki'}",
            f"--hostname-override={node.name}", f"--node-ip={node.ip}",
            f"--node-labels={ZONE_LABEL}={node.zone}", "--v=1",
        ])  # fmt: skip
        launch(node, "kube-proxy", [bins / "kube-proxy", f"--config={d / 'kube-proxy.json'}", "--v=1"])


def import_images(
    layout: cfg.Layout, names: list[str], progress: Progress, *, background: bool = False,
    only: Sequence[str] = (),
) -> int:
    """Import images into every node whose runtime runs (``only``: into the nodes of these names);
    return how many nodes got them.

    ``background``: the nodes' runtimes unpack at the smallest CPU share, yielding to everything
    else running on the machine (the e2e lane imports while other tests run)."""
    nodes = [n for n in present(layout) if running(layout, n)["containerd"] and (not only or n.name in only)]
    if nodes:
        with host.low_cpu_share([n.cgroup for n in nodes] if background else []):
            images.import_into_containerd(names, [layout.containerd_socket(n) for n in nodes], progress)
    return len(nodes)


def proxy_healthy(node: cfg.Node) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{node.ip}:{cfg.PROXY_HEALTHZ_PORT}/healthz", timeout=3) as resp:
            return resp.status == 200
    except OSError:
        return False


def wait_proxy(layout: cfg.Layout, node: cfg.Node, timeout: float = 60) -> None:
    _wait("kube-proxy healthy", lambda: proxy_healthy(node), timeout, layout, node, "kube-proxy")


def stop(layout: cfg.Layout, node: cfg.Node) -> None:
    """Stop the node's daemons and whatever its runtime left (shims, containers); thawed first."""
    if host.is_frozen(node.cgroup):
        host.freeze_cgroup(node.cgroup, False)
    for name in reversed(NODE_DAEMONS):
        host.stop_daemon(daemon(node, name), layout.run)
    socket = layout.containerd_socket(node)
    host.kill_matching(str(socket))
    runc_root = layout.node_dir(node) / "containerd" / "runc"
    if runc_root.is_dir() and shutil.which("runc"):
        for ns_root in runc_root.iterdir():
            for ctr in ns_root.iterdir() if ns_root.is_dir() else ():
                subprocess.run(["runc", "--root", str(ns_root), "delete", "--force", ctr.name],
                               capture_output=True, timeout=30)  # fmt: skip


def remove_links(nodes: list[cfg.Node]) -> None:
    """Every node namespace and veth, also of nodes whose state is already gone, and their routes."""
    names = {n.netns for n in nodes} | set(host.node_netns())
    for netns in sorted(names):
        node = cfg.node_named(netns.removeprefix("pyrmq-node-"))
        if host.is_isolated(node.veth):
            host.set_isolated(node.veth, False)
        host.run(["ip", "route", "delete", node.pod_cidr], check=False)
        host.remove_node_link(node.netns, node.veth)


def leftovers() -> list[str]:
    found = [f"netns {name}" for name in host.node_netns()]
    found += [f"link {line.split(':')[1].strip().split('@')[0]}"
              for line in host.run(["ip", "-o", "link", "show"], check=False).splitlines()
              if line.split(":")[1].strip().startswith("pyrmqv")]  # fmt: skip
    return found


# -- faults -------------------------------------------------------------------------------------


def freeze(layout: cfg.Layout, node: cfg.Node) -> None:
    host.freeze_cgroup(node.cgroup, True)


def thaw(layout: cfg.Layout, node: cfg.Node) -> None:
    host.freeze_cgroup(node.cgroup, False)


def isolate(layout: cfg.Layout, node: cfg.Node) -> None:
    host.set_isolated(node.veth, True)


def heal(layout: cfg.Layout, node: cfg.Node) -> None:
    host.set_isolated(node.veth, False)


def state(layout: cfg.Layout, node: cfg.Node) -> dict[str, object]:
    return {
        "node": node.name,
        "zone": node.zone,
        "address": node.ip,
        "pods": node.pod_cidr,
        "daemons": running(layout, node),
        "frozen": host.is_frozen(node.cgroup),
        "isolated": host.is_isolated(node.veth),
    }


ACTIONS = {"freeze": freeze, "thaw": thaw, "isolate": isolate, "heal": heal}
USAGE = """usage: scripts/k8s-node NODE freeze|thaw|isolate|heal|status

  NODE     pyrocketmq-node-<k> (or just <k>), a node of the cluster scripts/k8s-up started
  freeze   stop every process of the node (kubelet, containerd, kube-proxy, its pods) at once
  thaw     let them run again
  isolate  cut the node off from the other nodes and their pods; its processes keep running
  heal     reconnect it
  status   print the node's state as JSON"""


def main(argv: list[str]) -> int:
    from localkube.node import layout_from_env

    if len(argv) != 2 or argv[1] not in (*ACTIONS, "status"):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        node = cfg.node_named(argv[0])
    except ValueError as exc:
        print(f"{exc}\n\n{USAGE}", file=sys.stderr)
        return 2
    layout = layout_from_env()
    if node not in present(layout):
        have = ", ".join(n.name for n in present(layout)) or "none: start one with scripts/k8s-up"
        print(f"error: the cluster has no node {node.name} (nodes: {have})", file=sys.stderr)
        return 1
    if argv[1] != "status":
        ACTIONS[argv[1]](layout, node)
    print(json.dumps(state(layout, node), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
