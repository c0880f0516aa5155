"""Certificates the operator manages (spec.tls.managed) on real pods: a NameServer and a Broker
(2 groups) serving TLS with certificates issued from the namespace's cluster CA; a forced CA renewal
issues every server certificate again and rolls the pods one at a time while a client that trusts
only the first CA certificate sends throughout: no send fails."""

from __future__ import annotations

import base64
import secrets

import pytest

from pyrocketmq.client import ClientSettings, ClientTls
from pyrocketmq.operator import certs
from pyrocketmq.operator.managed_tls import CA_SECRET, CA_SERIAL, FORCE_RENEW
from tests.e2e.helpers import (
    Sender,
    broker_cr,
    get,
    nameserver_cr,
    namespace_fixture,
    pod_ready,
    pods,
    topic_cr,
    try_send,
    wait_ready,
)
from tests.k8s.cluster import KubeCluster

ns = namespace_fixture("e2e-mtls")



def _secret_text(kube: KubeCluster, ns: str, name: str, key: str) -> str:
    return base64.b64decode(get(kube, "secret", name, ns)["data"][key]).decode()


def _uids(kube: KubeCluster, ns: str, names: list[str]) -> dict[str, str]:
    found = {p["metadata"]["name"]: p for p in pods(kube, ns)}
    return {n: found[n]["metadata"]["uid"] if n in found and pod_ready(found[n]) else "" for n in names}


@pytest.mark.timeout(900)
def test_managed_certificates_renewed_and_rotated_while_a_client_sends(node_cluster, ns, tmp_path):
    """spec.tls.managed: the operator's CA and server certificates; a forced CA renewal re-issues
    every server certificate and rolls the pods while a client that trusts only the first CA
    certificate sends throughout: no send fails."""
    kube = node_cluster
    # Two name servers, rolled one at a time: a restarted one knows no broker until they register
    # again, the other answers the clients meanwhile.
    names = nameserver_cr("tlsns", replicas=2)
    names["spec"]["tls"] = {"managed": True}
    brokers = broker_cr("tlsbr", "tlsns", groups=2, replicas=1, replicationMode="ASYNC",
                        tls={"managed": True})
    brokers["spec"]["nameServer"]["tls"] = True
    kube.apply(names, "-n", ns)
    kube.apply(brokers, "-n", ns)
    wait_ready(kube, "nameserver", "tlsns", ns, timeout=240)
    wait_ready(kube, "broker", "tlsbr", ns, timeout=300)
    old_ca = _secret_text(kube, ns, CA_SECRET, "ca.crt")
    trust = tmp_path / "first-ca.crt"
    trust.write_text(old_ca)
    assert certs.signed_by(_secret_text(kube, ns, "tlsbr-tls", "tls.crt"), old_ca)
    topic = f"Mtls_{secrets.token_hex(3)}"
    kube.apply(topic_cr("mtls-topic", topic, "tlsbr", queues=2), "-n", ns)
    wait_ready(kube, "topic", "mtls-topic", ns, timeout=90)
    # From the node through the name servers' Service (its address outlives their pods).
    namesrv = f"{kube.get('service', 'tlsns', '-n', ns)['spec']['clusterIP']}:9876"
    client = ClientSettings(tls=ClientTls(enabled=True, trust_cert_path=str(trust), check_hostname=False),
                            request_timeout=5, connect_timeout=3)  # fmt: skip
    assert try_send(namesrv, topic, ClientSettings(request_timeout=5, connect_timeout=3)) != "sent"
    server_pods = ["tlsns-0", "tlsns-1", "tlsbr-0-0", "tlsbr-1-0"]
    before = _uids(kube, ns, server_pods)
    with Sender(namesrv, topic, pause=0.05, client=client) as sender:
        sender.wait_for(20)
        kube.kubectl("annotate", "secret", CA_SECRET, "-n", ns, f"{FORCE_RENEW}=true")
        kube.wait_until(lambda: all(u and u != before[n] for n, u in _uids(kube, ns, server_pods).items()),
                        600, "every server pod replaced and Ready", interval=2)  # fmt: skip
        wait_ready(kube, "broker", "tlsbr", ns, timeout=180)
        n = len(sender.acked)
        sender.wait_for(n + 20)
    new_ca = _secret_text(kube, ns, CA_SECRET, "ca.crt")
    for name in (CA_SECRET, "tlsns-tls", "tlsbr-tls"):  # what the README shows
        found = certs.info(_secret_text(kube, ns, name, "ca.crt" if name == CA_SECRET else "tls.crt"))
        print(f"{name}: {found.subject}, serial {found.serial:x}, until {found.not_after:%Y-%m-%d}")
    assert certs.info(new_ca).serial != certs.info(old_ca).serial
    for leaf in ("tlsns-tls", "tlsbr-tls"):
        cert = _secret_text(kube, ns, leaf, "tls.crt")
        assert certs.signed_by(cert, old_ca) and get(kube, "secret", leaf, ns)["metadata"]["annotations"][
            CA_SERIAL] == str(certs.info(new_ca).serial)
    assert sender.failures == [], sender.failures[:5]
    print(f"CA renewed and 4 server pods rolled: {len(sender.acked)} sends acknowledged, none failed")
