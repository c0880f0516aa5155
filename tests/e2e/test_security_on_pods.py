"""TLS, ACL 1.0 and ACL 2.0 on real pods. First a NameServer and a Broker (one group, master +
slave) serving TLS only and checking one ``plain_acl.yml``, all from two Secrets a user creates. The
operator first reports that it may not read them (the chart's least-privilege default), then, with
``rbac.readSecrets=true``, mounts them, signs its own calls with the Secret's admin account and
creates a Topic; clients from the node get in only over TLS and with an account; an edited
``plain_acl.yml`` applies without a restart. Then a Broker with spec.auth (ACL 2.0) and User
resources: users, their generated passwords and ACLs on master and slave, edits, pruning, deletion."""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Iterator

import pytest
import yaml

from pyrocketmq.client import ClientSettings, ClientTls, Message, SyncAdmin, SyncProducer, SyncPullConsumer
from pyrocketmq.client.errors import MQError
from pyrocketmq.operator import certs
from pyrocketmq.operator.managed_tls import CA_SECRET, CA_SERIAL, FORCE_RENEW
from tests.conformance import maven
from tests.conformance.jvm import JavaPrograms
from tests.e2e.conftest import E2EImages, upgrade_release
from tests.e2e.helpers import (
    Sender,
    broker_cr,
    condition,
    delete_namespace,
    get,
    nameserver_cr,
    pod_ip,
    pod_ready,
    pods,
    topic_cr,
    topics_on,
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


def _set_read_secrets(kube: KubeCluster, images: E2EImages, on: bool) -> None:
    upgrade_release(kube, f"rbac.readSecrets={'true' if on else 'false'}")


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
        upgrade_release(kube, "rbac.readSecrets=false", "rbac.manageSecrets=false")


def _client(certs, account: dict | None = None, tls: bool = True) -> ClientSettings:
    return ClientSettings(
        tls=(ClientTls(enabled=True, trust_cert_path=str(certs.ca), check_hostname=False) if tls
             else ClientTls()),
        access_key=(account or {}).get("accessKey", ""), secret_key=(account or {}).get("secretKey", ""),
        request_timeout=5, connect_timeout=3)  # fmt: skip


def _namesrv(kube: KubeCluster, ns: str) -> str:
    return f"{pod_ip(kube, ns, 'names-0')}:9876"


def _try_send(namesrv: str, topic: str, settings: ClientSettings) -> str:
    try:
        with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv, client=settings) as producer:
            producer.send(Message(topic, b"probe"))
        return "sent"
    except MQError as e:
        return str(e)


@pytest.mark.timeout(900)
def test_tls_and_acl_from_secrets_on_pods(secure):
    kube, ns, certs, images = secure
    # Least privilege first: the operator may not read the Secrets and says which value to set.
    blocked = kube.wait_until(
        lambda: (c := condition(get(kube, "broker", "orders", ns), "Ready"))
        .get("reason") == "SecretForbidden" and c,
        90, "Broker says it may not read its Secrets", interval=1)  # fmt: skip
    assert "rbac.readSecrets=true" in blocked["message"], blocked
    _set_read_secrets(kube, images, True)
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
    assert _try_send(namesrv, topic, _client(certs, ALICE, tls=False)) != "sent"
    assert "No accessKey is configured" in _try_send(namesrv, topic, _client(certs))
    assert "No acl config for carol01" in _try_send(namesrv, topic, _client(certs, CAROL))

    # An edited plain_acl.yml applies in place: carol gets in, and no pod was replaced.
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(kube, ns)}
    kube.apply(acl_secret([ADMIN, ALICE, CAROL]), "-n", ns)
    t0 = time.monotonic()
    kube.wait_until(lambda: _try_send(namesrv, topic, _client(certs, CAROL)) == "sent", 180,
                    "carol01 accepted after the Secret's edit", interval=3)  # fmt: skip
    took = time.monotonic() - t0
    time.sleep(5)
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(kube, ns)}
    assert after == before, f"pods were replaced by a plain_acl.yml edit: {before} -> {after}"
    print(f"plain_acl.yml edit applied in {took:.0f} s without a restart")


def _acl2_client(password: str, user: str) -> ClientSettings:
    return ClientSettings(access_key=user, secret_key=password, request_timeout=5, connect_timeout=3)


def _user_cr(name: str, acl: list[dict], **spec: object) -> dict:
    return {"apiVersion": "pyrocketmq.io/v1alpha1", "kind": "User", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": "users"}, "acl": acl, **spec}}  # fmt: skip


def _password(kube: KubeCluster, ns: str, secret: str) -> str:
    data = kube.wait_until(lambda: (get(kube, "secret", secret, ns) or {}).get("data"), 60,
                           f"Secret {secret}")
    return base64.b64decode(data["password"]).decode()


def _users_on(admin: SyncAdmin, addrs: list[str]) -> list[set[str]]:
    return [{u["username"] for u in admin.list_users(broker_addr=a)} for a in addrs]


@pytest.mark.timeout(900)
def test_users_and_their_acls_from_user_resources_on_pods(secure, tmp_path):
    """ACL 2.0 from resources: a Broker with spec.auth, Users whose passwords the operator generates
    into Secrets, their ACLs on master and slave, applied live, pruned and deleted."""
    kube, ns, _certs, _images = secure
    upgrade_release(kube, "rbac.manageSecrets=true")
    kube.kubectl("delete", "broker", "orders", "-n", ns, "--wait=false")  # the first test's: make room
    root_pw = secrets.token_urlsafe(16)
    kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "mq-root"}, "type": "Opaque",
                "data": {"username": _b64("root"), "password": _b64(root_pw)}}, "-n", ns)  # fmt: skip
    names = nameserver_cr("plain", replicas=1)
    names["spec"]["auth"] = {"secretName": "mq-root"}  # the name server checks ACL 2.0 too
    kube.apply(names, "-n", ns)
    kube.apply(broker_cr("users", "plain", groups=1, replicas=2, auth={"secretName": "mq-root"}), "-n", ns)
    orders, other, group = (f"{p}_{secrets.token_hex(3)}" for p in ("Orders", "Other", "GID_ALICE"))
    kube.apply(topic_cr("orders-topic", orders, "users", queues=2), "-n", ns)
    kube.apply(topic_cr("other-topic", other, "users", queues=2), "-n", ns)
    alice_acl = [{"resources": [f"Topic:{orders}"], "actions": ["Pub", "Sub"]},
                 {"resources": [f"Group:{group}"], "actions": ["Sub"]},
                 {"resources": ["Topic:*"], "actions": ["All"], "decision": "Deny"}]  # fmt: skip
    kube.apply(_user_cr("alice", alice_acl), "-n", ns)
    kube.apply(_user_cr("bob", [{"resources": [f"Topic:{orders}"], "actions": ["Pub"],
                                 "sourceIps": ["192.0.2.0/24"]}]), "-n", ns)  # fmt: skip
    wait_ready(kube, "broker", "users", ns, timeout=300)
    for name in ("orders-topic", "other-topic"):
        wait_ready(kube, "topic", name, ns, timeout=120)
    alice = wait_ready(kube, "user", "alice", ns, timeout=120)
    # master, slave and the name server
    assert alice["status"]["secretName"] == "alice" and len(alice["status"]["brokers"]) == 3, alice["status"]
    wait_ready(kube, "user", "bob", ns, timeout=60)
    namesrv = f"{pod_ip(kube, ns, 'plain-0')}:9876"
    alice_pw, bob_pw = _password(kube, ns, "alice"), _password(kube, ns, "bob")
    root = _acl2_client(root_pw, "root")

    # Master, slave and name server all know alice (a slave elected master would serve her at once).
    # from the node: a name server's DNS name as its pod's address
    addrs = [f"{pod_ip(kube, ns, a.split('.')[0])}:{a.rsplit(':', 1)[1]}" if ".svc" in a else a
             for a in alice["status"]["brokers"]]
    with SyncAdmin(namesrv, client=root) as admin:
        assert all("alice" in users and "bob" in users for users in _users_on(admin, addrs))

    # alice publishes and consumes where her ACL allows, nowhere else; a wrong password is refused.
    with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv, client=_acl2_client(alice_pw, "alice")) as p:
        sent = [p.send(Message(orders, f"a{i}".encode())).msg_id for i in range(10)]
    assert len(sent) == 10
    denied = _try_send(namesrv, other, _acl2_client(alice_pw, "alice"))
    assert "no permission" in denied.lower() and other in denied, denied  # no route for it
    assert _try_send(namesrv, orders, _acl2_client("wrong-password", "alice")) != "sent"
    with SyncPullConsumer(group, namesrv, client=_acl2_client(alice_pw, "alice")) as consumer:
        consumer.assign(consumer.fetch_queues(orders))
        consumer.seek_to_begin()
        got: list[bytes] = []
        kube.wait_until(lambda: got.extend(m.body for m in consumer.poll(timeout=2)) or len(got) >= 10, 60,
                        "alice reads her 10 messages")  # fmt: skip
    assert sorted(got) == sorted(f"a{i}".encode() for i in range(10))
    # The unmodified Java client signs as alice (AclClientRPCHook): in where she may, out elsewhere.
    java = JavaPrograms(maven.resolve(maven.CLIENT), log_dir=tmp_path / "java")
    as_alice = {"acl.accessKey": "alice", "acl.secretKey": alice_pw}
    sent_java = java.run("ProducerScenario", [namesrv, orders, 5, "sync", "pg_alice"], timeout=120,
                         jvm_props=as_alice).json()  # fmt: skip
    assert sent_java["errors"] == 0, [s.get("error") for s in sent_java["sent"] if "error" in s][:2]
    refused_java = java.run("ProducerScenario", [namesrv, other, 1, "sync", "pg_alice"], timeout=120,
                            jvm_props=as_alice).json()  # fmt: skip
    assert refused_java["errors"] == 1

    # bob may publish only from 192.0.2.0/24; the rule edited away applies live, no pod replaced.
    assert "no permission" in _try_send(namesrv, orders, _acl2_client(bob_pw, "bob")).lower()
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(kube, ns)}
    # a user no User declares is pruned at bob's next reconcile
    with SyncAdmin(namesrv, client=root) as admin:
        admin.create_user("mallory", "mallory-password", broker_addr=addrs[0])
    kube.apply(_user_cr("bob", [{"resources": [f"Topic:{orders}"], "actions": ["Pub"]}]), "-n", ns)
    kube.wait_until(lambda: _try_send(namesrv, orders, _acl2_client(bob_pw, "bob")) == "sent", 60,
                    "bob may publish once his source rule is gone", interval=2)  # fmt: skip
    with SyncAdmin(namesrv, client=root) as admin:
        kube.wait_until(lambda: all("mallory" not in u for u in _users_on(admin, addrs)), 60,
                        "mallory pruned")
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(kube, ns)}
    assert after == before

    # A deleted User leaves every broker.
    kube.kubectl("delete", "user", "alice", "-n", ns, "--timeout=60s")
    with SyncAdmin(namesrv, client=root) as admin:
        assert all("alice" not in users and "bob" in users for users in _users_on(admin, addrs))
    assert _try_send(namesrv, orders, _acl2_client(alice_pw, "alice")) != "sent"


def _secret_text(kube: KubeCluster, ns: str, name: str, key: str) -> str:
    return base64.b64decode(get(kube, "secret", name, ns)["data"][key]).decode()


def _uids(kube: KubeCluster, ns: str, names: list[str]) -> dict[str, str]:
    found = {p["metadata"]["name"]: p for p in pods(kube, ns)}
    return {n: found[n]["metadata"]["uid"] if n in found and pod_ready(found[n]) else "" for n in names}


@pytest.mark.timeout(900)
def test_managed_certificates_renewed_and_rotated_while_a_client_sends(secure, tmp_path):
    """spec.tls.managed: the operator's CA and server certificates; a forced CA renewal re-issues
    every server certificate and rolls the pods while a client that trusts only the first CA
    certificate sends throughout: no send fails."""
    kube, ns, _certs, _images = secure
    upgrade_release(kube, "rbac.manageSecrets=true")
    for kind, name in (("broker", "users"), ("nameserver", "plain")):  # the previous test's: make room
        kube.kubectl("delete", kind, name, "-n", ns, "--wait=false", "--ignore-not-found")
    names = nameserver_cr("tlsns", replicas=1)
    names["spec"]["tls"] = {"managed": True}
    brokers = broker_cr("tlsbr", "tlsns", groups=2, replicas=1, tls={"managed": True})
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
    assert _try_send(namesrv, topic, ClientSettings(request_timeout=5, connect_timeout=3)) != "sent"
    server_pods = ["tlsns-0", "tlsbr-0-0", "tlsbr-1-0"]
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
    assert certs.info(new_ca).serial != certs.info(old_ca).serial
    for leaf in ("tlsns-tls", "tlsbr-tls"):
        cert = _secret_text(kube, ns, leaf, "tls.crt")
        assert certs.signed_by(cert, old_ca) and get(kube, "secret", leaf, ns)["metadata"]["annotations"][
            CA_SERIAL] == str(certs.info(new_ca).serial)
    assert sender.failures == [], sender.failures[:5]
    print(f"CA renewed and 3 server pods rolled: {len(sender.acked)} sends acknowledged, none failed")
