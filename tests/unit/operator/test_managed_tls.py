"""spec.tls.managed: the cluster CA and the server certificates the operator keeps in Secrets
(against the in-memory API of test_reconcile), and the certificate rules themselves."""

from __future__ import annotations

import asyncio
import base64
import datetime
import logging

import pytest
from cryptography import x509

from pyrocketmq.operator import ca_key, certs
from pyrocketmq.operator.context import Context, ReconcileError
from pyrocketmq.operator.managed_tls import (
    CA_SECRET,
    CA_SERIAL,
    CLIENTS_CA_SECRET,
    FORCE_RENEW,
    ensure_client_certificate,
)
from pyrocketmq.operator.model import BrokerModel, ObjectRef, SpecError
from pyrocketmq.operator.render import broker_conf
from pyrocketmq.operator.render.common import ANNOTATION_SECRETS_HASH, TLS_MOUNT
from pyrocketmq.operator.settings import OperatorSettings
from pyrocketmq.operator.tls_spec import Tls
from pyrocketmq.server.cert_users import CertUsers

from .conftest import body, broker, conf_dict
from .test_reconcile import FakeKube, run

NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)


def _data(kube: FakeKube, name: str, key: str) -> str:
    return base64.b64decode(kube.objects[("Secret", "prod", name)]["data"][key]).decode()


def _pod_hash(kube: FakeKube, sts: str) -> str:
    return kube.objects[("StatefulSet", "prod", sts)]["spec"]["template"]["metadata"]["annotations"][
        ANNOTATION_SECRETS_HASH
    ]


def _public(pem: str) -> bytes:
    return (
        x509.load_pem_x509_certificate(pem.encode())
        .public_key()
        .public_bytes(certs.serialization.Encoding.PEM, certs.serialization.PublicFormat.SubjectPublicKeyInfo)
    )


def test_a_managed_name_server_gets_a_ca_and_a_certificate_for_its_names_once():
    kube = FakeKube()
    names = body("NameServer", "names", replicas=1, tls={"managed": True})
    events = run(kube, names)
    ca, leaf = _data(kube, CA_SECRET, "ca.crt"), _data(kube, "names-tls", "tls.crt")
    assert certs.signed_by(leaf, ca) and _data(kube, "names-tls", "ca.crt") == ca
    assert {"*.names-headless.prod.svc", "names.prod.svc.cluster.local"} <= set(certs.info(leaf).dns_names)
    assert {e[1] for e in events} >= {"CACreated", "CertificateIssued"}
    assert _pod_hash(kube, "names")
    run(kube, names)  # nothing is due: the same certificate, the same pods
    assert _data(kube, "names-tls", "tls.crt") == leaf


def test_a_forced_ca_renewal_keeps_the_key_reissues_certificates_and_rolls_the_pods():
    kube = FakeKube()
    names = body("NameServer", "names", replicas=1, tls={"managed": True})
    orders = body("Broker", "orders", nameServer={"name": "names", "tls": True}, tls={"managed": True})
    kube.add(names)
    run(kube, names)
    run(kube, orders)
    old_ca, old_leaf = _data(kube, CA_SECRET, "ca.crt"), _data(kube, "orders-tls", "tls.crt")
    before = _pod_hash(kube, "orders-0")
    kube.objects[("Secret", "prod", CA_SECRET)]["metadata"]["annotations"] = {FORCE_RENEW: "true"}
    events = run(kube, orders)
    ca_secret = kube.objects[("Secret", "prod", CA_SECRET)]
    new_ca = _data(kube, CA_SECRET, "ca.crt")
    assert FORCE_RENEW not in ca_secret["metadata"]["annotations"] and "CARenewed" in {e[1] for e in events}
    assert certs.info(new_ca).serial != certs.info(old_ca).serial and _public(new_ca) == _public(old_ca)
    new_leaf = _data(kube, "orders-tls", "tls.crt")
    assert new_leaf != old_leaf and _pod_hash(kube, "orders-0") != before
    # A client that trusts only the old CA certificate still accepts the new server certificate.
    assert certs.signed_by(new_leaf, old_ca) and certs.signed_by(old_leaf, new_ca)
    trust = _data(kube, "orders-tls", "ca.crt")
    assert old_ca in trust and new_ca in trust
    leaf_meta = kube.objects[("Secret", "prod", "orders-tls")]["metadata"]
    assert leaf_meta["annotations"][CA_SERIAL] == str(certs.info(new_ca).serial)
    # The name server's certificate follows at its own next reconcile.
    old_names_leaf = _data(kube, "names-tls", "tls.crt")
    run(kube, names)
    assert _data(kube, "names-tls", "tls.crt") != old_names_leaf


def test_certificates_are_due_before_they_expire_and_never_outlive_their_ca():
    ca, key = certs.new_ca("test CA", NOW, 10)
    leaf, _ = certs.issue(ca, key, "x", ["x.prod.svc"], NOW, 365)
    found = certs.info(leaf)
    assert found.not_after == certs.info(ca).not_after
    assert not certs.due(found, NOW, 5) and certs.due(found, NOW + datetime.timedelta(days=6), 5)
    other, _ = certs.new_ca("test CA", NOW, 10)
    assert certs.signed_by(leaf, ca) and not certs.signed_by(leaf, other)
    expired, _ = certs.new_ca("old CA", NOW - datetime.timedelta(days=20), 10)
    assert certs.bundle([ca, expired, ca], NOW) == ca  # expired ones leave, duplicates once


def test_managed_and_a_secret_of_ones_own_exclude_each_other():
    with pytest.raises(SpecError, match="not both"):
        broker(tls={"managed": True, "secretName": "mine"})
    with pytest.raises(SpecError, match="renewalDays"):
        broker(tls={"managed": True, "validityDays": 10, "renewalDays": 10})
    assert broker(tls={"managed": True}).tls.secret_name == "orders-tls"


def _ctx(kube: FakeKube, events: list) -> Context:
    return Context(kube=kube, settings=OperatorSettings(), event=lambda *e: events.append(e),  # type: ignore[arg-type]
                   log=logging.getLogger("test"))  # fmt: skip


def _der(pem: str) -> bytes:
    return x509.load_pem_x509_certificate(pem.encode()).public_bytes(certs.serialization.Encoding.DER)


def test_a_tls_user_gets_a_client_certificate_of_the_clients_ca_that_names_it_on_the_servers():
    kube, events = FakeKube(), []
    kube.add(body("NameServer", "names", replicas=1))
    kube.add(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": "root", "namespace": "prod"},
            "data": {
                "username": base64.b64encode(b"root").decode(),
                "password": base64.b64encode(b"pw").decode(),
            },
        }
    )
    orders = body(
        "Broker", "orders", nameServer={"name": "names"}, tls={"managed": True}, auth={"secretName": "root"}
    )
    run(kube, orders)
    user_ref = ObjectRef("User", "alice", "prod", "uid-alice", 1)
    asyncio.run(ensure_client_certificate(_ctx(kube, events), user_ref, "alice-cert", "alice", Tls(
        secret_name="orders-tls", managed=True)))  # fmt: skip
    secret = kube.objects[("Secret", "prod", "alice-cert")]
    assert (
        secret["type"] == "kubernetes.io/tls" and secret["metadata"]["ownerReferences"][0]["name"] == "alice"
    )
    cert, clients_ca = _data(kube, "alice-cert", "tls.crt"), _data(kube, CLIENTS_CA_SECRET, "ca.crt")
    assert certs.signed_by(cert, clients_ca) and not certs.signed_by(cert, _data(kube, CA_SECRET, "ca.crt"))
    assert _data(kube, "alice-cert", "ca.crt") == _data(
        kube, CA_SECRET, "ca-bundle.crt"
    )  # trusts the servers
    # what the brokers are given: the clients' bundle names users, the servers' certificates name nobody
    assert _data(kube, "orders-tls", "trust.crt") == _data(kube, "orders-tls", "ca.crt") + _data(
        kube, "orders-tls", "clients-ca.crt"
    )
    users = CertUsers.from_pem(_data(kube, "orders-tls", "clients-ca.crt"))
    assert users.username(_der(cert)) == "alice"
    assert users.username(_der(_data(kube, "orders-tls", "tls.crt"))) is None
    conf = conf_dict(broker_conf(BrokerModel.from_body(orders), 0, ["names-0.names-headless.prod.svc:9876"]))
    assert (conf["tls.server.need.client.auth"], conf["authenticationCertificateCaPath"]) == (
        "optional",
        f"{TLS_MOUNT}/clients-ca.crt",
    )
    assert conf["tls.server.trustCertPath"].endswith("/trust.crt") and conf[
        "tls.client.trustCertPath"
    ].endswith("/ca.crt")  # peers: the cluster CA alone
    # nothing due: the same certificate; the clients CA renewed: issued again
    asyncio.run(ensure_client_certificate(_ctx(kube, events), user_ref, "alice-cert", "alice", Tls(
        secret_name="orders-tls", managed=True)))  # fmt: skip
    assert _data(kube, "alice-cert", "tls.crt") == cert
    kube.objects[("Secret", "prod", CLIENTS_CA_SECRET)]["metadata"]["annotations"] = {FORCE_RENEW: "true"}
    asyncio.run(ensure_client_certificate(_ctx(kube, events), user_ref, "alice-cert", "alice", Tls(
        secret_name="orders-tls", managed=True)))  # fmt: skip
    assert _data(kube, "alice-cert", "tls.crt") != cert
    assert {"CARenewed", "CertificateIssued"} <= {e[1] for e in events}


def test_a_secret_of_another_type_is_not_overwritten_with_a_certificate():
    kube, events = FakeKube(), []
    kube.add({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": "alice", "namespace": "prod"}, "data": {}})  # fmt: skip
    with pytest.raises(ReconcileError, match="not a kubernetes.io/tls Secret"):
        ref = ObjectRef("User", "alice", "prod", "u", 1)
        tls = Tls(secret_name="x-tls", managed=True)
        asyncio.run(ensure_client_certificate(_ctx(kube, events), ref, "alice", "alice", tls))


def _pod(name: str, secret: str, created: str, ready: bool = True) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "prod", "creationTimestamp": created,
                         "labels": {"app.kubernetes.io/name": "pyrocketmq"}},
            "spec": {"volumes": [{"name": "tls", "secret": {"secretName": secret}}]},
            "status": {"conditions": [{"type": "Ready", "status": str(ready)}]}}  # fmt: skip


def test_a_ca_key_is_replaced_in_three_steps_never_issuing_or_retiring_what_a_pod_needs():
    kube = FakeKube()
    names = body("NameServer", "names", replicas=1, tls={"managed": True})
    run(kube, names)
    old_ca, old_leaf = _data(kube, CA_SECRET, "ca.crt"), _data(kube, "names-tls", "tls.crt")
    kube.objects[("Pod", "prod", "names-0")] = _pod("names-0", "names-tls", "2020-01-01T00:00:00Z")
    kube.objects[("Secret", "prod", CA_SECRET)]["metadata"]["annotations"] = {
        ca_key.REPLACE_KEY: "true",
        ca_key.GRACE: "0",
    }
    events = run(kube, names)
    # 1. the new CA is trusted beside the old one; certificates still come from the old key
    new_ca = _data(kube, CA_SECRET, ca_key.NEXT_CERT)
    assert _public(new_ca) != _public(old_ca) and _data(kube, CA_SECRET, "ca.crt") == old_ca
    assert new_ca in _data(kube, "names-tls", "ca.crt") and old_ca in _data(kube, "names-tls", "ca.crt")
    assert certs.signed_by(_data(kube, "names-tls", "tls.crt"), old_ca)
    assert "CAKeyReplacementStarted" in {e[1] for e in events}
    # the pod started before its Secret trusted the new CA: no promotion yet
    run(kube, names)
    assert _data(kube, CA_SECRET, "ca.crt") == old_ca and _data(kube, CA_SECRET, ca_key.NEXT_KEY)
    # 2. once the pod restarted with it (and is Ready), the new key issues every certificate
    kube.objects[("Pod", "prod", "names-0")] = _pod(
        "names-0", "names-tls", "2099-01-01T00:00:00Z", ready=False
    )
    run(kube, names)
    assert _data(kube, CA_SECRET, "ca.crt") == old_ca  # not Ready yet
    kube.objects[("Pod", "prod", "names-0")] = _pod("names-0", "names-tls", "2099-01-01T00:00:00Z")
    events = run(kube, names)
    assert _data(kube, CA_SECRET, "ca.crt") == new_ca
    assert ca_key.NEXT_KEY not in kube.objects[("Secret", "prod", CA_SECRET)]["data"]
    leaf = _data(kube, "names-tls", "tls.crt")
    assert leaf != old_leaf and certs.signed_by(leaf, new_ca) and not certs.signed_by(leaf, old_ca)
    assert old_ca in _data(kube, "names-tls", "ca.crt")  # still trusted while the pods roll
    assert {"CAKeyReplaced", "CertificateIssued"} <= {e[1] for e in events}
    # 3. once the pod restarted with a certificate of the new key, the old CA is trusted no more
    kube.objects[("Pod", "prod", "names-0")] = _pod("names-0", "names-tls", "2020-01-01T00:00:00Z")
    run(kube, names)
    assert old_ca in _data(kube, CA_SECRET, "ca-bundle.crt")  # the pod holds the old key's still
    kube.objects[("Pod", "prod", "names-0")] = _pod("names-0", "names-tls", "2099-01-02T00:00:00Z")
    events = run(kube, names)
    assert _data(kube, CA_SECRET, "ca-bundle.crt") == new_ca and _data(kube, "names-tls", "ca.crt") == new_ca
    assert certs.signed_by(_data(kube, "names-tls", "tls.crt"), new_ca)
    assert ca_key.RETIRE_AFTER not in kube.objects[("Secret", "prod", CA_SECRET)]["metadata"]["annotations"]
    assert "CAOldKeyRetired" in {e[1] for e in events}


def test_the_promotion_waits_for_the_grace_period_every_secret_and_every_pod():
    now = datetime.datetime(2026, 11, 29, 12, tzinfo=datetime.UTC)
    leaves = {"a-tls": {"metadata": {"annotations": {ca_key.ISSUED_AT: "2026-11-29T11:00:00Z"}}}}
    fresh = _pod("a-0", "a-tls", "2026-11-29T11:00:05Z")
    assert "grace" in ca_key.waiting_for([fresh], leaves, {"a-tls": True}, "2026-11-29T13:00:00Z", now)
    assert "a-tls" in ca_key.waiting_for([fresh], leaves, {"a-tls": False}, None, now)
    stale = _pod("a-1", "a-tls", "2026-11-29T10:59:59Z")
    assert "pod a-1" in ca_key.waiting_for([fresh, stale], leaves, {"a-tls": True}, None, now)
    other = _pod("x-0", "unrelated", "2020-01-01T00:00:00Z")  # mounts no managed certificate
    assert ca_key.waiting_for([fresh, other], leaves, {"a-tls": True}, "2026-11-29T11:30:00Z", now) is None


def test_a_retired_key_leaves_the_bundle_with_its_certificates_only():
    old, old_key = certs.new_ca("pyrocketmq cluster CA prod", NOW, 100)
    renewed, _ = certs.new_ca("pyrocketmq cluster CA prod", NOW + datetime.timedelta(days=1), 100, old_key)
    new, _ = certs.new_ca("pyrocketmq cluster CA prod", NOW, 100)
    both = certs.bundle([new, renewed, old], NOW)
    assert certs.with_key_of(both, new) == new
    assert sorted(certs.with_key_of(both, old).split("-----END")) == sorted((renewed + old).split("-----END"))
