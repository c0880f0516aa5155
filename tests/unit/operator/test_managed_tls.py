"""spec.tls.managed: the cluster CA and the server certificates the operator keeps in Secrets
(against the in-memory API of test_reconcile), and the certificate rules themselves."""

from __future__ import annotations

import base64
import datetime

import pytest
from cryptography import x509

from pyrocketmq.operator import certs
from pyrocketmq.operator.managed_tls import CA_SECRET, CA_SERIAL, FORCE_RENEW
from pyrocketmq.operator.model import SpecError
from pyrocketmq.operator.render.common import ANNOTATION_SECRETS_HASH

from .conftest import body, broker
from .test_reconcile import FakeKube, run

NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)


def _data(kube: FakeKube, name: str, key: str) -> str:
    return base64.b64decode(kube.objects[("Secret", "prod", name)]["data"][key]).decode()


def _pod_hash(kube: FakeKube, sts: str) -> str:
    return kube.objects[("StatefulSet", "prod", sts)]["spec"]["template"]["metadata"]["annotations"][
        ANNOTATION_SECRETS_HASH]


def _public(pem: str) -> bytes:
    return x509.load_pem_x509_certificate(pem.encode()).public_key().public_bytes(
        certs.serialization.Encoding.PEM, certs.serialization.PublicFormat.SubjectPublicKeyInfo)


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
