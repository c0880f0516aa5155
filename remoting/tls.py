"""TLS for the remoting protocol, configured with Apache RocketMQ's keys.

Servers (name server, broker) read ``tls.server.*`` from their config file:

- ``tls.server.mode``: ``disabled`` (plain only), ``permissive`` (both: a connection whose first
  byte is a TLS handshake record, 0x16, is served over TLS, any other in the clear — the remoting
  protocol's first byte is a length, never 0x16 for a sane frame) or ``enforcing`` (TLS only).
  Apache's default is ``permissive``; here a server without a certificate serves plain only.
- ``tls.server.certPath`` / ``tls.server.keyPath`` / ``tls.server.keyPassword``: the PEM
  certificate chain and key.
- ``tls.server.need.client.auth``: ``none``, ``optional`` or ``require`` a client certificate
  signed by ``tls.server.trustCertPath``.

Clients (the Python client's ``ClientSettings.tls``, a broker talking to name servers with
``tls.enable=true``) use :class:`ClientTls`: the server's certificate is checked against
``tls.client.trustCertPath`` (or the system's CAs) unless ``tls.client.authServer=false`` (Apache's
test mode, which trusts any server) — the chain, and the host name too with
``tls.client.verifyHostname=true``; ``tls.client.certPath``/``keyPath`` give a client certificate.

Between the servers themselves (a slave streaming its master's commitlog from the HA port, the
controllers' Raft messages to each other): TLS when the server's ``tls.server.mode`` is
``enforcing``, plain otherwise, both ways with the certificate the server serves with (a server and
client certificate). Both sides check the other's chain against the *peer trust*:
``tls.client.trustCertPath``, else ``tls.server.trustCertPath``, else (connecting) the system's CAs.
:meth:`ServerTls.peer_client` is the connecting side, never checking the host name (peers are reached
by pod IP); ``tls.client.authServer=false`` trusts any peer. :meth:`ServerTls.peer_context` is the
accepting side (the HA port): it requires the peer's certificate when a peer trust is set. So a
server whose ``tls.server.trustCertPath`` also trusts the clients' CA (their certificates name users,
see :mod:`pyrocketmq.server.cert_users`) still takes only its peers' certificates on the HA port.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

TLS_HANDSHAKE = 0x16
"""The first byte of a TLS ClientHello record."""


class TlsMode(StrEnum):
    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"


class TlsConfigError(ValueError):
    """A TLS setting that cannot work; the message names the key."""


_CLIENT_AUTH = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "require": ssl.CERT_REQUIRED}


def _bool(raw: str | None, default: bool) -> bool:
    return default if raw is None or not raw.strip() else raw.strip().lower() == "true"


@dataclass(frozen=True, slots=True)
class ServerTls:
    """How a server accepts TLS (see the module docstring)."""

    mode: TlsMode = TlsMode.DISABLED
    cert_path: str = ""
    key_path: str = ""
    key_password: str = ""
    need_client_auth: str = "none"
    trust_cert_path: str = ""
    peer_trust_path: str = ""
    """What peers' certificates must chain to: ``tls.client.trustCertPath``, else ``trust_cert_path``."""

    @classmethod
    def from_conf(cls, conf: Mapping[str, str]) -> ServerTls:
        """From ``tls.server.*`` keys; without a certificate the mode is ``disabled`` (a mode other
        than disabled named without one is an error)."""
        raw_mode = (conf.get("tls.server.mode") or "").strip().lower()
        cert, key = (
            (conf.get("tls.server.certPath") or "").strip(),
            (conf.get("tls.server.keyPath") or "").strip(),
        )
        if raw_mode and raw_mode not in TlsMode.__members__.values():
            raise TlsConfigError(f"tls.server.mode={raw_mode}: use disabled, permissive or enforcing")
        auth = (conf.get("tls.server.need.client.auth") or "none").strip().lower()
        if auth not in _CLIENT_AUTH:
            raise TlsConfigError(f"tls.server.need.client.auth={auth}: use none, optional or require")
        if not cert and not key:
            if raw_mode in ("permissive", "enforcing"):
                raise TlsConfigError(
                    f"tls.server.mode={raw_mode} needs tls.server.certPath and tls.server.keyPath"
                )
            return cls()
        if not cert or not key:
            raise TlsConfigError("give both tls.server.certPath and tls.server.keyPath (PEM files)")
        tls = cls(
            mode=TlsMode(raw_mode or "permissive"), cert_path=cert, key_path=key,
            key_password=(conf.get("tls.server.keyPassword") or "").strip(), need_client_auth=auth,
            trust_cert_path=(conf.get("tls.server.trustCertPath") or "").strip(),
            peer_trust_path=(conf.get("tls.client.trustCertPath") or conf.get("tls.server.trustCertPath")
                             or "").strip(),
        )
        tls.context()  # fail at start, naming the file, rather than at the first connection
        return tls

    @property
    def enabled(self) -> bool:
        return self.mode is not TlsMode.DISABLED

    def _context(self, trust: str, verify: ssl.VerifyMode) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            ctx.load_cert_chain(self.cert_path, self.key_path, self.key_password or None)
        except (OSError, ssl.SSLError) as e:
            raise TlsConfigError(f"cannot load tls.server.certPath={self.cert_path} / tls.server.keyPath="
                                 f"{self.key_path}: {e}") from None
        ctx.verify_mode = verify
        if verify != ssl.CERT_NONE:
            if not trust:
                raise TlsConfigError(
                    "tls.server.need.client.auth needs tls.server.trustCertPath (the clients' CA)"
                )
            self._load_trust(ctx, trust)
        return ctx

    @staticmethod
    def _load_trust(ctx: ssl.SSLContext, path: str) -> None:
        try:
            ctx.load_verify_locations(path)
        except (OSError, ssl.SSLError) as e:
            raise TlsConfigError(f"cannot load the trusted CA file {path}: {e}") from None

    def context(self) -> ssl.SSLContext:
        return self._context(self.trust_cert_path, _CLIENT_AUTH[self.need_client_auth])

    def peer_context(self) -> ssl.SSLContext | None:
        """The accepting side of a peer's connection (a slave's, on the HA port): None with TLS
        disabled, else the server's context requiring a client certificate that chains to the peer
        trust when one is set (peers present the certificate they serve with)."""
        if not self.enabled:
            return None
        if not self.peer_trust_path:
            return self.context()
        return self._context(self.peer_trust_path, ssl.CERT_REQUIRED)

    def peer_client(self, client: ClientTls | None = None) -> ClientTls:
        """The connecting side toward a peer (a slave to its master's HA port, a controller to the
        others): TLS only when this server enforces it, presenting this server's certificate; the
        trust from ``client`` (``tls.client.*``), else ``tls.server.trustCertPath``; host names unchecked."""
        if self.mode is not TlsMode.ENFORCING:
            return ClientTls()
        client = client or ClientTls()
        return ClientTls(
            enabled=True, trust_cert_path=client.trust_cert_path or self.peer_trust_path,
            verify=client.verify, check_hostname=False, cert_path=self.cert_path, key_path=self.key_path,
            key_password=self.key_password,
        )


@dataclass(frozen=True, slots=True)
class ClientTls:
    """How a client connects over TLS (see the module docstring)."""

    enabled: bool = False
    trust_cert_path: str = ""
    """PEM CA file the server's certificate must chain to; empty: the system's CAs."""
    verify: bool = True
    """Check the server's certificate (chain and host name); False trusts any server (Apache's test mode)."""
    check_hostname: bool = True
    """With ``verify``, also match the host name (off for servers reached by pod IP, whose certificate
    cannot name every IP: the chain to the trusted CA is still checked)."""
    cert_path: str = ""
    key_path: str = ""
    key_password: str = ""

    @classmethod
    def from_conf(cls, conf: Mapping[str, str]) -> ClientTls:
        """From ``tls.enable`` and ``tls.client.*`` keys."""
        return cls(
            enabled=_bool(conf.get("tls.enable"), False),
            trust_cert_path=(conf.get("tls.client.trustCertPath") or "").strip(),
            verify=_bool(conf.get("tls.client.authServer"), True),
            # Apache's servers check the chain only; host names on request (a pod's name-server address
            # is rarely in its certificate)
            check_hostname=_bool(conf.get("tls.client.verifyHostname"), False),
            cert_path=(conf.get("tls.client.certPath") or "").strip(),
            key_path=(conf.get("tls.client.keyPath") or "").strip(),
            key_password=(conf.get("tls.client.keyPassword") or "").strip(),
        )

    def context(self) -> ssl.SSLContext | None:
        if not self.enabled:
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.verify:
            ctx.check_hostname = self.check_hostname
            try:
                if self.trust_cert_path:
                    ctx.load_verify_locations(self.trust_cert_path)
                else:
                    ctx.load_default_certs()
            except (OSError, ssl.SSLError) as e:
                raise TlsConfigError(f"cannot load the trusted CA file {self.trust_cert_path}: {e}") from None
        else:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_path:
            try:
                ctx.load_cert_chain(self.cert_path, self.key_path or None, self.key_password or None)
            except (OSError, ssl.SSLError) as e:
                raise TlsConfigError(f"cannot load the client certificate {self.cert_path}: {e}") from None
        return ctx
