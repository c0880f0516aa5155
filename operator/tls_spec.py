"""``spec.tls`` of a NameServer or Broker: serve TLS with a certificate in a Secret the user brings
(``secretName``) or one the operator issues and renews (``managed: true``, see :mod:`.certs`).
Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
MANAGED_SUFFIX = "-tls"
"""A managed certificate's Secret is ``<resource name>-tls``."""


@dataclass(frozen=True, slots=True)
class Tls:
    """``spec.tls``: serve TLS with the certificate in a Secret (``tls.crt``, ``tls.key``; ``ca.crt``
    to check client certificates and, on brokers, the name servers' certificates)."""

    secret_name: str = ""
    mode: str = "enforcing"
    """``enforcing`` (TLS only) or ``permissive`` (TLS and plain clients)."""
    client_auth: str = "none"
    """``none``, ``optional`` or ``require`` a client certificate signed by ``ca.crt``."""
    managed: bool = False
    """The operator issues the certificate from the namespace's cluster CA and renews it."""
    validity_days: int = 365
    renewal_days: int = 30
    """A managed certificate is issued again this many days before it expires."""

    @property
    def enabled(self) -> bool:
        return bool(self.secret_name)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None, resource: str = "") -> Tls:
        """ValueError (naming the field) for a spec that cannot be used; ``resource`` names a managed
        certificate's Secret."""
        if not spec:
            return cls()
        managed = bool(spec.get("managed", False))
        name = f"{resource}{MANAGED_SUFFIX}" if managed else str(spec.get("secretName") or "")
        if managed and spec.get("secretName"):
            raise ValueError(
                "spec.tls: give secretName (your certificate) or managed: true (the operator's), not both"
            )
        if not _DNS_NAME.fullmatch(name):
            raise ValueError(
                "spec.tls.secretName: name the Secret holding tls.crt and tls.key (a DNS name), "
                "or set managed: true"
            )
        mode, auth = str(spec.get("mode", "enforcing")), str(spec.get("clientAuth", "none"))
        if mode not in ("enforcing", "permissive"):
            raise ValueError(f"spec.tls.mode {mode!r}: use enforcing or permissive")
        if auth not in ("none", "optional", "require"):
            raise ValueError(f"spec.tls.clientAuth {auth!r}: use none, optional or require")
        validity, renewal = int(spec.get("validityDays", 365)), int(spec.get("renewalDays", 30))
        if managed and not 1 <= renewal < validity:
            raise ValueError(
                f"spec.tls.renewalDays {renewal}: give at least 1 and fewer than validityDays ({validity})"
            )
        return cls(
            secret_name=name,
            mode=mode,
            client_auth=auth,
            managed=managed,
            validity_days=validity,
            renewal_days=renewal,
        )
