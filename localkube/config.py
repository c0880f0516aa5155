"""The local cluster's addresses and the configuration files of its components, as pure functions.

Addresses come from 198.18.0.0/15, the range set aside for network tests (RFC 2544), so they never
collide with a LAN. Everything listens either on loopback or on addresses of links the cluster
creates; nothing is reachable from outside the machine and no component sends anywhere else
(CoreDNS serves ``cluster.local`` and forwards nothing; images are never pulled).

The control plane runs on the host; each node runs in a network namespace of its own, linked to
the host's bridge by a veth pair, as a machine is linked to a switch:

    control plane  198.18.0.1 on bridge pyrmq0: kube-apiserver :6443, CoreDNS :53, kube-proxy
                   healthz :18256 (the host's own, so that the host reaches Services too)
    node k         198.18.0.(10+k) (eth0 of netns pyrmq-node-k, port pyrmqvk of the bridge):
                   kubelet :10250, kube-proxy healthz :10256, NodePorts
    pods on node k 198.18.k.0/24 on the node's own bridge cbr0 (gateway 198.18.k.1)
    services       198.19.0.0/16; kubernetes = 198.19.0.1, kube-dns = 198.19.0.10
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

CLUSTER_NAME = "pyrocketmq-local"
BRIDGE = "pyrmq0"
CONTROL_IP = "198.18.0.1"
CLUSTER_CIDR = "198.18.0.0/16"  # the control plane's link, every node and every pod
NODE_BRIDGE = "cbr0"  # inside each node's network namespace
MAX_NODES = 9
ZONES = ("zone-a", "zone-b", "zone-c")
SERVICE_CIDR = "198.19.0.0/16"
KUBERNETES_SERVICE_IP = "198.19.0.1"
DNS_SERVICE_IP = "198.19.0.10"
CLUSTER_DOMAIN = "cluster.local"
API_PORT = 6443
NODE_PORT_RANGE = "30000-32767"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"  # the name the kubelet pins as the sandbox image
HELPER_IMAGE = "docker.io/library/pyrocketmq-base:bookworm"  # local-path-provisioner's helper pods

# loopback ports of the node's processes (health and metrics only)
ETCD_CLIENT_PORT = 23790
ETCD_PEER_PORT = 23800
CONTROLLER_MANAGER_PORT = 10257
SCHEDULER_PORT = 10259
KUBELET_HEALTHZ_PORT = 10248
PROXY_HEALTHZ_PORT = 10256
PROXY_METRICS_PORT = 10249
# the control plane's own kube-proxy, in the host's network namespace: ports of its own, away from
# the usual ones (a kube-proxy of another cluster on the host may hold those)
HOST_PROXY_NAME = "control-plane"  # its hostnameOverride; there is no Node of that name
HOST_PROXY_HEALTHZ_PORT = 18256
HOST_PROXY_METRICS_PORT = 18249
COREDNS_HEALTH_PORT = 18080
COREDNS_READY_PORT = 18181


@dataclass(frozen=True, slots=True)
class Node:
    """One node of the cluster: its name, network namespace, addresses, zone and cgroup."""

    index: int  # 1-based

    @property
    def name(self) -> str:
        return f"pyrocketmq-node-{self.index}"

    @property
    def netns(self) -> str:
        return f"pyrmq-node-{self.index}"

    @property
    def cgroup(self) -> str:
        """The cgroup (every hierarchy) holding the node's daemons and, below it, its pods."""
        return self.netns

    @property
    def veth(self) -> str:
        """The host's end of the node's link (a port of the bridge)."""
        return f"pyrmqv{self.index}"

    @property
    def ip(self) -> str:
        return f"198.18.0.{10 + self.index}"

    @property
    def pod_cidr(self) -> str:
        return f"198.18.{self.index}.0/24"

    @property
    def pod_gateway(self) -> str:
        return f"198.18.{self.index}.1"

    @property
    def zone(self) -> str:
        return ZONES[(self.index - 1) % len(ZONES)]


def nodes(count: int) -> list[Node]:
    if not 1 <= count <= MAX_NODES:
        raise ValueError(f"a local cluster has 1 to {MAX_NODES} nodes, not {count}")
    return [Node(i) for i in range(1, count + 1)]


def node_named(name: str) -> Node:
    """The node called ``name`` (``pyrocketmq-node-2``), or ``2`` for short."""
    index = name.removeprefix("pyrocketmq-node-")
    if not index.isdigit() or not 1 <= int(index) <= MAX_NODES:
        raise ValueError(f"no such node {name!r}: nodes are pyrocketmq-node-1 to -{MAX_NODES}")
    return Node(int(index))


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a cluster keeps its state: everything under ``state`` (k8s-down deletes it)."""

    state: Path

    @property
    def run(self) -> Path:
        return self.state / "run"

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def pki(self) -> Path:
        return self.state / "pki"

    @property
    def etc(self) -> Path:
        return self.state / "etc"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (group system:masters)."""
        return self.state / "kubeconfig"

    def node_dir(self, node: Node) -> Path:
        """A node's own state: its runtime, kubelet, configuration and local volumes."""
        return self.state / "nodes" / node.name

    def containerd_socket(self, node: Node) -> Path:
        return self.node_dir(node) / "containerd" / "containerd.sock"

    def local_path(self, node: Node) -> Path:
        """Where local-path-provisioner creates the node's volumes."""
        return self.node_dir(node) / "local-path"

    @property
    def server(self) -> str:
        return f"https://{CONTROL_IP}:{API_PORT}"


def apiserver_sans() -> list[str]:
    return [
        "127.0.0.1",
        CONTROL_IP,
        KUBERNETES_SERVICE_IP,
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        f"kubernetes.default.svc.{CLUSTER_DOMAIN}",
    ]


def containerd_config(layout: Layout, node: Node) -> str:
    """containerd 1.6+ (config version 2): CRI with runc on cgroupfs, CNI from Debian's plugins."""
    c = layout.node_dir(node) / "containerd"
    return f"""version = 2
root = "{c / "root"}"
state = "{c / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{layout.containerd_socket(node)}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{c / "runc"}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{layout.node_dir(node) / "cni"}"
"""


def cni_config(layout: Layout, node: Node) -> str:
    """bridge + host-local + portmap on the node's own bridge; no masquerade: pod traffic never
    needs to leave the machine, and pods on other nodes see a pod's own address."""
    gateway = node.pod_gateway
    first = gateway.rsplit(".", 1)[0] + ".10"
    conf = {
        "cniVersion": "0.4.0",
        "name": "pyrocketmq",
        "plugins": [
            {
                "type": "bridge",
                "bridge": NODE_BRIDGE,
                "isGateway": True,
                "isDefaultGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(layout.node_dir(node) / "cni-ipam"),
                    "ranges": [[{"subnet": node.pod_cidr, "rangeStart": first, "gateway": gateway}]],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    return json.dumps(conf, indent=2)


def kubelet_config(layout: Layout, node: Node) -> str:
    """KubeletConfiguration: cgroupfs on cgroup v1 below the node's own cgroup, client certificates
    checked against the CA, eviction and image GC effectively off (images are imported, never
    pulled back)."""
    d = layout.node_dir(node)
    conf = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.ip,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": KUBELET_HEALTHZ_PORT,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(layout.pki / "ca.crt")},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{node.cgroup}",
        "failCgroupV1": False,
        "failSwapOn": False,
        "clusterDNS": [DNS_SERVICE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": str(layout.etc / "resolv.conf"),
        "podLogsDir": str(d / "pod-logs"),
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "imageMinimumGCAge": "87600h",
        "evictionHard": {"memory.available": "64Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "serializeImagePulls": False,
        "maxPods": 110,
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket(node)}",
        "protectKernelDefaults": False,
        "makeIPTablesUtilChains": True,
        "shutdownGracePeriod": "0s",
        "registerNode": True,
        "nodeStatusReportFrequency": "10s",
        "nodeStatusUpdateFrequency": "5s",
        "syncFrequency": "10s",
        "fileCheckFrequency": "10s",
    }
    return json.dumps(conf, indent=2)


def _proxy_config(layout: Layout, name: str, address: str, healthz_port: int, metrics_port: int) -> dict:
    """KubeProxyConfiguration in iptables mode for the proxy of ``name`` at ``address``: health on that
    address, metrics on loopback, NodePorts on that address only (never on localhost, so it never
    turns on route_localnet), the conntrack table size left alone."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(layout.etc / "kube-proxy.kubeconfig")},
        "hostnameOverride": name,
        "clusterCIDR": CLUSTER_CIDR,
        "bindAddress": address,
        "healthzBindAddress": f"{address}:{healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{metrics_port}",
        "nodePortAddresses": [f"{address}/32"],
        "conntrack": {"maxPerCore": 0, "min": 0},  # leave the host's conntrack sysctls alone
        "iptables": {"syncPeriod": "10s", "minSyncPeriod": "0s"},
    }


def kube_proxy_config(layout: Layout, node: Node) -> str:
    conf = _proxy_config(layout, node.name, node.ip, PROXY_HEALTHZ_PORT, PROXY_METRICS_PORT)
    return json.dumps(conf, indent=2)


def host_proxy_config(layout: Layout) -> str:
    """The control plane's kube-proxy, in the host's own network namespace, as on a cluster whose
    control-plane machines run kube-proxy too: Service ClusterIPs reach their endpoints from the
    host. Traffic from the host's own addresses (outside ``CLUSTER_CIDR``) to a ClusterIP is
    masqueraded to the control-plane address, so replies come back over the bridge. Unlike the
    nodes' proxies, each in a namespace of its own, it shares the host's conntrack settings: it
    changes none of them (no table size, no TCP timeouts), and no localhost NodePorts."""
    ports = HOST_PROXY_HEALTHZ_PORT, HOST_PROXY_METRICS_PORT
    conf = _proxy_config(layout, HOST_PROXY_NAME, CONTROL_IP, *ports)
    conf["conntrack"] |= {"tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"}
    conf["iptables"] |= {"localhostNodePorts": False}
    return json.dumps(conf, indent=2)


def corefile(layout: Layout) -> str:
    """cluster.local and reverse lookups from the API; any other name is refused (no upstream)."""
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 {{
    bind {CONTROL_IP}
    errors
    health 127.0.0.1:{COREDNS_HEALTH_PORT}
    ready 127.0.0.1:{COREDNS_READY_PORT}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa {{
        kubeconfig {layout.kubeconfig}
        pods insecure
    }}
    cache 30
}}
"""


def cluster_objects(layout: Layout, count: int) -> list[dict]:
    """What the node's host-side services need in the API: the kube-dns Service pointing at the
    CoreDNS process, and local-path-provisioner's namespace, config and default StorageClass."""
    dns_ports = [
        {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
    ]
    local_path_config = {
        "nodePathMap": [{"node": n.name, "paths": [str(layout.local_path(n))]} for n in nodes(count)]
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
            "spec": {"clusterIP": DNS_SERVICE_IP, "ports": [{**p, "targetPort": 53} for p in dns_ports]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "kube-dns-node",
                "namespace": "kube-system",
                "labels": {"kubernetes.io/service-name": "kube-dns"},
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [CONTROL_IP], "conditions": {"ready": True}}],
            "ports": dns_ports,
        },
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "local-path-storage"}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "local-path-provisioner-service-account", "namespace": "local-path-storage"},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "local-path-config", "namespace": "local-path-storage"},
            "data": {
                "config.json": json.dumps(local_path_config),
                "setup": '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
                "teardown": '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
                "helperPod.yaml": helper_pod_yaml(),
            },
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": "local-path",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "rancher.io/local-path",
            "volumeBindingMode": "WaitForFirstConsumer",
            "reclaimPolicy": "Delete",
        },
    ]


def helper_pod_yaml() -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "helper-pod"},
            "spec": {
                "containers": [{"name": "helper-pod", "image": HELPER_IMAGE, "imagePullPolicy": "Never"}]
            },
        }
    )
