"""How the operator reaches brokers that serve TLS or check ACLs (spec.tls, spec.acl of a Broker).

From the Broker's Secrets: ``ca.crt`` of the TLS Secret is trusted (the chain is checked; the host
name is not, since brokers are reached by pod IP; without ``ca.crt`` any server is trusted, as
Apache's clients do in their test mode); ``accessKey``/``secretKey`` of the ACL Secret sign every
request (the account should be an admin: topics and groups are created with it).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyrocketmq.client import ClientTls

from .kubeapi import KubeError
from .model import BrokerModel, NameServerModel
from .render.common import ACL_FILE_KEY, secrets_hash


class SecretError(ValueError):
    """A Secret the spec names is missing or lacks a key; ``reason`` is the status condition's."""

    def __init__(self, message: str, reason: str = "SecretIncomplete") -> None:
        super().__init__(message)
        self.reason = reason


SecretGetter = Callable[[str, str, str, str], Awaitable[dict[str, Any] | None]]
"""``kube.get(api_version, kind, namespace, name)``."""


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
            raise SecretError(
                f"Secret {model.acl.secret_name} has no accessKey/secretKey: the operator needs an "
                "admin account to manage topics and groups on brokers that check ACLs"
            )
    return ClientSecurity(tls, ak, sk)


async def read_secrets(get: SecretGetter, namespace: str, names: list[str]) -> dict[str, dict[str, Any]]:
    """The named Secrets; SecretError naming the first one missing."""
    found = {}
    for name in names:
        try:
            body = await get("v1", "Secret", namespace, name)
        except KubeError as e:
            if e.status != 403:
                raise
            raise SecretError(
                f"the operator may not read Secret {name!r} in {namespace}: install the chart with "
                "rbac.readSecrets=true (spec.tls, spec.acl and spec.auth need it)",
                "SecretForbidden",
            ) from None
        if body is None:
            raise SecretError(
                f"Secret {name!r} (named in the spec) not found in namespace {namespace}", "SecretNotFound"
            )
        found[name] = body
    return found


async def read_broker_secrets(get: SecretGetter, model: BrokerModel) -> tuple[BrokerModel, ClientSecurity]:
    """``model`` with the hash of its Secrets (pods roll when it changes), and how to reach its brokers."""
    names = [n for n in (model.tls.secret_name, model.acl.secret_name) if n]
    if not names and not model.namesrv_tls and not model.auth.enabled:
        return model, ClientSecurity()
    found = await read_secrets(get, model.ref.namespace, names)
    if model.acl.enabled:
        require_acl_file(found[model.acl.secret_name], model.acl.secret_name)
    security = client_security(model, found.get(model.tls.secret_name), found.get(model.acl.secret_name))
    digest = secrets_hash(found, frozenset({ACL_FILE_KEY})) if found else ""
    if model.auth.enabled:  # not in the hash: the brokers read it at their first start only
        name = model.auth.secret_name
        secret = (await read_secrets(get, model.ref.namespace, [name]))[name]
        user, password = _decoded(secret, "username"), _decoded(secret, "password")
        if not user or not password:
            raise SecretError(f"Secret {name} (spec.auth) needs username and password: the super user the "
                              "brokers and the operator sign with")
        security = dataclasses.replace(security, access_key=user, secret_key=password)
    return dataclasses.replace(model, secrets_hash=digest), security


async def read_nameserver_secrets(get: SecretGetter, model: NameServerModel) -> NameServerModel:
    """``model`` with the hash of its Secrets (pods roll when a certificate changes; an edited
    ``plain_acl.yml`` is re-read by the running name servers)."""
    names = [n for n in (model.tls.secret_name, model.acl.secret_name) if n]
    if not names:
        return model
    found = await read_secrets(get, model.ref.namespace, names)
    if model.acl.enabled:
        require_acl_file(found[model.acl.secret_name], model.acl.secret_name)
    return dataclasses.replace(model, secrets_hash=secrets_hash(found, frozenset({ACL_FILE_KEY})))


def require_acl_file(secret: Mapping[str, Any], name: str) -> None:
    if ACL_FILE_KEY not in (secret.get("data") or {}):
        raise SecretError(
            f"Secret {name!r} (spec.acl) has no {ACL_FILE_KEY}: put the accounts file under that key"
        )
