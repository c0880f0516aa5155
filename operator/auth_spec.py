"""``spec.auth`` of a Broker: ACL 2.0 (Apache RocketMQ 5.3's users and ACLs) on its brokers.

Every request must then be signed by an enabled user and is judged by that user's ACL. The Secret
``secretName`` holds a super user (``username``, ``password``): each broker creates it at its first
start (``initAuthenticationUser``), signs its own requests with it (registrations, a slave's copies
from its master) and the operator signs with it too, to create topics and groups and to manage the
users and ACLs of ``User`` resources. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")

AUTH_CONFIG_KEYS = frozenset({"authenticationEnabled", "authorizationEnabled", "initAuthenticationUser",
                              "innerClientAuthenticationCredentials", "authenticationCertificateCaPath",
                              "authSeedWaitMs"})
"""broker.conf keys spec.auth sets (so spec.config may not)."""
SEED_WAIT_MS = 30_000
"""``authSeedWaitMs`` of name servers with spec.auth: Ready once the operator has given a started one
its users (:mod:`.namesrv_seed`), or after this long (no Broker uses it)."""


@dataclass(frozen=True, slots=True)
class Auth:
    secret_name: str = ""

    @property
    def enabled(self) -> bool:
        return bool(self.secret_name)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> Auth:
        """ValueError (naming the field) for a spec that cannot be used."""
        if not spec or spec.get("enabled") is False:
            return cls()
        name = str(spec.get("secretName") or "")
        if not _DNS_NAME.fullmatch(name):
            raise ValueError("spec.auth.secretName: name the Secret holding the super user the brokers and "
                             "the operator sign with (keys username and password; a DNS name)")
        return cls(secret_name=name)


def auth_conf(auth: Auth) -> dict[str, str]:
    """broker.conf keys turning ACL 2.0 on (the super user's credentials are added in the pod, from
    the Secret, never in a ConfigMap)."""
    return {"authenticationEnabled": "true", "authorizationEnabled": "true"} if auth.enabled else {}


def namesrv_auth(auth: Auth, run_dir: str) -> tuple[dict[str, str], list[dict[str, Any]]]:
    r"""A name server's keys and environment for spec.auth: its users beside a KV config in
    ``run_dir`` (the operator applies them again after a restart), the super user from the Secret
    through the kubelet's ``$(VAR)`` expansion (never in the pod spec; the password may not hold
    ``"`` or ``\``)."""
    if not auth.enabled:
        return {}, []
    user = '"$(PYROCKETMQ_AUTH_USERNAME)"', '"$(PYROCKETMQ_AUTH_PASSWORD)"'
    conf = {**auth_conf(auth), "kvConfigPath": f"{run_dir}/namesrv/kvConfig.json",
            "authSeedWaitMs": str(SEED_WAIT_MS),  # Ready once the operator gave it its users
            "initAuthenticationUser": f'{{"username":{user[0]},"password":{user[1]}}}',
            "innerClientAuthenticationCredentials": f'{{"accessKey":{user[0]},"secretKey":{user[1]}}}'}
    env = [{"name": f"PYROCKETMQ_AUTH_{key.upper()}", "valueFrom": {"secretKeyRef": {
        "name": auth.secret_name, "key": key}}} for key in ("username", "password")]
    return conf, env
