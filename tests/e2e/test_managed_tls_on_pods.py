"""Certificates the operator manages (spec.tls.managed) on real pods: a NameServer and a Broker
(2 groups) with ACL 2.0 serving TLS with certificates issued from the namespace's cluster CA, and a
TLS User whose client certificate, from the clients' CA, is its only credential. A forced CA renewal
issues every server certificate again and rolls the pods one at a time while that user's client,
trusting only the first CA certificate, sends throughout: no send fails. A replaced CA key: trusted
first, issuing next, the old one retired last, every step a roll with no failed send. An application
pod mounting the User's Secret, the unmodified Java 4.x client and the official 5.x client over TLS."""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

import pytest

from pyrocketmq.client import ClientSettings, ClientTls
from pyrocketmq.operator import ca_key, certs
from pyrocketmq.operator.managed_tls import CA_SECRET, CA_SERIAL, CLIENTS_CA_SECRET, FORCE_RENEW
from tests.conformance import maven
from tests.conformance.jvm import JAVA_SOURCES, JavaPrograms
from tests.e2e.helpers import (
    GROUP,
    Sender,
    broker_cr,
    get,
    group_cr,
    nameserver_cr,
    namespace_fixture,
    pod_ip,
    pod_ready,
    pods,
    run_pod,
    topic_cr,
    try_send,
    wait_ready,
)
from tests.k8s.cluster import KubeCluster

ns = namespace_fixture("e2e-mtls")



def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _secret_text(kube: KubeCluster, ns: str, name: str, key: str) -> str:
    return base64.b64decode(get(kube, "secret", name, ns)["data"][key]).decode()


def _data(kube: KubeCluster, ns: str, name: str) -> dict[str, str]:
    """A Secret's keys, decoded."""
    return {k: base64.b64decode(v).decode() for k, v in (get(kube, "secret", name, ns)["data"] or {}).items()}


def _uids(kube: KubeCluster, ns: str, names: list[str]) -> dict[str, str]:
    found = {p["metadata"]["name"]: p for p in pods(kube, ns)}
    return {n: found[n]["metadata"]["uid"] if n in found and pod_ready(found[n]) else "" for n in names}


def _started_with_their_secrets(kube: KubeCluster, ns: str, names: list[str]) -> bool:
    """Every pod of ``names`` Ready and created after its certificate Secret was last written."""
    found = {p["metadata"]["name"]: p for p in pods(kube, ns)}
    for name in names:
        leaf = "tlsns-tls" if name.startswith("tlsns") else "tlsbr-tls"
        issued = get(kube, "secret", leaf, ns)["metadata"]["annotations"][ca_key.ISSUED_AT]
        pod = found.get(name)
        if pod is None or not pod_ready(pod) or pod["metadata"]["creationTimestamp"] < issued:
            return False
    return True


def _user_client(kube: KubeCluster, ns: str, secret: str, folder: Path, trust: Path) -> ClientSettings:
    """Client settings presenting the certificate in a TLS User's Secret (and signing nothing)."""
    folder.mkdir(parents=True, exist_ok=True)
    for key in ("tls.crt", "tls.key"):
        (folder / key).write_text(_secret_text(kube, ns, secret, key))
    tls = ClientTls(enabled=True, trust_cert_path=str(trust), check_hostname=False,
                    cert_path=str(folder / "tls.crt"), key_path=str(folder / "tls.key"))  # fmt: skip
    return ClientSettings(tls=tls, request_timeout=5, connect_timeout=3)


def _app_pod_with_the_users_certificate(kube: KubeCluster, ns: str, image: str, topic: str) -> None:
    """An application pod mounting the TLS User's Secret: its certificate is the pod's only credential."""
    mount = "/etc/rocketmq-user"
    produce = ["pyrocketmq", "produce", "-n", f"tlsns.{ns}.svc:9876", "-t", topic, "-c", "10", "--body",
               "from-the-app-pod", "-q", "--tlsTrustCert", f"{mount}/ca.crt", "--tlsCert", f"{mount}/tls.crt",
               "--tlsKey", f"{mount}/tls.key"]  # fmt: skip
    phase, logs = run_pod(kube, ns, image, produce, name="app-producer", secret_mount=("app-cert", mount))
    assert phase == "Succeeded" and "sent 10 message(s)" in logs, logs
    print("an application pod mounting Secret app-cert sent 10 messages as user app (its certificate)")


def _java_clients_with_credentials_over_tls(kube: KubeCluster, ns: str, namesrv: str, topic: str,
                                            tmp: Path) -> None:
    """The unmodified Java 4.x client (ACL signing, TLS checking the servers' chain) through the name
    servers' Service, and the official Java 5.x client on a broker pod's gRPC port (spec.grpc), both
    over TLS with a secretKey User's credentials: they send (and the 5.x client receives) where the
    user's ACL allows; with a wrong password they are refused."""
    group = f"G5_{secrets.token_hex(3)}"
    kube.apply(group_cr("g5", group, "tlsbr"), "-n", ns)
    acl = [{"resources": [f"Topic:{topic}", f"Group:{group}"], "actions": ["Pub", "Sub"]}]
    kube.apply({"apiVersion": GROUP, "kind": "User", "metadata": {"name": "app5"},
                "spec": {"clusterRef": {"name": "tlsbr"}, "acl": acl}}, "-n", ns)  # fmt: skip
    wait_ready(kube, "consumergroup", "g5", ns, timeout=90)
    wait_ready(kube, "user", "app5", ns, timeout=120)
    password = _secret_text(kube, ns, "app5", "password")
    trust = tmp / "java-trust.crt"
    trust.write_text(_secret_text(kube, ns, "tlsbr-tls", "ca.crt"))
    java4 = JavaPrograms(maven.resolve(maven.CLIENT), log_dir=tmp / "java4")
    app4 = {"tls.enable": "true", "tls.test.mode.enable": "false", "tls.client.authServer": "true",
            "tls.client.trustCertPath": str(trust), "acl.accessKey": "app5", "acl.secretKey": password}
    sent4 = java4.run("ProducerScenario", [namesrv, topic, 3, "sync", "pg_app5"], timeout=120,
                      jvm_props=app4).json()  # fmt: skip
    assert sent4["errors"] == 0, [s.get("error") for s in sent4["sent"] if "error" in s][:2]
    wrong4 = java4.run("ProducerScenario", [namesrv, topic, 1, "sync", "pg_app5"], timeout=120,
                       jvm_props={**app4, "acl.secretKey": "not-the-password"}).json()  # fmt: skip
    assert wrong4["errors"] == 1, wrong4
    print("unmodified Java 4.x client over TLS (server chain checked) signing as user app5: 3 sent; "
          "a wrong password refused")
    java5 = JavaPrograms(maven.resolve(maven.CLIENT5), log_dir=tmp / "java5",
                         sources=JAVA_SOURCES.with_name("java5"))  # fmt: skip
    java5.compile()
    endpoint = f"{pod_ip(kube, ns, 'tlsbr-0-0')}:8081"
    app5 = {"tls": "true", "acl.accessKey": "app5", "acl.secretKey": password}
    sent = java5.run("Producer5Scenario", [endpoint, topic, "normal", 3], timeout=120, jvm_props=app5).json()
    assert sent["errors"] == [] and len(sent["sent"]) == 3, sent
    # these 3, the probe the user's client sent before, the application pod's 10 and the Java 4.x client's 3
    got = java5.run("Consumer5Scenario", [endpoint, topic, group, "simple", 17, 30], timeout=120,
                    jvm_props=app5).json()  # fmt: skip
    assert {s["messageId"] for s in sent["sent"]} <= {d["messageId"] for d in got["deliveries"]}, got
    wrong = java5.run("Producer5Scenario", [endpoint, topic, "normal", 1], timeout=120,
                      jvm_props={**app5, "acl.secretKey": "not-the-password"})  # fmt: skip
    assert "check signature failed." in wrong.stdout + wrong.stderr, wrong.stdout[-500:]
    print(f"official Java 5.x client over TLS as user app5: 3 sent, {len(got['deliveries'])} received; "
          "a wrong password refused")


@pytest.mark.timeout(1500)
def test_managed_certificates_renewed_and_rotated_while_a_client_sends(node_cluster, images, ns, tmp_path):
    """spec.tls.managed: the operator's CAs, server certificates and a TLS User's client certificate;
    a forced CA renewal re-issues every server certificate and rolls the pods while the user's client,
    which trusts only the first CA certificate, sends throughout: no send fails."""
    kube = node_cluster
    root_pw = secrets.token_urlsafe(16)
    kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "mq-root"}, "type": "Opaque",
                "data": {"username": _b64("root"), "password": _b64(root_pw)}}, "-n", ns)  # fmt: skip
    # Two name servers, rolled one at a time: a restarted one knows no broker until they register
    # again, the other answers the clients meanwhile.
    names = nameserver_cr("tlsns", replicas=2)
    names["spec"]["tls"] = {"managed": True}
    names["spec"]["auth"] = {"secretName": "mq-root"}
    brokers = broker_cr("tlsbr", "tlsns", groups=2, replicas=1, replicationMode="ASYNC",
                        tls={"managed": True}, auth={"secretName": "mq-root"})
    brokers["spec"]["nameServer"]["tls"] = True
    kube.apply(names, "-n", ns)
    kube.apply(brokers, "-n", ns)
    topic, other = (f"{p}_{secrets.token_hex(3)}" for p in ("Mtls", "Closed"))
    kube.apply(topic_cr("mtls-topic", topic, "tlsbr", queues=2), "-n", ns)
    kube.apply(topic_cr("closed-topic", other, "tlsbr", queues=1), "-n", ns)
    app = {"clusterRef": {"name": "tlsbr"}, "authentication": {"type": "tls", "secretName": "app-cert"},
           "acl": [{"resources": [f"Topic:{topic}"], "actions": ["Pub"]}]}  # fmt: skip
    kube.apply({"apiVersion": GROUP, "kind": "User", "metadata": {"name": "app"}, "spec": app}, "-n", ns)
    wait_ready(kube, "nameserver", "tlsns", ns, timeout=240)
    wait_ready(kube, "broker", "tlsbr", ns, timeout=300)
    for name in ("mtls-topic", "closed-topic"):
        wait_ready(kube, "topic", name, ns, timeout=90)
    wait_ready(kube, "user", "app", ns, timeout=120)
    old_ca = _secret_text(kube, ns, CA_SECRET, "ca.crt")
    trust = tmp_path / "first-ca.crt"
    trust.write_text(old_ca)
    assert certs.signed_by(_secret_text(kube, ns, "tlsbr-tls", "tls.crt"), old_ca)
    user_cert = _secret_text(kube, ns, "app-cert", "tls.crt")
    assert certs.signed_by(user_cert, _secret_text(kube, ns, CLIENTS_CA_SECRET, "ca.crt"))
    assert "CN=app" in certs.info(user_cert).subject
    # From the node through the name servers' Service (its address outlives their pods).
    namesrv = f"{kube.get('service', 'tlsns', '-n', ns)['spec']['clusterIP']}:9876"
    client = _user_client(kube, ns, "app-cert", tmp_path / "app", trust)
    plain = ClientSettings(request_timeout=5, connect_timeout=3)
    assert try_send(namesrv, topic, plain) != "sent"  # TLS only
    nobody = ClientSettings(tls=ClientTls(enabled=True, trust_cert_path=str(trust), check_hostname=False),
                            request_timeout=5, connect_timeout=3)  # fmt: skip
    assert "username cannot be null" in try_send(namesrv, topic, nobody)  # no certificate, no signature
    assert "no permission" in try_send(namesrv, other, client).lower()  # the user's ACL holds
    assert try_send(namesrv, topic, client) == "sent"
    _app_pod_with_the_users_certificate(kube, ns, images.project, topic)
    _java_clients_with_credentials_over_tls(kube, ns, namesrv, topic, tmp_path)
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
    for name in (CA_SECRET, CLIENTS_CA_SECRET, "tlsns-tls", "tlsbr-tls", "app-cert"):  # what the README shows
        found = certs.info(_secret_text(kube, ns, name, "ca.crt" if name.endswith("-ca") else "tls.crt"))
        print(f"{name}: {found.subject}, serial {found.serial:x}, until {found.not_after:%Y-%m-%d}")
    assert certs.info(new_ca).serial != certs.info(old_ca).serial
    for leaf in ("tlsns-tls", "tlsbr-tls"):
        cert = _secret_text(kube, ns, leaf, "tls.crt")
        assert certs.signed_by(cert, old_ca) and get(kube, "secret", leaf, ns)["metadata"]["annotations"][
            CA_SERIAL] == str(certs.info(new_ca).serial)
    assert sender.failures == [], sender.failures[:5]
    print(f"CA renewed and 4 server pods rolled: {len(sender.acked)} sends of user app (by its certificate) "
          "acknowledged, none failed")
    _key_replaced_while_sending(kube, ns, namesrv, topic, trust, tmp_path, server_pods)


def _key_replaced_while_sending(kube: KubeCluster, ns: str, namesrv: str, topic: str, first_trust: Path,
                                tmp: Path, server_pods: list[str]) -> None:
    """pyrocketmq.io/replace-key: the new CA is trusted everywhere first (pods roll), then issues every
    certificate (pods roll again). A client trusting only the old CA sends through the first step;
    restarted with the new bundle from its Secret, it sends through the second: no send fails."""
    kube.kubectl("annotate", "secret", CA_SECRET, "-n", ns, f"{ca_key.REPLACE_KEY}=true",
                 f"{ca_key.GRACE}=0")  # fmt: skip
    before = _uids(kube, ns, server_pods)
    old_client = Sender(namesrv, topic, pause=0.05, client=_user_client(kube, ns, "app-cert", tmp / "old",
                                                                        first_trust)).__enter__()  # fmt: skip
    try:
        next_ca = kube.wait_until(lambda: _data(kube, ns, CA_SECRET).get(ca_key.NEXT_CERT, ""), 60,
                                  "the new CA aside")  # fmt: skip
        kube.wait_until(lambda: next_ca in _secret_text(kube, ns, "app-cert", "ca.crt"), 120,
                        "the user's Secret trusting the new CA")  # fmt: skip
        bundle = tmp / "bundle.crt"
        bundle.write_text(_secret_text(kube, ns, "app-cert", "ca.crt"))
        restarted = _user_client(kube, ns, "app-cert", tmp / "new", bundle)
        new_client = Sender(namesrv, topic, pause=0.05, client=restarted).__enter__()
        new_client.wait_for(10)
        old_client.wait_for(len(old_client.acked) + 10)
    finally:
        old_client.__exit__()  # the application restarted with the new bundle
    try:
        kube.wait_until(lambda: _secret_text(kube, ns, CA_SECRET, "ca.crt") == next_ca, 600,
                        "the new key promoted once every pod trusts it", interval=2)  # fmt: skip
        promoted = _uids(kube, ns, server_pods)
        assert all(promoted[n] != before[n] for n in server_pods), (before, promoted)  # step 1 rolled all
        kube.wait_until(lambda: all(certs.signed_by(_secret_text(kube, ns, leaf, "tls.crt"), next_ca)
                                    for leaf in ("tlsns-tls", "tlsbr-tls")), 120, "issued by the new key")
        kube.wait_until(lambda: all(u and u != promoted[n] for n, u in _uids(kube, ns, server_pods).items()),
                        600, "every server pod replaced again and Ready", interval=2)  # fmt: skip
        wait_ready(kube, "broker", "tlsbr", ns, timeout=180)
        new_client.wait_for(len(new_client.acked) + 20)
        # 3. the old CA leaves every bundle once every pod holds a certificate of the new key (it may
        # begin as soon as the second roll ends: the pods are checked against their Secrets, not
        # against a snapshot taken after that)
        kube.wait_until(lambda: _secret_text(kube, ns, CA_SECRET, "ca-bundle.crt") == next_ca, 300,
                        "the old CA retired", interval=2)  # fmt: skip
        kube.wait_until(lambda: all(_secret_text(kube, ns, leaf, "ca.crt") == next_ca
                                    for leaf in ("tlsns-tls", "tlsbr-tls")), 120, "the bundles without it")
        kube.wait_until(lambda: _started_with_their_secrets(kube, ns, server_pods), 600,
                        "every server pod restarted with the new bundle and Ready", interval=2)  # fmt: skip
        wait_ready(kube, "broker", "tlsbr", ns, timeout=180)
        new_client.wait_for(len(new_client.acked) + 20)
    finally:
        new_client.__exit__()
    assert old_client.failures == [] and new_client.failures == [], (old_client.failures[:3],
                                                                     new_client.failures[:3])  # fmt: skip
    for leaf in ("tlsns-tls", "tlsbr-tls", "app-cert"):
        assert _secret_text(kube, ns, leaf, "ca.crt") == next_ca, leaf
    retired = _user_client(kube, ns, "app-cert", tmp / "retired", first_trust)
    assert try_send(namesrv, topic, retired) != "sent"  # what trusts only the old CA gets nowhere
    print(f"CA key replaced, 4 server pods rolled three times: {len(old_client.acked)} sends trusting the "
          f"old CA, then {len(new_client.acked)} trusting the bundle, none failed; the old CA retired")
