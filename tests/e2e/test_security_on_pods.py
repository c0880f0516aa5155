"""TLS and ACL 1.0 on real pods: a NameServer and a Broker (one group, master + slave) serving TLS
only and checking one ``plain_acl.yml``, all from two Secrets a user creates. The operator mounts them,
signs its own calls with the Secret's admin account and creates a Topic; clients from the node get in
only over TLS and with an account; an edited ``plain_acl.yml`` applies without a restart. (That the
operator may not read Secrets by default is checked in tests/k8s/test_helm_chart.py.)"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Iterator

import pytest
import yaml

from pyrocketmq.client import ClientSettings, ClientTls, Message, SyncAdmin, SyncProducer, SyncPullConsumer
from tests.e2e.conftest import E2EImages
from tests.e2e.helpers import (
    broker_cr,
    delete_namespace,
    nameserver_cr,
    pod_ip,
    pods,
    topic_cr,
    topics_on,
    try_send,
    wait_ready,
)
from tests.helpers.certs import make_certs
from tests.k8s.cluster import KubeCluster

ADMIN = {"accessKey": "mqoperator", "secretKey": "operator-secret-1", "admin": True}
ALICE = {"accessKey": "alice01", "secretKey": "alice-secret-key", "defaultTopicPerm": "PUB|SUB",
         "defaultGroupPerm": "SUB"}  # fmt: skip
CAROL = {"accessKey": "carol01", "secretKey": "carol-secret-key", "defaultTopicPerm": "PUB|SUB",
         "defaultGroupPerm": "SUB"}  # fmt: skip


def _b64(text: str | bytes) -> str:
    return base64.b64encode(text if isinstance(text, bytes) else text.encode()).decode()


def acl_secret(accounts: list[dict]) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "mq-acl"}, "type": "Opaque",
            "data": {"plain_acl.yml": _b64(yaml.safe_dump({"accounts": accounts})),
                     "accessKey": _b64(ADMIN["accessKey"]),
                     "secretKey": _b64(ADMIN["secretKey"])}}  # fmt: skip


@pytest.fixture(scope="module")
def secure(
    node_cluster: KubeCluster, images: E2EImages, operator_release: str, tmp_path_factory
) -> Iterator[tuple]:
    kube = node_cluster
    certs = make_certs(tmp_path_factory.mktemp("certs"))
    ns = kube.create_namespace("e2e-secure")
    try:
        kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "mq-tls"},
                    "type": "kubernetes.io/tls",
                    "data": {"tls.crt": _b64(certs.server_cert.read_bytes()),
                             "tls.key": _b64(certs.server_key.read_bytes()),
                             "ca.crt": _b64(certs.ca.read_bytes())}}, "-n", ns)  # fmt: skip
        kube.apply(acl_secret([ADMIN, ALICE]), "-n", ns)
        security = {"tls": {"secretName": "mq-tls", "mode": "enforcing"}, "acl": {"secretName": "mq-acl"}}
        names = nameserver_cr("names", replicas=1)
        names["spec"].update(security)
        kube.apply(names, "-n", ns)
        spec_broker = broker_cr("orders", "names", groups=1, replicas=2, **security)
        spec_broker["spec"]["nameServer"]["tls"] = True
        kube.apply(spec_broker, "-n", ns)
        yield kube, ns, certs, images
    finally:
        delete_namespace(kube, ns)


def _client(certs, account: dict | None = None, tls: bool = True) -> ClientSettings:
    return ClientSettings(
        tls=(ClientTls(enabled=True, trust_cert_path=str(certs.ca), check_hostname=False) if tls
             else ClientTls()),
        access_key=(account or {}).get("accessKey", ""), secret_key=(account or {}).get("secretKey", ""),
        request_timeout=5, connect_timeout=3)  # fmt: skip


def _namesrv(kube: KubeCluster, ns: str) -> str:
    return f"{pod_ip(kube, ns, 'names-0')}:9876"



@pytest.mark.timeout(900)
def test_tls_and_acl_from_secrets_on_pods(secure):
    kube, ns, certs, images = secure
    wait_ready(kube, "nameserver", "names", ns, timeout=240)
    wait_ready(kube, "broker", "orders", ns, timeout=300)
    namesrv = _namesrv(kube, ns)
    alice = _client(certs, ALICE)

    # Master and slave registered over TLS with the admin account (the name server checks ACLs too).
    with SyncAdmin(namesrv, client=alice) as admin:
        info = kube.wait_until(lambda: (c := admin.cluster_info()).broker_addr_table.get("orders-0")
                               and len(c.broker_addr_table["orders-0"].broker_addrs) == 2 and c, 90,
                               "master and slave registered")  # fmt: skip
        addrs = info.broker_addr_table["orders-0"].broker_addrs
    # The operator creates the topic with its signed, TLS calls; the slave copies it (signed too).
    topic = f"Secure_{secrets.token_hex(3)}"
    kube.apply(topic_cr("secure-topic", topic, "orders", queues=2), "-n", ns)
    wait_ready(kube, "topic", "secure-topic", ns, timeout=90)
    with SyncAdmin(namesrv, client=_client(certs, ADMIN)) as admin:
        kube.wait_until(
            lambda: all(topic in topics_on(admin, a) for a in addrs.values()), 60, "topic on both"
        )

    with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv, client=alice) as producer:
        sent = [producer.send(Message(topic, f"s{i}".encode())).msg_id for i in range(20)]
    with SyncPullConsumer(f"GID_SECURE_{secrets.token_hex(3)}", namesrv, client=alice) as consumer:
        consumer.assign(consumer.fetch_queues(topic))
        consumer.seek_to_begin()
        got: list[bytes] = []
        kube.wait_until(
            lambda: got.extend(m.body for m in consumer.poll(timeout=2)) or len(got) >= 20, 60, "20"
        )
    assert len(sent) == 20 and sorted(got) == sorted(f"s{i}".encode() for i in range(20))

    # Turned away: plain TCP, TLS without an account, an account the file does not (yet) have.
    assert try_send(namesrv, topic, _client(certs, ALICE, tls=False)) != "sent"
    assert "No accessKey is configured" in try_send(namesrv, topic, _client(certs))
    assert "No acl config for carol01" in try_send(namesrv, topic, _client(certs, CAROL))

    # An edited plain_acl.yml applies in place: carol gets in, and no pod was replaced.
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(kube, ns)}
    kube.apply(acl_secret([ADMIN, ALICE, CAROL]), "-n", ns)
    t0 = time.monotonic()
    kube.wait_until(lambda: try_send(namesrv, topic, _client(certs, CAROL)) == "sent", 180,
                    "carol01 accepted after the Secret's edit", interval=3)  # fmt: skip
    took = time.monotonic() - t0
    time.sleep(5)
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(kube, ns)}
    assert after == before, f"pods were replaced by a plain_acl.yml edit: {before} -> {after}"
    print(f"plain_acl.yml edit applied in {took:.0f} s without a restart")
