"""Certificates the operator manages (``spec.tls.managed``): a cluster CA per namespace, and a server
certificate per NameServer or Broker issued by it. Pure: no I/O (the clock is passed in).

A CA is *renewed* with the key it has (a new certificate, same subject and key): what the old CA
certificate signed and what the new one signs verify against either, so clients that trust the old
certificate keep connecting through the change while pods roll one at a time. Server certificates are
issued again before ``renewal_days`` of their validity are left, when the CA was renewed since, or when
the names they must carry changed. Keys are ECDSA P-256.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

BACKDATE = datetime.timedelta(minutes=5)
"""Certificates start a little in the past, for clocks slightly behind."""


@dataclass(frozen=True, slots=True)
class CertInfo:
    serial: int
    not_before: datetime.datetime
    not_after: datetime.datetime
    dns_names: tuple[str, ...]
    subject: str


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "pyrocketmq"),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _cert_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _load_key(pem: str) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an ECDSA key")
    return key


def new_ca(
    common_name: str, now: datetime.datetime, days: int, key_pem: str | None = None
) -> tuple[str, str]:
    """A self-signed CA certificate and its key (PEM); with ``key_pem``, a renewal keeping that key."""
    key = _load_key(key_pem) if key_pem else ec.generate_private_key(ec.SECP256R1())
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _cert_pem(cert), key_pem or _key_pem(key)


def issue(
    ca_cert_pem: str,
    ca_key_pem: str,
    common_name: str,
    dns_names: Sequence[str],
    now: datetime.datetime,
    days: int,
    ips: Sequence[str] = (),
) -> tuple[str, str]:
    """A server (and client) certificate for ``dns_names`` (and ``ips``) signed by the CA, and its key
    (PEM). It never outlives the CA certificate."""
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem.encode())
    ca_key = _load_key(ca_key_pem)
    key = ec.generate_private_key(ec.SECP256R1())
    until = min(now + datetime.timedelta(days=days), ca_cert.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(n) for n in dns_names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in ips]
            ),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return _cert_pem(cert), _key_pem(key)


def info(pem: str) -> CertInfo:
    """What the operator reads of a certificate (the first one of a PEM bundle)."""
    cert = x509.load_pem_x509_certificate(pem.encode())
    try:
        sans = tuple(
            cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
                x509.DNSName
            )
        )
    except x509.ExtensionNotFound:
        sans = ()
    return CertInfo(
        cert.serial_number,
        cert.not_valid_before_utc,
        cert.not_valid_after_utc,
        sans,
        cert.subject.rfc4514_string(),
    )


def due(cert: CertInfo, now: datetime.datetime, renewal_days: int) -> bool:
    """Within ``renewal_days`` of expiry (or expired): issue again."""
    return now >= cert.not_after - datetime.timedelta(days=renewal_days)


def signed_by(cert_pem: str, ca_cert_pem: str) -> bool:
    """``cert_pem`` verifies against the CA certificate's key."""
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    ca = x509.load_pem_x509_certificate(ca_cert_pem.encode())
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def bundle(pems: Iterable[str], now: datetime.datetime) -> str:
    """The CA certificates still valid at ``now``, each once, newest first (what pods and clients trust)."""
    seen: dict[int, tuple[datetime.datetime, str]] = {}
    for pem in pems:
        for block in _blocks(pem):
            cert = info(block)
            if cert.not_after > now:
                seen[cert.serial] = (cert.not_before, block)
    return "".join(block for _, block in sorted(seen.values(), reverse=True))


def with_key_of(pems: str, ca_cert_pem: str) -> str:
    """The certificates of the bundle ``pems`` that carry the public key of ``ca_cert_pem`` (what a
    finished key replacement keeps trusting: the current CA and its same-key renewals)."""

    def public(pem: str) -> bytes:
        key = x509.load_pem_x509_certificate(pem.encode()).public_key()
        return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)

    wanted = public(ca_cert_pem)
    return "".join(block for block in _blocks(pems) if public(block) == wanted)


def _blocks(pem: str) -> list[str]:
    end = "-----END CERTIFICATE-----"
    return [part.strip() + "\n" + end + "\n" for part in pem.split(end) if "BEGIN CERTIFICATE" in part]


def server_names(namespace: str, domain: str, services: Iterable[str]) -> list[str]:
    """The DNS names pods behind ``services`` answer to (each Service, and its pods through a headless
    one): short, namespaced and fully qualified (``domain``: the cluster's, ``cluster.local`` if empty)."""
    names = []
    for svc in services:
        for host in (svc, f"*.{svc}"):
            names += [
                host,
                f"{host}.{namespace}",
                f"{host}.{namespace}.svc",
                f"{host}.{namespace}.svc.{domain or 'cluster.local'}",
            ]
    return list(dict.fromkeys(names))
