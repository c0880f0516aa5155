"""Which user a client certificate names: only certificates a CA of ``authenticationCertificateCaPath``
issued directly name anyone (their common name)."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509

from pyrocketmq.operator import certs
from pyrocketmq.remoting.properties import ConfigError
from pyrocketmq.server.auth_settings import read_auth_settings
from pyrocketmq.server.cert_users import CertUsers

NOW = datetime.datetime.now(datetime.UTC)


def _der(pem: str) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding

    return x509.load_pem_x509_certificate(pem.encode()).public_bytes(Encoding.DER)


def test_a_certificate_names_its_common_name_only_when_a_listed_ca_issued_it():
    clients_ca, clients_key = certs.new_ca("clients", NOW, 30)
    renewed_ca, _ = certs.new_ca("clients", NOW, 60, clients_key)  # the same key, renewed
    servers_ca, servers_key = certs.new_ca("servers", NOW, 30)
    alice, _ = certs.issue(clients_ca, clients_key, "alice", [], NOW, 10)
    root, _ = certs.issue(servers_ca, servers_key, "root", ["broker"], NOW, 10)
    users = CertUsers.from_pem(renewed_ca)  # clients trusting only the renewed CA certificate
    assert users.username(_der(alice)) == "alice"
    assert users.username_pem(alice) == "alice"
    assert users.username(_der(root)) is None
    assert users.username(b"\x30\x03garbage") is None and users.username(None) is None
    assert users.username_pem(b"-----BEGIN CERTIFICATE-----\nnope\n") is None
    both = CertUsers.from_pem(servers_ca + clients_ca)
    assert both.username(_der(root)) == "root" and both.username(_der(alice)) == "alice"
    assert not CertUsers.from_pem("") and CertUsers.from_pem("").username(_der(alice)) is None


def test_the_key_loads_its_file_at_start_and_names_itself_when_it_cannot(tmp_path):
    ca, _ = certs.new_ca("clients", NOW, 30)
    good, bad = tmp_path / "clients-ca.crt", tmp_path / "bad.crt"
    good.write_text(ca)
    bad.write_text("not a certificate")

    def settings(path: str):
        return read_auth_settings(lambda k, d: {"authenticationCertificateCaPath": path}.get(k, d),
                                  lambda k, d: d)  # fmt: skip

    assert settings(str(good)).cert_users()
    for path in (str(bad), str(tmp_path / "missing.crt")):
        with pytest.raises(ConfigError, match="authenticationCertificateCaPath"):
            settings(path)
