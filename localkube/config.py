"""The local cluster's addresses and the configuration files of its components, as pure functions.

Addresses come from 198.18.0.0/15, the range set aside for network tests (RFC 2544), so they never
collide with a LAN. Everything listens either on loopback or on the node address, which lives on a
bridge the cluster creates; nothing is reachable from outside the machine and no component sends
anywhere else (CoreDNS serves ``cluster.local`` and forwards nothing; images are never pulled).

    pods       198.18.0.0/24 on bridge pyrmq0; the node (host side of the bridge) is 198.18.0.1
    services   198.19.0.0/16; kubernetes = 198.19.0.1, kube-dns = 198.19.0.10
    node       kube-apiserver 198.18.0.1:6443, kubelet 198.18.0.1:10250, CoreDNS 198.18.0.1:53,
               NodePorts on 198.18.0.1
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

NODE_NAME = "pyrocketmq-node"
CLUSTER_NAME = "pyrocketmq-local"
BRIDGE = "pyrmq0"
NODE_IP = "198.18.0.1"
POD_CIDR = "198.18.0.0/24"
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
COREDNS_HEALTH_PORT = 18080
COREDNS_READY_PORT = 18181


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

    @property
    def containerd_socket(self) -> Path:
        return self.state / "containerd" / "containerd.sock"

    @property
    def local_path(self) -> Path:
        """Where local-path-provisioner creates volumes."""
        return self.state / "local-path"

    @property
    def server(self) -> str:
        return f"https://{NODE_IP}:{API_PORT}"


def apiserver_sans() -> list[str]:
    return [
        "127.0.0.1",
        NODE_IP,
        KUBERNETES_SERVICE_IP,
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        f"kubernetes.default.svc.{CLUSTER_DOMAIN}",
    ]


def containerd_config(layout: Layout) -> str:
    """containerd 1.6+ (config version 2): CRI with runc on cgroupfs, CNI from Debian's plugins."""
    c = layout.state / "containerd"
    return f"""version = 2
root = "{c / "root"}"
state = "{c / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{layout.containerd_socket}"

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
    conf_dir = "{layout.etc / "cni"}"
"""


def cni_config(layout: Layout) -> str:
    """bridge + host-local + portmap; no masquerade: pod traffic never needs to leave the machine."""
    gateway = NODE_IP
    conf = {
        "cniVersion": "0.4.0",
        "name": "pyrocketmq",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "isDefaultGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(layout.state / "cni-ipam"),
                    "ranges": [[{"subnet": POD_CIDR, "rangeStart": "198.18.0.10", "gateway": gateway}]],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    return json.dumps(conf, indent=2)


def kubelet_config(layout: Layout) -> str:
    """KubeletConfiguration: cgroupfs on cgroup v1, client certificates checked against the CA,
    eviction and image GC effectively off (images are imported, never pulled back)."""
    conf = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": NODE_IP,
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
        "failCgroupV1": False,
        "failSwapOn": False,
        "clusterDNS": [DNS_SERVICE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": str(layout.etc / "resolv.conf"),
        "podLogsDir": str(layout.state / "pod-logs"),
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "imageMinimumGCAge": "87600h",
        "evictionHard": {"memory.available": "64Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "serializeImagePulls": False,
        "maxPods": 110,
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
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


def kube_proxy_config(layout: Layout) -> str:
    conf = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(layout.etc / "kube-proxy.kubeconfig")},
        "hostnameOverride": NODE_NAME,
        "clusterCIDR": POD_CIDR,
        "bindAddress": NODE_IP,
        "healthzBindAddress": f"127.0.0.1:{PROXY_HEALTHZ_PORT}",
        "metricsBindAddress": f"127.0.0.1:{PROXY_METRICS_PORT}",
        "nodePortAddresses": [f"{NODE_IP}/32"],
        "conntrack": {"maxPerCore": 0, "min": 0},  # leave the host's conntrack sysctls alone
        "iptables": {"syncPeriod": "10s", "minSyncPeriod": "0s"},
    }
    return json.dumps(conf, indent=2)


def corefile(layout: Layout) -> str:
    """cluster.local and reverse lookups from the API; any other name is refused (no upstream)."""
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 {{
    bind {NODE_IP}
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


def cluster_objects(layout: Layout) -> list[dict]:
    """What the node's host-side services need in the API: the kube-dns Service pointing at the
    CoreDNS process, and local-path-provisioner's namespace, config and default StorageClass."""
    dns_ports = [
        {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
    ]
    local_path_config = {
        "nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [str(layout.local_path)]}]
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
            "endpoints": [{"addresses": [NODE_IP], "conditions": {"ready": True}}],
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
