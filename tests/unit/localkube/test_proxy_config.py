"""The kube-proxy configurations: the nodes' and the control plane's own, in the host's network
namespace, which makes Service ClusterIPs reachable from the host without touching the host's
conntrack settings, localhost or any address but the control plane's."""

from __future__ import annotations

import ipaddress
import json
import struct
from pathlib import Path

import pytest

from localkube import config as cfg, nfacct


@pytest.fixture
def layout(tmp_path: Path) -> cfg.Layout:
    return cfg.Layout(tmp_path / "state")


def _host(layout: cfg.Layout) -> dict:
    return json.loads(cfg.host_proxy_config(layout))


def test_the_host_proxy_programs_iptables_as_control_plane_with_the_nodes_identity_and_cluster_cidr(
    layout: cfg.Layout,
) -> None:
    conf = _host(layout)
    node = json.loads(cfg.kube_proxy_config(layout, cfg.Node(1)))
    assert conf["kind"] == "KubeProxyConfiguration" and conf["mode"] == "iptables"
    assert conf["hostnameOverride"] == cfg.HOST_PROXY_NAME == "control-plane"
    assert conf["clientConnection"] == node["clientConnection"]  # the kube-proxy identity the nodes have
    assert conf["clientConnection"]["kubeconfig"] == str(layout.etc / "kube-proxy.kubeconfig")
    # the host's own addresses are outside it: its traffic to a ClusterIP is masqueraded
    assert conf["clusterCIDR"] == node["clusterCIDR"] == cfg.CLUSTER_CIDR
    assert conf["iptables"]["syncPeriod"] == "10s" and conf["iptables"]["minSyncPeriod"] == "0s"


def test_the_host_proxy_listens_only_on_the_control_plane_address_and_loopback_on_ports_of_its_own(
    layout: cfg.Layout,
) -> None:
    conf = _host(layout)
    assert conf["bindAddress"] == cfg.CONTROL_IP
    assert conf["healthzBindAddress"] == f"{cfg.CONTROL_IP}:{cfg.HOST_PROXY_HEALTHZ_PORT}"
    assert conf["metricsBindAddress"] == f"127.0.0.1:{cfg.HOST_PROXY_METRICS_PORT}"
    for address in (conf["healthzBindAddress"], conf["metricsBindAddress"]):
        assert not ipaddress.ip_address(address.rsplit(":", 1)[0]).is_unspecified
    taken = {
        cfg.API_PORT, cfg.ETCD_CLIENT_PORT, cfg.ETCD_PEER_PORT, cfg.CONTROLLER_MANAGER_PORT,
        cfg.SCHEDULER_PORT, cfg.KUBELET_HEALTHZ_PORT, cfg.PROXY_HEALTHZ_PORT, cfg.PROXY_METRICS_PORT,
        cfg.COREDNS_HEALTH_PORT, cfg.COREDNS_READY_PORT,
    }  # fmt: skip
    ports = {cfg.HOST_PROXY_HEALTHZ_PORT, cfg.HOST_PROXY_METRICS_PORT}
    assert len(ports) == 2 and not ports & taken


def test_the_host_proxy_leaves_localhost_and_the_hosts_conntrack_settings_alone(layout: cfg.Layout) -> None:
    conf = _host(layout)
    assert conf["nodePortAddresses"] == [f"{cfg.CONTROL_IP}/32"]  # never localhost: no route_localnet
    assert conf["iptables"]["localhostNodePorts"] is False
    assert conf["conntrack"] == {
        "maxPerCore": 0,
        "min": 0,
        "tcpEstablishedTimeout": "0s",  # 0: kube-proxy does not set the sysctl
        "tcpCloseWaitTimeout": "0s",
    }


def test_a_nodes_proxy_keeps_its_own_address_and_ports(layout: cfg.Layout) -> None:
    node = cfg.Node(2)
    conf = json.loads(cfg.kube_proxy_config(layout, node))
    assert conf["hostnameOverride"] == node.name and conf["bindAddress"] == node.ip
    assert conf["healthzBindAddress"] == f"{node.ip}:{cfg.PROXY_HEALTHZ_PORT}"
    assert conf["metricsBindAddress"] == f"127.0.0.1:{cfg.PROXY_METRICS_PORT}"
    assert conf["nodePortAddresses"] == [f"{node.ip}/32"]
    assert conf["conntrack"] == {"maxPerCore": 0, "min": 0}


def _counter(name: str) -> bytes:
    """An nfacct dump answer: the nfgenmsg header, then the counter's attributes (name, packets)."""
    value = name.encode() + b"\0"
    named = struct.pack("=HH", 4 + len(value), 1) + value + b"\0" * (-len(value) % 4)
    return struct.pack("=BBH", 0, 0, 0) + named + struct.pack("=HH", 12, 2) + bytes(8)


def test_only_kube_proxys_packet_counters_are_reported_and_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[int, str]] = []

    def fake(message: int, flags: int, name: str = "") -> list[bytes]:
        sent.append((message, name))
        names = ("ct_state_invalid_dropped_pkts", "someone-elses") if message == nfacct._GET else ()
        return [_counter(n) for n in names]

    monkeypatch.setattr(nfacct, "_nfacct", fake)
    assert nfacct.leftovers() == ["ct_state_invalid_dropped_pkts"]
    sent.clear()
    nfacct.remove()
    assert sent == [(nfacct._GET, ""), (nfacct._DELETE, "ct_state_invalid_dropped_pkts")]
    assert (nfacct._GET, nfacct._DELETE) == (1, 3)  # NFNL_MSG_ACCT_GET, NFNL_MSG_ACCT_DEL
