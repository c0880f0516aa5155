"""A Kubernetes cluster of one or more nodes on this machine: ``up()``, ``down()``, ``status()``.

The control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a kube-proxy in
iptables mode, CoreDNS, local-path-provisioner) runs on the host; each node (containerd + runc,
kubelet, kube-proxy in iptables mode) runs in a network namespace and cgroup of its own
(``worker``). The control plane's kube-proxy, in the host's own network namespace, makes Service
ClusterIPs reachable from the host, as on a cluster whose control-plane machines run kube-proxy
too: a process on the host connects to ``<ClusterIP>:<port>`` and reaches a ready endpoint on any
node. All are root processes started here, detached, with pid files and logs under the state
directory (``/var/lib/pyrocketmq-k8s`` unless ``PYROCKETMQ_K8S_STATE`` says otherwise); addresses
are in ``config``. ``up()`` is idempotent: a healthy cluster is left as it is, and one with fewer
nodes than asked for (or without the control plane's kube-proxy, as clusters started before it
had) gets the missing ones. ``down()`` undoes everything ``up()`` did, also after a crash half-way:
pods first (so CNI tears their networks down), then the processes, then iptables chains (the
host's own ``KUBE-*`` ones too), mounts, network namespaces, links, cgroups, the bridge, the
sysctls and the state directory.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from localkube import config as cfg, host, images, nfacct, pki, tools, worker

DEFAULT_STATE = Path("/var/lib/pyrocketmq-k8s")
APT_PACKAGES = {
    "containerd": "containerd",
    "runc": "runc",
    "/usr/lib/cni/bridge": "containernetworking-plugins",
    "iptables": "iptables",
    "ip": "iproute2",
    "buildah": "buildah",
    "debootstrap": "debootstrap",
    "openssl": "openssl",
    "mount": "mount",
}
# The control plane's, in start order (the nodes' start between the scheduler and CoreDNS);
# down() stops them in reverse.
DAEMONS = (
    "etcd",
    "kube-apiserver",
    "kube-proxy",  # the host's own: Service ClusterIPs reachable from the host
    "kube-controller-manager",
    "kube-scheduler",
    "coredns",
    "local-path-provisioner",
)

Progress = Callable[[str], None]


class ClusterError(RuntimeError):
    """The cluster could not be brought up; the message names the component and its log tail."""


def layout_from_env() -> cfg.Layout:
    return cfg.Layout(Path(os.environ.get("PYROCKETMQ_K8S_STATE") or DEFAULT_STATE))


# -- prerequisites ------------------------------------------------------------------------------


def _present(command: str) -> bool:
    """An absolute path exists, or a command name is on PATH."""
    return Path(command).exists() if "/" in command else shutil.which(command) is not None


def install_packages(progress: Progress) -> None:
    missing = sorted({pkg for cmd, pkg in APT_PACKAGES.items() if not _present(cmd)})
    if not missing:
        return
    if shutil.which("apt-get") is None:
        raise ClusterError(f"missing Debian packages {missing} and no apt-get to install them")
    progress(f"apt-get install {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True, timeout=600)
    proc = subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
        env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    if proc.returncode != 0:
        raise ClusterError(f"apt-get install {missing} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    # Debian's containerd package starts a system service where systemd runs; ours is separate.
    if Path("/run/systemd/system").is_dir():
        subprocess.run(["systemctl", "disable", "--now", "containerd"], capture_output=True)


# -- health -----------------------------------------------------------------------------------


def _admin_context(layout: cfg.Layout) -> ssl.SSLContext:
    return pki.client_context(layout.pki / "ca.crt", layout.pki / "admin.crt", layout.pki / "admin.key")


def api(layout: cfg.Layout, path: str) -> dict | None:
    status, body = pki.http_get(layout.server + path, _admin_context(layout))
    return json.loads(body) if status == 200 else None


def _wait(what: str, check: Callable[[], bool], timeout: float, layout: cfg.Layout, log: str) -> None:
    host.wait_for(what, check, timeout, daemon=log, run_dir=layout.run, logs=layout.logs, error=ClusterError,
                  watch=log in DAEMONS)


def node_ready(layout: cfg.Layout, node: cfg.Node) -> bool:
    found = api(layout, f"/api/v1/nodes/{node.name}")
    conditions = (found or {}).get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def status(layout: cfg.Layout, count: int = 0) -> dict[str, bool]:
    """Which daemons run, whether the API answers and whether each node is Ready (the nodes the
    cluster has, and at least ``count``)."""
    state = {name: host.daemon_pid(name, layout.run) is not None for name in DAEMONS}
    state["api"] = (
        layout.kubeconfig.is_file()
        and pki.http_get(layout.server + "/readyz", _admin_context(layout))[0] == 200
    )
    have = worker.present(layout)
    for node in cfg.nodes(max(count, len(have), 1)):
        for name, up in worker.running(layout, node).items():
            state[worker.daemon(node, name)] = up
        state[f"{node.name}-ready"] = state["api"] and node_ready(layout, node)
    return state


def healthy(layout: cfg.Layout, count: int = 1, *, ignore: tuple[str, ...] = ()) -> bool:
    """Every part of ``status`` is up, but for those named in ``ignore``."""
    try:
        return all(up for name, up in status(layout, count).items() if name not in ignore)
    except (OSError, ssl.SSLError):
        return False


def host_proxy_ready() -> bool:
    """The control plane's kube-proxy answers ``/livez`` and has written the Services' rules (the
    ``kubernetes`` Service's among them). Its ``/healthz`` says 503 for ever: that one also asks
    whether the proxy's Node may take load-balancer traffic, and the control plane has no Node."""
    if pki.http_get(f"http://{cfg.CONTROL_IP}:{cfg.HOST_PROXY_HEALTHZ_PORT}/livez")[0] != 200:
        return False
    rules = host.run(["iptables", "-w", "5", "-t", "nat", "-S", "KUBE-SERVICES"], check=False)
    return f"{cfg.KUBERNETES_SERVICE_IP}/32" in rules


# -- up -----------------------------------------------------------------------------------------


def _make_pki(layout: cfg.Layout) -> None:
    d = layout.pki
    if (d / "admin.crt").is_file():
        return
    ca = pki.make_ca(d, "pyrocketmq-local-ca")
    pki.issue(d, "apiserver", "/CN=kube-apiserver", ca, server_names=cfg.apiserver_sans(), client=False)
    identities = {
        "admin": "/O=system:masters/CN=pyrocketmq-admin",
        "controller-manager": "/CN=system:kube-controller-manager",
        "scheduler": "/CN=system:kube-scheduler",
        "kube-proxy": "/CN=system:kube-proxy",
        "front-proxy-client": "/CN=front-proxy-client",
    }
    for name, subject in identities.items():
        pki.issue(d, name, subject, ca)
    pki.service_account_keys(d)


def _kubeconfig(layout: cfg.Layout, path: Path, identity: str) -> Path:
    creds = pki.cert_credentials(layout.pki / f"{identity}.crt", layout.pki / f"{identity}.key")
    return pki.write_kubeconfig(path, layout.server, layout.pki / "ca.crt", identity, creds, cfg.CLUSTER_NAME)


def _write_configs(layout: cfg.Layout) -> None:
    etc = layout.etc
    etc.mkdir(parents=True, exist_ok=True)
    _kubeconfig(layout, layout.kubeconfig, "admin")
    for identity in ("controller-manager", "scheduler", "kube-proxy"):
        _kubeconfig(layout, etc / f"{identity}.kubeconfig", identity)
    (etc / "Corefile").write_text(cfg.corefile(layout))
    (etc / "resolv.conf").write_text(f"nameserver {cfg.DNS_SERVICE_IP}\n")
    (etc / "helperPod.json").write_text(cfg.helper_pod_yaml())


def _start(layout: cfg.Layout, name: str, argv: list, env: dict | None = None) -> None:
    if host.daemon_pid(name, layout.run) is None:
        host.start_daemon(name, argv, layout.run, layout.logs, env=env)


def _control_plane(layout: cfg.Layout, bins: Path) -> None:
    s, p, etc = layout.state, layout.pki, layout.etc
    _start(layout, "etcd", [
        bins / "etcd", "--name=pyrocketmq-local", f"--data-dir={s / 'etcd'}",
        f"--listen-client-urls=http://127.0.0.1:{cfg.ETCD_CLIENT_PORT}",
        f"--advertise-client-urls=http://127.0.0.1:{cfg.ETCD_CLIENT_PORT}",
        f"--listen-peer-urls=http://127.0.0.1:{cfg.ETCD_PEER_PORT}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{cfg.ETCD_PEER_PORT}",
        f"--initial-cluster=pyrocketmq-local=http://127.0.0.1:{cfg.ETCD_PEER_PORT}",
        "--listen-metrics-urls=", f"--quota-backend-bytes={1024 * 2**20}", "--snapshot-count=5000",
        "--unsafe-no-fsync", "--log-level=warn",
    ])  # fmt: skip
    _wait("etcd health", lambda: '"true"' in pki.http_get(f"http://127.0.0.1:{cfg.ETCD_CLIENT_PORT}/health")[1],
          60, layout, "etcd")  # fmt: skip
    _start(layout, "kube-apiserver", [
        bins / "kube-apiserver", f"--etcd-servers=http://127.0.0.1:{cfg.ETCD_CLIENT_PORT}",
        f"--bind-address={cfg.CONTROL_IP}", f"--advertise-address={cfg.CONTROL_IP}",
        f"--secure-port={cfg.API_PORT}",
        f"--cert-dir={s / 'apiserver-certs'}",
        f"--tls-cert-file={p / 'apiserver.crt'}", f"--tls-private-key-file={p / 'apiserver.key'}",
        f"--client-ca-file={p / 'ca.crt'}",
        f"--kubelet-client-certificate={p / 'admin.crt'}", f"--kubelet-client-key={p / 'admin.key'}",
        "--kubelet-preferred-address-types=InternalIP",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={p / 'sa.pub'}", f"--service-account-signing-key-file={p / 'sa.key'}",
        "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
        f"--requestheader-client-ca-file={p / 'ca.crt'}", "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={p / 'front-proxy-client.crt'}",
        f"--proxy-client-key-file={p / 'front-proxy-client.key'}",
        f"--service-cluster-ip-range={cfg.SERVICE_CIDR}", f"--service-node-port-range={cfg.NODE_PORT_RANGE}",
        "--allow-privileged=true", "--profiling=false", "--event-ttl=1h",
    ])  # fmt: skip
    _wait(
        "kube-apiserver /readyz",
        lambda: pki.http_get(layout.server + "/readyz", _admin_context(layout))[0] == 200,
        120,
        layout,
        "kube-apiserver",
    )
    _start_host_proxy(layout, bins)  # it waits 30 s for a Node of its name: the sooner the better
    _start(layout, "kube-controller-manager", [
        bins / "kube-controller-manager", f"--kubeconfig={etc / 'controller-manager.kubeconfig'}",
        f"--authentication-kubeconfig={etc / 'controller-manager.kubeconfig'}",
        f"--authorization-kubeconfig={etc / 'controller-manager.kubeconfig'}",
        "--bind-address=127.0.0.1", f"--secure-port={cfg.CONTROLLER_MANAGER_PORT}",
        f"--cert-dir={s / 'controller-manager-certs'}", "--leader-elect=false",
        "--use-service-account-credentials=true", f"--root-ca-file={p / 'ca.crt'}",
        f"--service-account-private-key-file={p / 'sa.key'}",
        f"--cluster-signing-cert-file={p / 'ca.crt'}", f"--cluster-signing-key-file={p / 'ca.key'}",
        f"--service-cluster-ip-range={cfg.SERVICE_CIDR}", "--allocate-node-cidrs=false",
        "--controllers=*,-cloud-node-lifecycle-controller,-service-lb-controller,-node-route-controller",
        "--profiling=false", "--kube-api-qps=100", "--kube-api-burst=200",
        # a node that stops reporting is NotReady after 20 s (the kubelets report every 5 s)
        "--node-monitor-grace-period=20s", "--node-monitor-period=2s",
    ])  # fmt: skip
    _start(layout, "kube-scheduler", [
        bins / "kube-scheduler", f"--kubeconfig={etc / 'scheduler.kubeconfig'}",
        f"--authentication-kubeconfig={etc / 'scheduler.kubeconfig'}",
        f"--authorization-kubeconfig={etc / 'scheduler.kubeconfig'}",
        "--bind-address=127.0.0.1", f"--secure-port={cfg.SCHEDULER_PORT}", "--leader-elect=false",
        "--profiling=false",
    ])  # fmt: skip
    for name, port in (("kube-controller-manager", cfg.CONTROLLER_MANAGER_PORT),
                       ("kube-scheduler", cfg.SCHEDULER_PORT)):  # fmt: skip
        def healthy(port: int = port) -> bool:
            return pki.http_get(f"https://127.0.0.1:{port}/healthz", pki.insecure_context())[0] == 200

        _wait(
            f"{name} /healthz",
            healthy,
            90,
            layout,
            name,
        )


def _start_host_proxy(layout: cfg.Layout, bins: Path) -> None:
    """The control plane's kube-proxy, in the host's network namespace, with the nodes' identity.
    It looks for a Node of its name for 30 s before it programs anything (there is none: it goes
    on without), so it starts as soon as the API answers (and with the nodes, if it was not running:
    a cluster started before it had none) and ``_nodes`` waits for it after the nodes."""
    if host.daemon_pid("kube-proxy", layout.run) is not None:
        return  # left alone: a kube-proxy exits when its configuration file is written to
    config = layout.etc / "kube-proxy.json"
    config.write_text(cfg.host_proxy_config(layout))
    argv: list[str | Path] = [bins / "kube-proxy", f"--config={config}", "--v=1"]
    host.start_daemon("kube-proxy", argv, layout.run, layout.logs)


def _kubectl(layout: cfg.Layout, bins: Path, *args: str, input: str | None = None) -> str:
    proc = subprocess.run(
        [str(bins / "kubectl"), f"--kubeconfig={layout.kubeconfig}", *args],
        input=input, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if proc.returncode != 0:
        raise ClusterError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def _nodes(layout: cfg.Layout, bins: Path, count: int, progress: Progress) -> None:
    nodes = cfg.nodes(max(count, len(worker.present(layout))))
    _start_host_proxy(layout, bins)
    for node in nodes:
        worker.write_configs(layout, node)
        worker.link(node, nodes)
    worker.start(layout, nodes, bins, progress)
    _kubectl(
        layout,
        bins,
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": cfg.cluster_objects(layout, len(nodes))}
        ),
    )
    _start(layout, "coredns", [bins / "coredns", "-conf", layout.etc / "Corefile"])
    _start(layout, "local-path-provisioner", [
        bins / "local-path-provisioner", "--debug", "start", f"--kubeconfig={layout.kubeconfig}",
        "--namespace=local-path-storage", "--configmap-name=local-path-config",
        f"--helper-image={cfg.HELPER_IMAGE}", f"--helper-pod-file={layout.etc / 'helperPod.json'}",
        "--service-account-name=local-path-provisioner-service-account",
        "--provisioner-name=rancher.io/local-path",
    ], env={**os.environ, "HOME": str(layout.state)})  # fmt: skip
    for node in nodes:
        _wait(
            f"{node.name} Ready", functools.partial(node_ready, layout, node), 120, layout, "kube-apiserver"
        )
        worker.wait_proxy(layout, node)
    _wait("the host's kube-proxy rules", host_proxy_ready, 90, layout, "kube-proxy")
    host.guard_first()  # that proxy put its jumps first in FORWARD: the guard goes before them
    _wait(
        "CoreDNS ready",
        lambda: pki.http_get(f"http://127.0.0.1:{cfg.COREDNS_READY_PORT}/ready")[0] == 200,
        60,
        layout,
        "coredns",
    )
    _wait("the default ServiceAccount",
          lambda: api(layout, "/api/v1/namespaces/default/serviceaccounts/default") is not None,
          60, layout, "kube-controller-manager")  # fmt: skip


def up(layout: cfg.Layout | None = None, progress: Progress = lambda m: None, nodes: int = 1) -> Path:
    """Bring up a cluster of ``nodes`` nodes (a healthy one is left as it is, one with fewer nodes
    or without the host's kube-proxy gets the missing ones); return the admin kubeconfig path."""
    layout = layout or layout_from_env()
    cfg.nodes(nodes)  # a count out of range fails before anything changes
    if os.geteuid() != 0:
        raise ClusterError("the local cluster runs containers and changes the network: run it as root")
    have = len(worker.present(layout))
    if healthy(layout, nodes):
        progress(f"the cluster is already up ({max(have, nodes)} nodes)")
        return layout.kubeconfig
    t0 = time.monotonic()
    bins = tools.ensure(progress=progress)
    if have and healthy(layout, have, ignore=("kube-proxy",)):
        if have < nodes:
            progress(f"adding nodes {have + 1}-{nodes} to the running cluster")
        else:
            progress("starting the control plane's kube-proxy in the running cluster")
        _nodes(layout, bins, nodes, progress)
        progress(f"{max(have, nodes)} nodes up in {time.monotonic() - t0:.0f} s")
        return layout.kubeconfig
    if layout.state.exists():
        progress("a previous cluster is half up: removing it first")
        down(layout, progress)
    install_packages(progress)
    layout.state.mkdir(parents=True, exist_ok=True)
    try:
        _make_pki(layout)
        _write_configs(layout)
        host.set_sysctls(layout.state / "sysctls.saved")
        host.ensure_bridge(cfg.BRIDGE, f"{cfg.CONTROL_IP}/24")  # the nodes' link, the control plane's address
        host.ensure_guard(cfg.BRIDGE)
        host.keep_on_bridge(cfg.SERVICE_CIDR, cfg.BRIDGE)
        _control_plane(layout, bins)
        progress(f"control plane up in {time.monotonic() - t0:.0f} s")
        _nodes(layout, bins, nodes, progress)
    except BaseException:
        progress("start failed; logs are under " + str(layout.logs))
        raise
    progress(
        f"cluster of {nodes} node(s) up in {time.monotonic() - t0:.0f} s; kubeconfig: {layout.kubeconfig}"
    )
    return layout.kubeconfig


# -- down ---------------------------------------------------------------------------------------


def _drain_pods(layout: cfg.Layout, bins: Path, nodes: list[cfg.Node], progress: Progress) -> None:
    """Stop new pods, delete every pod and wait for the kubelets to tear them down (CNI DEL)."""
    live = [n for n in nodes if worker.running(layout, n)["kubelet"] and not host.is_frozen(n.cgroup)]
    if not (live and status(layout)["api"]):
        return
    for name in ("kube-controller-manager", "kube-scheduler"):
        host.stop_daemon(name, layout.run)
    subprocess.run(
        [str(bins / "kubectl"), f"--kubeconfig={layout.kubeconfig}", "delete", "pods", "--all",
         "--all-namespaces", "--grace-period=0", "--force", "--wait=false"],
        capture_output=True, timeout=120,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if not host.runtime_netns() and not any(_sandboxes(layout, n) for n in live):
            return
        time.sleep(0.5)
    progress("pods still present after 90 s: removing them by force")


def _sandboxes(layout: cfg.Layout, node: cfg.Node) -> list[str]:
    proc = subprocess.run(
        ["ctr", "--address", str(layout.containerd_socket(node)), "-n", "k8s.io", "tasks", "ls", "-q"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return proc.stdout.split() if proc.returncode == 0 else []


def down(layout: cfg.Layout | None = None, progress: Progress = lambda m: None) -> list[str]:
    """Remove everything ``up()`` created; return what was still found afterwards (empty when clean)."""
    layout = layout or layout_from_env()
    if os.geteuid() != 0:
        raise ClusterError("removing the local cluster needs root")
    bins = tools.bin_dir()
    nodes = worker.present(layout)
    if layout.state.exists():
        for node in nodes:  # a frozen node would hold its pods (and our signals) until thawed
            worker.thaw(layout, node)
            worker.heal(layout, node)
        try:
            _drain_pods(layout, bins, nodes, progress)
        except (OSError, subprocess.SubprocessError, ssl.SSLError) as exc:
            progress(f"could not drain pods through the API ({exc}); removing them by force")
        for name in ("local-path-provisioner", "coredns"):
            host.stop_daemon(name, layout.run)
        for node in nodes:
            worker.stop(layout, node)
        for name in reversed(DAEMONS):
            host.stop_daemon(name, layout.run)
    # The host's chains: KUBE-* (its kube-proxy's), CNI-*, PYRMQ-*, also when the processes are gone.
    # Not `kube-proxy --cleanup`: that also flushes every IPVS service on the host, ours or not.
    host.remove_chains()
    nfacct.remove()  # its packet counters, once no rule names them
    host.remove_runtime_netns()
    host.unmount_under(layout.state)
    host.remove_pod_cgroups()
    worker.remove_links(nodes)
    host.delete_bridge(cfg.BRIDGE)
    host.restore_sysctls(layout.state / "sysctls.saved")
    if layout.state.exists():
        shutil.rmtree(layout.state, ignore_errors=True)
    left = leftovers(layout)
    progress("cluster removed" if not left else f"left behind: {left}")
    return left


def leftovers(layout: cfg.Layout) -> list[str]:
    """Anything of the cluster still on the host: processes, chains (the host's ``KUBE-*`` ones of
    the control plane's kube-proxy among them), netns, links, mounts, cgroups, the bridge, the
    state directory."""
    found = []
    for name in DAEMONS:
        if layout.run.is_dir() and host.daemon_pid(name, layout.run):
            found.append(f"process {name}")
    found += [f"process {pid}" for pid in host.pids_matching(str(layout.state))]
    found += [f"iptables chain {c}" for c in host.leftover_chains()]
    found += [f"nfacct counter {c}" for c in nfacct.leftovers()]
    found += [f"netns {n.name}" for n in host.runtime_netns()]
    found += worker.leftovers()
    found += [f"mount {m}" for m in host.mounts_under(layout.state)]
    found += [f"cgroup {c}" for c in host.pod_cgroups()]
    if host.run(["ip", "link", "show", cfg.BRIDGE], check=False):
        found.append(f"bridge {cfg.BRIDGE}")
    if layout.state.exists():
        found.append(f"directory {layout.state}")
    return found


USAGE = """usage: python3 -m localkube.node up [--nodes N] | down | status

  up        start the cluster (N nodes, 1 by default; a running cluster with fewer gets more)
  down      remove everything up created
  status    print which parts run, as JSON"""


def _parse(argv: list[str]) -> tuple[str, int] | None:
    if argv[:1] == ["up"] and len(argv) in (1, 3) and argv[1:2] in ([], ["--nodes"]):
        if len(argv) == 1:
            return "up", 1
        if argv[2].isdigit() and 1 <= int(argv[2]) <= cfg.MAX_NODES:
            return "up", int(argv[2])
        return None
    return (argv[0], 0) if argv in (["down"], ["status"]) else None


def main(argv: list[str]) -> int:
    parsed = _parse(argv)
    if parsed is None:
        print(f"{USAGE}\n\nN is a whole number from 1 to {cfg.MAX_NODES}.", file=sys.stderr)
        return 2
    command, count = parsed

    def say(msg: str) -> None:
        print(f"[k8s] {msg}", file=sys.stderr, flush=True)

    layout = layout_from_env()
    try:
        if command == "up":
            print(up(layout, say, nodes=count))
        elif command == "down":
            return 1 if down(layout, say) else 0
        else:
            state = status(layout) if layout.state.exists() else {}
            print(json.dumps(state, indent=2))
            return 0 if state and all(state.values()) else 1
    except (
        ClusterError,
        worker.NodeError,
        images.ImageError,
        tools.PrerequisiteMissing,
        pki.PkiError,
    ) as exc:
        say(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
