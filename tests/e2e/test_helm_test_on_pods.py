"""The chart's own test: ``helm upgrade --set cluster.enabled=true`` makes the chart's example
cluster (a NameServer, a Broker, a Topic and a ConsumerGroup) on the nodes, and ``helm test`` runs
its test pod, which sends to that topic and reads the messages back through that group."""

from __future__ import annotations

from tests.e2e.conftest import OPERATOR_NAMESPACE, RELEASE, E2EImages, upgrade_release
from tests.e2e.helpers import wait_ready
from tests.k8s.cluster import KubeCluster


def test_helm_test_produces_to_and_consumes_from_the_charts_cluster(
    node_cluster: KubeCluster, images: E2EImages, operator_release: str
) -> None:
    kube, ns = node_cluster, OPERATOR_NAMESPACE
    upgrade_release(kube, "cluster.enabled=true", "cluster.broker.storage.type=ephemeral")
    try:
        wait_ready(kube, "broker", "pyrocketmq", ns, timeout=240)
        wait_ready(kube, "topic", "example-topic", ns, timeout=120)
        wait_ready(kube, "consumergroup", "example-group", ns, timeout=120)
        done = kube.helm("test", RELEASE, "-n", ns, "--logs", "--timeout", "180s", timeout=240, check=False)
        out = done.stdout + done.stderr
        assert done.returncode == 0, out
        assert "Succeeded" in out and "received 3 message(s) from TopicTest" in out, out
    finally:
        kube.kubectl(
            "delete", "pod", "-n", ns, f"{RELEASE}-test-produce-consume", "--ignore-not-found", check=False
        )
        upgrade_release(kube, "cluster.enabled=false")  # Helm deletes the resources; the operator the rest
