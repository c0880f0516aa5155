"""How the operator reaches brokers that serve TLS or check ACLs (spec.tls, spec.acl of a Broker).

From the Broker's Secrets: ``ca.crt`` of the TLS Secret is trusted (the chain is checked; the host
name is not, since brokers are reached by pod IP; without ``ca.crt`` any server is trusted, as
Apache's clients do in their test mode); ``accessKey``/``secretKey`` of the ACL Secret sign every
request (the account should be an admin: topics and groups are created with it).
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyrocketmq.client import ClientTls

from .model import BrokerModel


class SecretError(ValueError):
    """A Secret the spec names is missing or lacks a key."""


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    tls: ClientTls = ClientTls()
    access_key: str = ""
    secret_key: str = ""


def _decoded(secret: Mapping[str, Any] | None, key: str) -> str | None:
    raw = ((secret or {}).get("data") or {}).get(key)
    if raw is None:
        return None
    return base64.b64decode(raw).decode()


def _ca_file(pem: str) -> str:
    """A file holding ``pem`` (one per distinct CA, reused)."""
    folder = os.path.join(tempfile.gettempdir(), "pyrocketmq-operator-ca")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, hashlib.sha256(pem.encode()).hexdigest()[:16] + ".crt")
    if not os.path.exists(path):
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(pem)
        os.replace(tmp, path)
    return path


def client_security(model: BrokerModel, tls_secret: Mapping[str, Any] | None,
                    acl_secret: Mapping[str, Any] | None) -> ClientSecurity:
    """What the operator's admin client needs for ``model``, from its Secrets (as the API returns them)."""
    tls = ClientTls()
    if model.tls.enabled or model.namesrv_tls:
        ca = _decoded(tls_secret, "ca.crt") if model.tls.enabled else None
        tls = (ClientTls(enabled=True, trust_cert_path=_ca_file(ca), check_hostname=False) if ca
               else ClientTls(enabled=True, verify=False))
    ak = sk = ""
    if model.acl.enabled:
        ak, sk = _decoded(acl_secret, "accessKey") or "", _decoded(acl_secret, "secretKey") or ""
        if not ak or not sk:
            raise SecretError(f"Secret {model.acl.secret_name} has no accessKey/secretKey: the operator needs an "
                              "admin account to manage topics and groups on brokers that check ACLs")
    return ClientSecurity(tls, ak, sk)
