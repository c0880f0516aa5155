"""Throw-away certificates for TLS tests: a CA, a server certificate for 127.0.0.1/localhost and a
client certificate, written as PEM files."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    """A CA that signed neither: trusting only it must fail."""


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


def _ca(cn: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(ca_key, ca_cert, cn: str, server: bool) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    )
    if server:
        b = b.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return key, b.sign(ca_key, hashes.SHA256())


def make_certs(folder: Path) -> Certs:
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca("pyrocketmq test CA")
    _, other = _ca("some other CA")
    paths = Certs(
        folder / "ca.pem",
        folder / "server.pem",
        folder / "server.key",
        folder / "client.pem",
        folder / "client.key",
        folder / "other-ca.pem",
    )
    paths.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths.other_ca.write_bytes(other.public_bytes(serialization.Encoding.PEM))
    for cert_path, key_path, cn, server in (
        (paths.server_cert, paths.server_key, "localhost", True),
        (paths.client_cert, paths.client_key, "client", False),
    ):
        key, cert = _leaf(ca_key, ca_cert, cn, server)
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, key_path)
    return paths


@dataclass(frozen=True)
class UserCerts:
    ca: Path
    """The clients' CA: the certificates it issues name users."""
    certs: dict[str, tuple[Path, Path]]
    """user name → (certificate, key)."""


def make_user_certs(folder: Path, names: list[str], ca_name: str = "pyrocketmq test clients CA") -> UserCerts:
    """A clients' CA under ``folder`` and a client certificate (common name = the user) per name."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca(ca_name)
    ca_path = folder / "clients-ca.pem"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    out = {}
    for name in names:
        key, cert = _leaf(ca_key, ca_cert, name, server=False)
        out[name] = (folder / f"{name}.pem", folder / f"{name}.key")
        out[name][0].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, out[name][1])
    return UserCerts(ca_path, out)
