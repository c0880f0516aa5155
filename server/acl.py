"""Plain ACL (Apache RocketMQ 4.x ``plain_acl.yml``): who may do what on this broker. Pure rules; the
file is read by :func:`load_plain_acl`, the check runs before every request (:class:`AclValidator`).

The file::

    globalWhiteRemoteAddresses: [10.10.103.*]      # these addresses skip every check
    accounts:
      - accessKey: RocketMQ                          # more than 6 characters, as the secret key
        secretKey: 12345678
        whiteRemoteAddress: 192.168.0.*              # from here: no signature or permission check
        admin: false                                 # admin requests (create/delete topics and groups…)
        defaultTopicPerm: DENY                       # DENY, PUB, SUB or PUB|SUB
        defaultGroupPerm: SUB
        topicPerms: [topicA=DENY, topicB=PUB|SUB]
        groupPerms: [groupA=DENY, groupB=SUB]

A request is refused, as Apache answers (SYSTEM_ERROR, remark ``…AclException: <why>``), when it
carries no access key, names an unknown one, is not signed with its secret key, is an admin
request of a non-admin account, carries a field its code does not take, or needs a permission the
account lacks on a topic or a group (a group is checked as its ``%RETRY%`` topic). What each
request needs is :mod:`.acl_table`: the broker's requests by :data:`~.acl_table.BROKER_RULES`, the
name server's by :data:`~.acl_namesrv_table.NAMESRV_RULES` (admin for changes, :data:`NAMESRV_ADMIN_CODES`;
a right on the topic for its route; fields that fit the code, as at the broker).

Addresses: ``*`` (any), ``1.2.3.4``, ``1.2.3.*``, ``1.2.3.1-9`` (a range in any part) or
``1.2.3.{1,2,3}`` (a list in the last part); empty matches nothing.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyrocketmq.remoting.acl_sign import ACCESS_KEY, SERVER_SKIPS, SIGNATURE, signature
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.names import RETRY_GROUP_TOPIC_PREFIX

from .acl_namesrv_table import NAMESRV_ADMIN_CODES as NAMESRV_ADMIN_CODES, namesrv_needs as namesrv_needs
from .acl_perm import (
    ANY as ANY,
    DENY as DENY,
    INTERNAL_TOPICS,
    PUB as PUB,
    SUB as SUB,
    Needs,
    check_permission as check_permission,
    describe,
    is_group_resource,
)
from .acl_table import (
    ADMIN_CODES as ADMIN_CODES,
    RequestRefused,
    needs as needs,
)

_PERMS = {"DENY": DENY, "PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB}
MIN_KEY_LENGTH = 7


class AclConfigError(ValueError):
    """``plain_acl.yml`` cannot be used; the message says where."""


def parse_perm(text: str) -> int:
    perm = _PERMS.get(text.strip().upper())
    if perm is None:
        raise AclConfigError(f"permission {text!r}: use DENY, PUB, SUB or PUB|SUB")
    return perm


# -- addresses --------------------------------------------------------------------------------------
_PART = re.compile(r"^(\*|\d{1,3}|\d{1,3}-\d{1,3}|\{\d{1,3}(?:,\d{1,3})*\})$")


def address_matcher(spec: str | None) -> Callable[[str], bool]:
    """A predicate on ``a.b.c.d`` addresses (see the module docstring); AclConfigError if malformed."""
    spec = (spec or "").strip()
    if not spec:
        return lambda ip: False
    if spec in ("*", "*.*.*.*"):
        return lambda ip: True
    parts = spec.split(".")
    if len(parts) != 4 or not all(_PART.match(p) for p in parts) or any("{" in p for p in parts[:3]):
        with_ip = _ip(spec)
        if with_ip is None:
            raise AclConfigError(
                f"remote address {spec!r}: use *, a.b.c.d, a.b.c.*, a.b.c.1-9 or a.b.c.{{1,2}}"
            )
        return lambda ip: _ip(ip) == with_ip
    sets = [_part_test(p) for p in parts]

    def match(ip: str) -> bool:
        octets = ip.split(".")
        if len(octets) != 4 or not all(o.isdigit() for o in octets):
            return False
        return all(test(int(o)) for test, o in zip(sets, octets, strict=True))

    return match


def _part_test(part: str) -> Callable[[int], bool]:
    if part == "*":
        return lambda n: True
    if "-" in part:
        lo, hi = (int(x) for x in part.split("-"))
        return lambda n: lo <= n <= hi
    if part.startswith("{"):
        allowed = frozenset(int(x) for x in part[1:-1].split(","))
        return lambda n: n in allowed
    v = int(part)
    return lambda n: n == v


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


# -- configuration ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Account:
    access_key: str
    secret_key: str
    admin: bool = False
    default_topic_perm: int = DENY
    default_group_perm: int = DENY
    perms: Mapping[str, int] = field(default_factory=dict)
    """Topic → permission, and ``%RETRY%<group>`` → permission for groups."""
    white: Callable[[str], bool] = field(default=lambda ip: False, compare=False)


@dataclass(frozen=True)
class AclConfig:
    accounts: Mapping[str, Account]
    global_white: tuple[Callable[[str], bool], ...] = ()


def _perm_list(items: Any, where: str, key_prefix: str = "") -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items or ():
        name, sep, perm = str(item).partition("=")
        if not sep or not name.strip():
            raise AclConfigError(f"{where}: {item!r} is not name=PERM")
        out[key_prefix + name.strip()] = parse_perm(perm)
    return out


def parse_plain_acl(doc: Any) -> AclConfig:
    """The parsed YAML document as an :class:`AclConfig`; AclConfigError names what is wrong."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise AclConfigError("the ACL file is not a mapping with globalWhiteRemoteAddresses and accounts")
    white = tuple(address_matcher(str(a)) for a in (doc.get("globalWhiteRemoteAddresses") or ()))
    accounts: dict[str, Account] = {}
    for i, a in enumerate(doc.get("accounts") or ()):
        if not isinstance(a, dict):
            raise AclConfigError(f"accounts[{i}] is not a mapping")
        ak, sk = str(a.get("accessKey") or ""), str(a.get("secretKey") or "")
        if len(ak) < MIN_KEY_LENGTH or len(sk) < MIN_KEY_LENGTH:
            raise AclConfigError(f"accounts[{i}]: accessKey and secretKey must be longer than 6 characters")
        if ak in accounts:
            raise AclConfigError(f"accounts[{i}]: accessKey {ak} appears twice")
        where = f"accounts[{i}] ({ak})"
        perms = _perm_list(a.get("topicPerms"), f"{where} topicPerms")
        perms.update(_perm_list(a.get("groupPerms"), f"{where} groupPerms", RETRY_GROUP_TOPIC_PREFIX))
        accounts[ak] = Account(
            access_key=ak, secret_key=sk, admin=str(a.get("admin", False)).lower() == "true",
            default_topic_perm=parse_perm(str(a.get("defaultTopicPerm") or "DENY")),
            default_group_perm=parse_perm(str(a.get("defaultGroupPerm") or "DENY")),
            perms=perms, white=address_matcher(a.get("whiteRemoteAddress")),
        )
    return AclConfig(accounts, white)


def load_plain_acl(path: str) -> AclConfig:
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise AclConfigError(f"cannot read the ACL file {path}: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise AclConfigError(f"the ACL file {path} is not YAML: {e}") from None
    return parse_plain_acl(doc)


# -- checking requests ----------------------------------------------------------------------------
def signed_by(cmd: RemotingCommand, secret_key: str) -> bool:
    """Whether ``cmd``'s ``Signature`` is its content signed with ``secret_key`` (an ACL 1.0 account's
    secret key, an ACL 2.0 user's password: clients sign alike)."""
    ext = cmd.ext_fields
    body = cmd.body if isinstance(cmd.body, (bytes, bytearray, memoryview)) else None
    expected = signature(ext, body, secret_key, SERVER_SKIPS).encode()
    return hmac.compare_digest(expected, (ext.get(SIGNATURE) or "").encode("utf-8", "replace"))


class AclValidator:
    """Checks requests against an :class:`AclConfig` (swap :attr:`config` to reload): the broker's
    rules by default (:mod:`.acl_table`); the name server's with ``admin_codes=NAMESRV_ADMIN_CODES``
    and ``namesrv_needs`` (a route needs a right on its topic; only admins change them). ``needs`` raises
    :class:`~.acl_table.RequestRefused` (its message is the reason) or another ValueError for a
    request it cannot read."""

    def __init__(self, config: AclConfig, admin_codes: frozenset[int] = ADMIN_CODES,
                 needs: Callable[[RemotingCommand], Needs] = needs) -> None:
        self.config = config
        self.admin_codes = admin_codes
        self.needs = needs

    def refusal(self, cmd: RemotingCommand, remote_ip: str) -> str | None:
        """Why ``cmd`` from ``remote_ip`` is refused (Apache's words), or None when it may go on."""
        return self.admit(cmd, remote_ip)[1]

    def admit(self, cmd: RemotingCommand, remote_ip: str) -> tuple[Account | None, str | None]:
        """``(account, None)`` when ``cmd`` may go on as ``account``'s, ``(None, None)`` for a
        white-listed address (no check applies), ``(None, why)`` when refused."""
        account, why = self.authenticate(cmd.ext_fields.get(ACCESS_KEY) or "", remote_ip,
                                         lambda account: signed_by(cmd, account.secret_key))
        if account is None:
            return None, why
        if cmd.code in self.admin_codes and not account.admin:
            return (
                None,
                f"Need admin permission for request code={cmd.code}, "
                f"but accessKey={account.access_key} is not",
            )
        try:
            needed = self.needs(cmd)
        except RequestRefused as e:
            return None, str(e)
        except (ValueError, TypeError, KeyError) as e:
            return None, f"cannot read the request to check its permissions: {e}"
        why = permission_refusal(account, needed)
        return (account, None) if why is None else (None, why)

    def authenticate(self, access_key: str, remote_ip: str,
                     signed: Callable[[Account], bool]) -> tuple[Account | None, str | None]:
        """The account behind a request signed some other way (RocketMQ 5's gRPC header): ``(account,
        None)`` when ``signed(account)`` holds, ``(None, None)`` for a white-listed address (no check
        applies), ``(None, why)`` when refused."""
        config = self.config
        if any(white(remote_ip) for white in config.global_white):
            return None, None
        if not access_key:
            return None, "No accessKey is configured"
        account = config.accounts.get(access_key)
        if account is None:
            return None, f"No acl config for {access_key[:64]}"
        if account.white(remote_ip):
            return None, None
        if not signed(account):
            return None, f"Check signature failed for accessKey={access_key}"
        return account, None


def permission_refusal(account: Account, needed: Mapping[str, int]) -> str | None:
    """Why ``account`` may not do what needs ``needed`` (resource → PUB, SUB or ANY), or None."""
    if not needed or (account.admin and not account.perms):
        return None
    for resource, perm in needed.items():
        owned = account.perms.get(resource)
        if owned is None:
            if is_group_resource(resource):
                owned = account.default_group_perm
            else:
                owned = DENY if resource in INTERNAL_TOPICS else account.default_topic_perm
        if not check_permission(perm, owned):
            return f"No default permission for {describe(resource)}"
    return None
