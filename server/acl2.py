"""ACL 2.0 (Apache RocketMQ 5.3's authentication and authorization model): users, ACLs, resource
matching and the decision. Pure: no I/O; the broker and the name server keep users and ACLs in their
config directories (:mod:`.auth_metadata`) and check requests with :mod:`.acl_service`.

A **user** has a name, a password (the secret key a client signs with), a type (``Super`` users
skip authorization; ``Normal`` ones are judged by their ACL) and a status (``enable``/``disable``:
a disabled user is refused at authentication).

An **ACL** belongs to a subject (``User:<name>``) and holds up to two policies, ``Custom`` and
``Default``, each a list of entries: a resource, actions, optional source IPs and a decision::

    resource   *                    any resource of any type
               Topic:*              any topic                       (pattern ANY)
               Topic:orders*        topics whose name starts so     (pattern PREFIXED)
               Topic:orders         that topic                      (pattern LITERAL)
               Group:…, Cluster:…, Namespace:…  the same for the other types
    actions    Pub Sub Create Update Delete Get List, or All (every one); Any is what a request may
               ask (satisfied by any action), never granted
    sourceIps  addresses (``10.0.0.5``) or CIDR blocks (``10.0.0.0/8``); none: from anywhere
    decision   Allow or Deny

**The decision** (Apache's ``AclAuthorizationHandler``): a request names a resource and the actions
it needs (any one of them suffices). The entries of the ``Custom`` policy that match the resource,
one of the actions and the source IP are gathered; when none do, the ``Default`` policy's. No entry:
refused. Otherwise the *most specific* entry decides, and only on a tie does Deny win:

1. an entry for the resource's own type before an entry for ``*``;
2. LITERAL before PREFIXED before ANY (``Topic:a`` before ``Topic:a*`` before ``Topic:*``);
3. between two prefixes, the longer first;
4. then Deny before Allow.

So ``Topic:orders`` Allow beats ``Topic:*`` Deny (a naive "any Deny wins" would refuse it), while
``Topic:orders*`` Deny beats ``Topic:orders*`` Allow on the same resource.

What each request asks is in the request table (:mod:`.acl_table`): per code, an :class:`Acts`
turns the topics and groups its decoder names into resources and the actions of which one is
needed (:func:`translate`).

>>> acl = acl_from_info({"subject": "User:alice", "policies": [{"entries": [
...     {"resource": "Topic:*", "actions": ["Pub"], "decision": "Deny"},
...     {"resource": "Topic:orders", "actions": ["Pub"], "decision": "Allow"}]}]})
>>> decide(acl, Resource.topic("orders"), (Action.PUB,), "10.0.0.1") is None
True
>>> decide(acl, Resource.topic("other"), (Action.PUB,), "10.0.0.1")
'the decision is deny.'
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, TypeVar

from pyrocketmq.remoting.auth_header import AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

from .acl_perm import PUB, SUB, Needs, is_group_resource

E = TypeVar("E", bound=Enum)
USER_PREFIX = "User:"
"""A user's subject key is ``User:<username>``."""


class AuthError(ValueError):
    """A user or an ACL that cannot be taken as given; the message says why (Apache's words where
    Apache has them)."""


class UserType(Enum):
    SUPER = "Super"
    NORMAL = "Normal"


class UserStatus(Enum):
    ENABLE = "enable"
    DISABLE = "disable"


class Action(Enum):
    ALL = "All"
    ANY = "Any"
    PUB = "Pub"
    SUB = "Sub"
    CREATE = "Create"
    UPDATE = "Update"
    DELETE = "Delete"
    GET = "Get"
    LIST = "List"


class ResourceType(Enum):
    ANY = "Any"
    CLUSTER = "Cluster"
    NAMESPACE = "Namespace"
    TOPIC = "Topic"
    GROUP = "Group"


class ResourcePattern(Enum):
    ANY = "ANY"
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class Decision(Enum):
    ALLOW = "Allow"
    DENY = "Deny"


class PolicyType(Enum):
    CUSTOM = "Custom"
    DEFAULT = "Default"


def by_name(enum: type[E], text: object) -> E | None:
    """The member of ``enum`` named ``text``, any case (Apache's ``getByName``); None if none."""
    if not isinstance(text, str):
        return None
    low = text.strip().lower()
    return next((m for m in enum if str(m.value).lower() == low), None)


# -- users ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class User:
    username: str
    password: str = ""
    user_type: UserType = UserType.NORMAL
    user_status: UserStatus = UserStatus.ENABLE

    @property
    def subject(self) -> str:
        return USER_PREFIX + self.username

    @property
    def is_super(self) -> bool:
        return self.user_type is UserType.SUPER

    @property
    def enabled(self) -> bool:
        return self.user_status is UserStatus.ENABLE


def _enum_field(enum: type[E], info: Mapping[str, Any], key: str) -> E | None:
    raw = info.get(key)
    if raw is None or raw == "":
        return None
    value = by_name(enum, raw)
    if value is None:
        names = ", ".join(str(m.value) for m in enum)
        raise AuthError(f"{key} {str(raw)[:40]!r} is not one of {names}")
    return value


def _text(info: Mapping[str, Any], key: str) -> str:
    raw = info.get(key)
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise AuthError(f"{key} is not a string")
    return raw


def user_from_info(info: Mapping[str, Any]) -> User:
    """A new user from a UserInfo body: a name and a password are needed; type Normal and status
    enable unless given."""
    name, password = _text(info, "username").strip(), _text(info, "password")
    if not name:
        raise AuthError("username can not be blank")
    if not password.strip():
        raise AuthError("password can not be blank")
    return User(name, password, _enum_field(UserType, info, "userType") or UserType.NORMAL,
                _enum_field(UserStatus, info, "userStatus") or UserStatus.ENABLE)


def user_updated(old: User, info: Mapping[str, Any]) -> User:
    """``old`` with what a UserInfo body changes (a blank password, type or status: unchanged)."""
    password = _text(info, "password")
    return User(old.username, password if password.strip() else old.password,
                _enum_field(UserType, info, "userType") or old.user_type,
                _enum_field(UserStatus, info, "userStatus") or old.user_status)


def user_to_info(user: User) -> UserInfo:
    return {"username": user.username, "password": user.password, "userType": user.user_type.value,
            "userStatus": user.user_status.value}


def subject_user(subject: str | None) -> str:
    """The username of subject ``User:<name>``; AuthError for another form."""
    subject = (subject or "").strip()
    kind, sep, name = subject.partition(":")
    if not sep or kind.lower() != "user" or not name:
        raise AuthError(f"the subject {subject[:64]!r} is not User:<username>")
    return name


# -- resources ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Resource:
    type: ResourceType
    name: str | None
    """The literal name or the prefix; None for the ANY pattern."""
    pattern: ResourcePattern = ResourcePattern.LITERAL

    @classmethod
    def topic(cls, name: str) -> Resource:
        return cls(ResourceType.TOPIC, name)

    @classmethod
    def group(cls, name: str) -> Resource:
        """A group, also when named by its retry or dead-letter topic (``%RETRY%g`` is group g)."""
        for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
            if name.startswith(prefix):
                name = name[len(prefix):]
        return cls(ResourceType.GROUP, name)

    @classmethod
    def cluster(cls, name: str) -> Resource:
        return cls(ResourceType.CLUSTER, name)

    @classmethod
    def parse(cls, key: str | None) -> Resource:
        """``*``, ``Type:*``, ``Type:prefix*`` or ``Type:name`` (type in any case); AuthError else."""
        key = (key or "").strip()
        if key == "*":
            return cls(ResourceType.ANY, None, ResourcePattern.ANY)
        kind, _, name = key.partition(":")
        rtype = by_name(ResourceType, kind)
        if rtype is None or rtype is ResourceType.ANY or not name:
            raise AuthError(f"the resource {key[:80]!r} is not *, or Cluster, Namespace, Topic or Group "
                            "followed by :name, :prefix* or :*")
        if name == "*":
            return cls(rtype, None, ResourcePattern.ANY)
        if name.endswith("*"):
            return cls(rtype, name.rstrip("*"), ResourcePattern.PREFIXED)
        return cls(rtype, name)

    @property
    def key(self) -> str:
        if self.type is ResourceType.ANY:
            return "*"
        if self.pattern is ResourcePattern.ANY:
            return f"{self.type.value}:*"
        star = "*" if self.pattern is ResourcePattern.PREFIXED else ""
        return f"{self.type.value}:{self.name}{star}"

    def matches(self, wanted: Resource) -> bool:
        """Whether this entry's resource covers the (literal) resource a request names."""
        if self.type is ResourceType.ANY:
            return True
        if self.type is not wanted.type:
            return False
        if self.pattern is ResourcePattern.ANY:
            return True
        if self.pattern is ResourcePattern.PREFIXED:
            return (wanted.name or "").startswith(self.name or "")
        return wanted.name == self.name


# -- source addresses -------------------------------------------------------------------------------
def valid_source(spec: str) -> bool:
    """An IPv4/IPv6 address or a CIDR block (Apache ``IPAddressUtils.isValidIPOrCidr``)."""
    try:
        if "/" in spec:
            ipaddress.ip_network(spec.strip(), strict=False)
        else:
            ipaddress.ip_address(spec.strip())
    except ValueError:
        return False
    return True


def source_matches(ip: str, spec: str) -> bool:
    """Whether ``ip`` is ``spec`` (an address, compared as text as Apache does) or lies in it (a
    CIDR block)."""
    if "/" not in spec:
        return ip == spec
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(spec, strict=False)
    except ValueError:  # another family, or not an address
        return False


# -- policies -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PolicyEntry:
    resource: Resource
    actions: tuple[Action, ...]
    source_ips: tuple[str, ...] = ()
    decision: Decision = Decision.ALLOW

    def matches_actions(self, wanted: Iterable[Action]) -> bool:
        """Any of ``wanted`` is granted here (All grants each; a request asking Any takes any)."""
        if not self.actions:
            return False
        wanted = tuple(wanted)
        if Action.ANY in wanted:
            return True
        return any(a in self.actions or Action.ALL in self.actions for a in wanted)

    def matches_source(self, ip: str) -> bool:
        if not self.source_ips:
            return True
        return bool(ip) and any(source_matches(ip, spec) for spec in self.source_ips)

    def rank(self) -> tuple[bool, int, int, bool]:
        """Sorts the most specific entry first, Deny before Allow on a tie (see the module docstring)."""
        r = self.resource
        pattern = (ResourcePattern.LITERAL, ResourcePattern.PREFIXED, ResourcePattern.ANY).index(r.pattern)
        prefix = -len(r.name or "") if r.pattern is ResourcePattern.PREFIXED else 0
        return (r.type is ResourceType.ANY, pattern, prefix, self.decision is Decision.ALLOW)


@dataclass(frozen=True, slots=True)
class Policy:
    policy_type: PolicyType
    entries: tuple[PolicyEntry, ...]


@dataclass(frozen=True, slots=True)
class Acl:
    subject: str
    policies: tuple[Policy, ...]

    def policy(self, policy_type: PolicyType) -> Policy | None:
        return next((p for p in self.policies if p.policy_type is policy_type), None)

    def merged(self, new: Iterable[Policy]) -> Acl:
        """This ACL with ``new``'s entries put in (Apache's create and update alike): an entry for a
        resource already present replaces that one's actions, source IPs and decision; others are
        added; a policy type not present is added whole."""
        policies = list(self.policies)
        for incoming in new:
            i = next((i for i, p in enumerate(policies) if p.policy_type is incoming.policy_type), None)
            if i is None:
                policies.append(incoming)
                continue
            entries = list(policies[i].entries)
            for entry in incoming.entries:
                j = next((j for j, e in enumerate(entries) if e.resource == entry.resource), None)
                if j is None:
                    entries.append(entry)
                else:
                    entries[j] = entry
            policies[i] = replace(policies[i], entries=tuple(entries))
        return replace(self, policies=tuple(policies))

    def without(self, policy_type: PolicyType, resource: Resource) -> Acl | None:
        """This ACL without ``resource``'s entry in that policy (a policy left empty goes); None
        when nothing is left."""
        policies = []
        for p in self.policies:
            if p.policy_type is policy_type:
                p = replace(p, entries=tuple(e for e in p.entries if e.resource != resource))
                if not p.entries:
                    continue
            policies.append(p)
        return replace(self, policies=tuple(policies)) if policies else None


def decide(acl: Acl | None, resource: Resource, actions: Iterable[Action], source_ip: str) -> str | None:
    """Why a normal user with ``acl`` may not do ``actions`` (any one) on ``resource`` from
    ``source_ip`` (Apache's wording), or None when the deciding entry allows it."""
    if acl is None:
        return "no matched policies."
    actions = tuple(actions)
    matched: list[PolicyEntry] = []
    for policy_type in (PolicyType.CUSTOM, PolicyType.DEFAULT):
        policy = acl.policy(policy_type)
        if policy is not None:
            matched = [e for e in policy.entries if e.resource.matches(resource)
                       and e.matches_actions(actions) and e.matches_source(source_ip)]
        if matched:
            break
    if not matched:
        return "no matched policies."
    if min(matched, key=PolicyEntry.rank).decision is Decision.DENY:
        return "the decision is deny."
    return None


# -- JSON (AclInfo) -------------------------------------------------------------------------------
def _entry_from_info(info: Any, where: str) -> PolicyEntry:
    if not isinstance(info, dict):
        raise AuthError(f"{where} is not an object")
    resource = Resource.parse(info.get("resource") if isinstance(info.get("resource"), str) else None)
    raw_actions = info.get("actions")
    if not isinstance(raw_actions, list) or not raw_actions:
        raise AuthError(f"{where} ({resource.key}): The actions is empty.")
    actions = []
    for a in raw_actions:
        action = by_name(Action, a)
        if action is None:
            raise AuthError(f"{where} ({resource.key}): the action {str(a)[:40]!r} is not one of "
                            "Pub, Sub, Create, Update, Delete, Get, List, All")
        if action is Action.ANY:
            raise AuthError(f"{where} ({resource.key}): The actions can not be Any.")
        if action not in actions:
            actions.append(action)
    ips = info.get("sourceIps") or []
    if not isinstance(ips, list) or not all(isinstance(ip, str) and valid_source(ip) for ip in ips):
        raise AuthError(f"{where} ({resource.key}): The source ip is invalid (addresses or CIDR blocks).")
    decision = _enum_field(Decision, info, "decision")
    if decision is None:
        raise AuthError(f"{where} ({resource.key}): The decision is null or illegal (Allow or Deny).")
    return PolicyEntry(resource, tuple(actions), tuple(ip.strip() for ip in ips), decision)


def acl_from_info(info: Mapping[str, Any], subject: str | None = None) -> Acl:
    """The ACL an AclInfo body describes (its ``subject``, else ``subject``), checked as Apache
    checks one: at least one policy, each with entries, each with a resource, actions (not Any),
    valid source IPs and a decision; a policy without a type is Custom."""
    subject = str(info.get("subject") or subject or "")
    subject = USER_PREFIX + subject_user(subject)
    raw = info.get("policies")
    if not isinstance(raw, list) or not raw:
        raise AuthError("The policies is empty.")
    policies: list[Policy] = []
    for i, p in enumerate(raw):
        if not isinstance(p, dict):
            raise AuthError(f"policies[{i}] is not an object")
        ptype = _enum_field(PolicyType, p, "policyType") or PolicyType.CUSTOM
        entries = p.get("entries")
        if not isinstance(entries, list) or not entries:
            raise AuthError(f"policies[{i}]: The policy entries is empty.")
        parsed = tuple(_entry_from_info(e, f"policies[{i}].entries[{j}]") for j, e in enumerate(entries))
        policies = list(Acl(subject, tuple(policies)).merged([Policy(ptype, parsed)]).policies)
    return Acl(subject, tuple(policies))


def _entry_to_info(entry: PolicyEntry) -> PolicyEntryInfo:
    info: PolicyEntryInfo = {"resource": entry.resource.key, "actions": [a.value for a in entry.actions]}
    if entry.source_ips:
        info["sourceIps"] = list(entry.source_ips)
    info["decision"] = entry.decision.value
    return info


def acl_to_info(acl: Acl) -> AclInfo:
    policies: list[PolicyInfo] = [
        {"policyType": p.policy_type.value, "entries": [_entry_to_info(e) for e in p.entries]}
        for p in acl.policies
    ]
    return {"subject": acl.subject, "policies": policies}


def filter_acls(acls: Iterable[Acl], subject_filter: str | None, resource_filter: str | None) -> list[Acl]:
    """Apache's AUTH_LIST_ACL: the ACLs whose subject contains ``subject_filter``, each cut to the
    entries whose resource key contains ``resource_filter`` (kept whole when the subject itself
    contains it); an ACL left without entries is not listed."""
    out = []
    for acl in acls:
        if subject_filter and subject_filter not in acl.subject:
            continue
        if resource_filter and resource_filter not in acl.subject:
            kept = tuple(replace(p, entries=tuple(e for e in p.entries if resource_filter in e.resource.key))
                         for p in acl.policies)
            acl = replace(acl, policies=tuple(p for p in kept if p.entries))
        if acl.policies:
            out.append(acl)
    return out


# -- what a request asks (the request tables, :mod:`.acl_table`, say it per code) -----------------
Actions = tuple[Action, ...]


@dataclass(frozen=True, slots=True)
class Acts:
    """What one request code asks of ACL 2.0 (see the module docstring), by the right its decoder
    names: on a topic PUB, SUB or ANY; on a group SUB (a group's ANY, a producer group, is not
    asked). An empty tuple asks nothing."""

    pub: Actions = (Action.PUB,)
    sub: Actions = (Action.SUB,)
    any_topic: Actions = (Action.PUB, Action.SUB)
    cluster: Actions = ()
    """Non-empty: the request is judged on the cluster with these actions, whatever it names."""
    cluster_of: Callable[[RemotingCommand], str | None] | None = None
    """With ``cluster``: the cluster the request names (a name server serves many); None or empty:
    the server's own, or every cluster (``Cluster:*``) on a name server."""
    names: Callable[[RemotingCommand], Needs] | None = None
    """For a code whose rule names nothing for ACL 1.0 (an admin code): what it acts on."""


PUB_SUB = Acts()
GET = Acts(sub=(Action.GET,), any_topic=(Action.GET,))
CLUSTER_GET = Acts(cluster=(Action.GET,))
CLUSTER_UPDATE = Acts(cluster=(Action.UPDATE,))


Asks = list[tuple[Resource, Actions]]
"""ACL 2.0: the resources a request acts on, each with the actions of which it needs one."""


def translate(acts: Acts, needed: Needs) -> Asks:
    """ACL 1.0 needs (resource → PUB, SUB or ANY) as ACL 2.0 asks, by ``acts``."""
    out: Asks = []
    for resource, perm in needed.items():
        if is_group_resource(resource):
            target, actions = Resource.group(resource), acts.sub if perm == SUB else ()
        else:
            target = Resource.topic(resource)
            actions = acts.pub if perm == PUB else acts.sub if perm == SUB else acts.any_topic
        if actions:
            out.append((target, actions))
    return out
