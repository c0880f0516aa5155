"""Users authenticated by TLS client certificates (``authenticationCertificateCaPath``): a client
certificate issued directly by one of the CA certificates in that file names the ACL 2.0 user of its
subject's common name. The TLS handshake has already checked the chain against
``tls.server.trustCertPath`` and the validity dates; this decides *whose* certificate it is, so the
trusted file may hold other CAs too (the servers' own, whose certificates name no user). Pure: no I/O
beyond reading the CA file once.

>>> users = CertUsers.from_pem("")  # no CA: nobody is known by certificate
>>> users.username(b"not a certificate") is None
True
"""

from __future__ import annotations

from collections import OrderedDict

from pyrocketmq.remoting.properties import ConfigError

try:
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.serialization import Encoding
    from cryptography.x509.oid import NameOID
except ImportError:  # pragma: no cover - the [operator] extra (and every image) installs it
    x509 = None  # type: ignore[assignment]  # no certificate users without it: from_pem says so

CA_PATH_KEY = "authenticationCertificateCaPath"
CACHE_SIZE = 1024
"""Certificates (DER) whose user is remembered: a connection's certificate is judged once."""


class CertUsers:
    """Which user a client certificate names, if a CA of the file issued it."""

    def __init__(self, cas: list[x509.Certificate]) -> None:
        self._cas = cas
        self._known: OrderedDict[bytes, str | None] = OrderedDict()

    @classmethod
    def from_pem(cls, pem: str) -> CertUsers:
        """From PEM CA certificates (ConfigError if the text holds something else)."""
        if not pem.strip():
            return cls([])
        if x509 is None:
            raise ConfigError(
                f"{CA_PATH_KEY} needs the cryptography package: pip install 'pyrocketmq-k8s[operator]'"
            )
        try:
            cas = x509.load_pem_x509_certificates(pem.encode())
        except ValueError as e:
            raise ConfigError(f"{CA_PATH_KEY}: not PEM CA certificates: {e}") from None
        return cls(cas)

    @classmethod
    def from_file(cls, path: str) -> CertUsers:
        try:
            with open(path, encoding="ascii") as f:
                return cls.from_pem(f.read())
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{CA_PATH_KEY}={path}: {e}") from None

    def __bool__(self) -> bool:
        return bool(self._cas)

    def username(self, der: bytes | None) -> str | None:
        """The common name of ``der`` (a DER certificate) when one of the CAs issued it, else None."""
        if not der or not self._cas:
            return None
        if der in self._known:
            self._known.move_to_end(der)
            return self._known[der]
        name = self._judge(der)
        self._known[der] = name
        if len(self._known) > CACHE_SIZE:
            self._known.popitem(last=False)
        return name

    def username_pem(self, pem: bytes | str | None) -> str | None:
        """:meth:`username` of a PEM certificate (how gRPC hands over the peer's)."""
        if not pem or not self._cas:
            return None
        try:
            cert = x509.load_pem_x509_certificate(pem.encode() if isinstance(pem, str) else pem)
        except ValueError:
            return None
        return self.username(cert.public_bytes(Encoding.DER))

    def _judge(self, der: bytes) -> str | None:
        try:
            cert = x509.load_der_x509_certificate(der)
        except ValueError:
            return None
        for ca in self._cas:
            try:
                cert.verify_directly_issued_by(ca)
            except (ValueError, TypeError, InvalidSignature):
                continue
            names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
            value = names[0].value if names else ""
            return value if isinstance(value, str) and value else None
        return None
