"""The ``User`` resource: an ACL 2.0 user of a Broker cluster (spec.auth), its credential in a Secret
(a password, or a TLS client certificate of the clients' CA) and its ACL entries, and what to change
on a broker to make it so. Pure: no I/O.

On every broker of the cluster (masters and slaves, so a slave elected master already has them) the
user exists with the Secret's password and its type, and its ``Custom`` policy holds exactly the
entries of ``spec.acl``: entries are added or changed first, stale ones removed after, so a user
never loses a right it keeps. Users that no User resource declares (and that are not the cluster's
own super user from spec.auth) are removed, with their ACLs, as Strimzi's user operator does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .model import ObjectRef, SpecError

ACTIONS = ("All", "Pub", "Sub", "Create", "Update", "Delete", "Get", "List")
DECISIONS = ("Allow", "Deny")
USER_TYPES = ("Normal", "Super")
AUTH_TYPES = ("secretKey", "tls")
RESOURCE = re.compile(r"^(\*|(Cluster|Namespace|Topic|Group):(\*|[A-Za-z0-9%|_\-]+\*?))$")
"""A resource as Apache 5.3 writes it: ``Topic:orders``, a prefix ``Topic:pay*``, ``Topic:*``, ``*``."""
USERNAME = re.compile(r"^[A-Za-z0-9_\-.]{1,64}$")
SOURCE = re.compile(r"^[0-9a-fA-F.:]+(/\d{1,3})?$")
USER_PREFIX = "User:"

Entry = tuple[tuple[str, ...], str, tuple[str, ...]]
"""An entry's sorted actions, decision and sorted source addresses (the form compared)."""


@dataclass(frozen=True, slots=True)
class AclRule:
    """One item of ``spec.acl``: these actions on these resources, from these addresses, allowed or denied."""

    resources: tuple[str, ...]
    actions: tuple[str, ...]
    decision: str = "Allow"
    source_ips: tuple[str, ...] = ()

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], where: str) -> AclRule:
        resources = tuple(str(r) for r in spec.get("resources") or ())
        actions = tuple(dict.fromkeys(str(a) for a in spec.get("actions") or ()))
        decision = str(spec.get("decision", "Allow"))
        ips = tuple(str(ip).strip() for ip in spec.get("sourceIps") or ())
        if not resources or any(not RESOURCE.fullmatch(r) for r in resources):
            raise SpecError(f"{where}.resources {list(resources)}: give resources as Topic:orders, a prefix "
                            "Topic:pay*, Topic:* or * (types Cluster, Namespace, Topic, Group)")
        if not actions or any(a not in ACTIONS for a in actions):
            raise SpecError(f"{where}.actions {list(actions)}: use {', '.join(ACTIONS)}")
        if decision not in DECISIONS:
            raise SpecError(f"{where}.decision {decision!r}: use Allow or Deny")
        if any(not SOURCE.fullmatch(ip) for ip in ips):
            raise SpecError(f"{where}.sourceIps {list(ips)}: give IP addresses or CIDR blocks")
        return cls(resources, actions, decision, ips)


QUOTA_KEYS = ("producedBytesPerSecond", "consumedBytesPerSecond", "requestsPerSecond")
"""``spec.quotas``: per-second limits every broker holds the user to (a throttled client is slowed)."""


@dataclass(frozen=True, slots=True)
class UserModel:
    ref: ObjectRef
    cluster_ref: str
    username: str
    user_type: str = "Normal"
    secret_name: str = ""
    acl: tuple[AclRule, ...] = ()
    quotas: tuple[tuple[str, int], ...] = ()
    """The limits of ``spec.quotas`` that are set (above 0), by QUOTA_KEYS name."""
    auth_type: str = "secretKey"
    """``secretKey`` (a password in the Secret) or ``tls`` (a client certificate of the clients' CA in
    the Secret; the password on the brokers is random and handed to nobody)."""

    @property
    def by_certificate(self) -> bool:
        return self.auth_type == "tls"

    @property
    def subject(self) -> str:
        return USER_PREFIX + self.username

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> UserModel:
        ref = ObjectRef.from_body(body)
        spec = body.get("spec") or {}
        username = str(spec.get("username") or ref.name)
        if not USERNAME.fullmatch(username):
            raise SpecError(f"spec.username {username!r}: use 1 to 64 letters, digits, '_', '-', '.'")
        user_type = str(spec.get("userType", "Normal"))
        if user_type not in USER_TYPES:
            raise SpecError(f"spec.userType {user_type!r}: use Normal or Super")
        authn = spec.get("authentication") or {}
        auth_type = str(authn.get("type", "secretKey"))
        if auth_type not in AUTH_TYPES:
            raise SpecError(f"spec.authentication.type {auth_type!r}: use secretKey or tls")
        rules = tuple(AclRule.from_spec(r, f"spec.acl[{i}]") for i, r in enumerate(spec.get("acl") or ()))
        seen: dict[str, int] = {}
        for i, rule in enumerate(rules):
            for resource in rule.resources:
                if resource in seen:
                    raise SpecError(f"spec.acl[{i}]: {resource} is in spec.acl[{seen[resource]}] too; "
                                    "name each resource once (one decision per resource)")
                seen[resource] = i
        quotas = spec.get("quotas") or {}
        for key, value in quotas.items():
            if key not in QUOTA_KEYS or not isinstance(value, int) or value < 0:
                raise SpecError(f"spec.quotas.{key} {value!r}: give {', '.join(QUOTA_KEYS)} as whole numbers "
                                "per second (0: no limit)")
        return cls(
            ref=ref,
            cluster_ref=str((spec.get("clusterRef") or {}).get("name") or ""),
            quotas=tuple((k, int(quotas[k])) for k in QUOTA_KEYS if quotas.get(k)),
            username=username,
            user_type=user_type,
            secret_name=str(authn.get("secretName") or ref.name),
            auth_type=auth_type,
            acl=rules,
        )

    def entries(self) -> dict[str, Entry]:
        """The Custom policy's entries by resource."""
        return {r: (tuple(sorted(rule.actions)), rule.decision, tuple(sorted(rule.source_ips)))
                for rule in self.acl for r in rule.resources}

    def acl_info(self, resources: Iterable[str] | None = None) -> dict[str, Any]:
        """The AclInfo body (AUTH_CREATE_ACL/AUTH_UPDATE_ACL) of the entries on ``resources`` (all)."""
        wanted = self.entries()
        keys = list(wanted) if resources is None else [r for r in resources if r in wanted]
        return {"subject": self.subject, "policies": [{"policyType": "Custom", "entries": [
            {"resource": r, "actions": list(wanted[r][0]), "sourceIps": list(wanted[r][2]),
             "decision": wanted[r][1]} for r in keys]}]}


def custom_entries(acl_info: Mapping[str, Any] | None) -> dict[str, Entry]:
    """The Custom policy's entries of an AclInfo a broker answered (none for None)."""
    found: dict[str, Entry] = {}
    for policy in (acl_info or {}).get("policies") or ():
        if str(policy.get("policyType") or "Custom").lower() != "custom":
            continue
        for e in policy.get("entries") or ():
            found[str(e.get("resource"))] = (tuple(sorted(str(a) for a in e.get("actions") or ())),
                                             str(e.get("decision")),
                                             tuple(sorted(str(ip) for ip in e.get("sourceIps") or ())))
    return found


@dataclass(frozen=True, slots=True)
class BrokerChanges:
    """What one broker needs for one user."""

    user: str | None = None
    """``create`` or ``update`` (password or type differ), None when the user is as declared."""
    put: tuple[str, ...] = ()
    """Resources whose entries to add or change (one AUTH_UPDATE_ACL, or AUTH_CREATE_ACL for a new ACL)."""
    stale: tuple[str, ...] = ()
    """Resources whose entries to remove afterwards."""
    new_acl: bool = False

    @property
    def empty(self) -> bool:
        return self.user is None and not self.put and not self.stale


def broker_changes(model: UserModel, password: str | None, have_user: Mapping[str, Any] | None,
                   have_acl: Mapping[str, Any] | None) -> BrokerChanges:
    """How to bring one broker's user and ACL (as its AUTH_GET_USER/AUTH_GET_ACL answered) to ``model``
    (``password`` None: a TLS user's, whatever the broker holds)."""
    if have_user is None:
        user: str | None = "create"
    elif ((password is not None and have_user.get("password") != password)
          or str(have_user.get("userType")) != model.user_type
          or str(have_user.get("userStatus", "enable")).lower() != "enable"):
        user = "update"
    else:
        user = None
    want, have = model.entries(), custom_entries(have_acl)
    put = tuple(r for r, e in want.items() if have.get(r) != e)
    stale = tuple(r for r in have if r not in want)
    return BrokerChanges(user, put, stale, new_acl=have_acl is None)


def undeclared_users(listed: Iterable[Mapping[str, Any]], declared: set[str], keep: set[str]) -> list[str]:
    """Users a broker listed that no User declares and that are not kept (the cluster's super user)."""
    return sorted({name for u in listed if (name := str(u.get("username") or "")) and name not in declared
                   and name not in keep})


def quota_change(model: UserModel, have: Mapping[str, Any] | None) -> str | None:
    """``set``, ``delete`` or None: what a broker's quota for the user (as GET_USER_QUOTA answered)
    needs to match ``spec.quotas``."""
    held = {k: float(v) for k in QUOTA_KEYS if (v := (have or {}).get(k))}
    want = {k: float(v) for k, v in model.quotas}
    if held == want:
        return None
    return "set" if want else "delete"
