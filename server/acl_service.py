"""A server's access control at run time, checked before every request: ACL 1.0 (:class:`AccessControl`:
the ACL file loaded, reloaded when it changes, a broken edit logged while the previous rules stay)
and ACL 2.0 (:class:`UserAccess`: the broker's users and ACLs, :mod:`.acl2`). With both on, a
request must pass both.

Each check records on the connection whom the request was let in as (``attrs[CALLER]``: the 1.0
account; ``attrs[USER]``: the 2.0 user), for the handlers whose request names no topic, so that they
can ask once they have found one: :func:`acl_refusal` (VIEW_MESSAGE_BY_ID asks SUB on the message's
topic). The record is the current request's: the check runs right before its handler, which asks
before it awaits anything.

Refusals: ACL 1.0 answers as Apache 4.x (SYSTEM_ERROR, ``AclException: <why>``), ACL 2.0 as Apache
5.3 (NO_PERMISSION, ``<why>``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping

from pyrocketmq.remoting.acl_sign import ACCESS_KEY
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.log_limit import RateLimitedLog
from pyrocketmq.remoting.transport import Connection

from .acl import (
    ADMIN_CODES,
    Account,
    AclConfigError,
    AclValidator,
    load_plain_acl,
    needs,
    permission_refusal,
    signed_by,
)
from .acl2 import Acl, Asks, User, decide, translate
from .acl_perm import Needs
from .acl_table import BROKER_RULES, RequestRefused, Rule, acl2_asks
from .auth_metadata import AuthMetadata
from .auth_settings import AuthSettings
from .cert_users import CertUsers

log = logging.getLogger("pyrocketmq.acl")
_refusals = RateLimitedLog(log)
RELOAD_INTERVAL = 5.0
"""Seconds between looks at the ACL file's modification time."""
CALLER = "acl.account"
"""``Connection.attrs`` key: the :class:`~.acl.Account` the connection's current request was let in
with; None for a white-listed address; absent when no ACL checks the connection."""
USER = "acl2.user"
CERT_USER = "acl2.cert_user"
"""``Connection.attrs`` key: the user the connection's client certificate names (None: none)."""
"""``Connection.attrs`` key: the :class:`UserCaller` the current request was let in as under ACL 2.0."""


def refuse(conn: Connection, cmd: RemotingCommand, code: int, remark: str, why: str) -> RemotingCommand:
    """The answer refusing ``cmd``, logged (rate-limited) with ``why``."""
    _refusals.warning("ACL: refused request code %d from %s: %s", cmd.code, conn.remote_addr, why)
    return cmd.response(code, remark)


def chained(*checks: Callable[[Connection, RemotingCommand], RemotingCommand | None]
            ) -> Callable[[Connection, RemotingCommand], RemotingCommand | None]:
    """One before-request hook running ``checks`` in order: the first refusal answers."""
    def check(conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        for one in checks:
            refused = one(conn, cmd)
            if refused is not None:
                return refused
        return None

    return checks[0] if len(checks) == 1 else check


def remote_ip(conn: Connection) -> str:
    return conn.remote_addr.rpartition(":")[0].strip("[]")


def acl_refusal(conn: Connection, cmd: RemotingCommand, needed: Mapping[str, int]) -> RemotingCommand | None:
    """The ACL's answer to ``cmd`` when the account it came with lacks ``needed`` (resource →
    permission), as the check before the handler answers; None when it may go on (or no ACL checks
    this connection, or its address is white-listed).

    Example (a handler that found the message's topic)::

        denied = acl_refusal(conn, cmd, {msg.topic: SUB})
        if denied is not None:
            return denied
    """
    account = conn.attrs.get(CALLER)
    if isinstance(account, Account):
        why = permission_refusal(account, needed)
        if why is not None:
            return refuse(conn, cmd, ResponseCode.SYSTEM_ERROR, f"AclException: {why}", why)
    caller = conn.attrs.get(USER)
    if isinstance(caller, UserCaller):
        why = caller.refusal(cmd.code, needed)
        if why is not None:
            return refuse(conn, cmd, ResponseCode.NO_PERMISSION, why, why)
    return None


class AccessControl:
    """``check`` is the server's before-request hook; ``reload_if_changed`` runs every few seconds.

    Example::

        acl = AccessControl("/etc/rocketmq/plain_acl.yml")   # AclConfigError if unusable
        server.before = acl.check
    """

    def __init__(self, path: str, admin_codes: frozenset[int] = ADMIN_CODES,
                 needs: Callable[[RemotingCommand], Needs] = needs) -> None:
        self.path = path
        self._mtime = self._stat()
        self.validator = AclValidator(load_plain_acl(path), admin_codes, needs)
        self.refused = 0
        log.info("ACL on: %d accounts from %s", len(self.validator.config.accounts), path)

    def _stat(self) -> float:
        try:
            return os.stat(self.path).st_mtime
        except OSError:
            return 0.0

    def check(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        account, why = self.validator.admit(cmd, remote_ip(conn))
        if why is None:
            conn.attrs[CALLER] = account
            return None
        self.refused += 1
        return refuse(conn, cmd, ResponseCode.SYSTEM_ERROR, f"AclException: {why}", why)

    def reload_if_changed(self) -> bool:
        mtime = self._stat()
        if mtime == self._mtime:
            return False
        self._mtime = mtime
        try:
            config = load_plain_acl(self.path)
        except AclConfigError as e:
            log.error("ACL file %s changed but cannot be used (the previous rules stay): %s", self.path, e)
            return False
        self.validator.config = config
        log.info("ACL reloaded: %d accounts from %s", len(config.accounts), self.path)
        return True


# -- ACL 2.0 ---------------------------------------------------------------------------------------
class UserCaller:
    """Whom a request was let in as under ACL 2.0 (``attrs[USER]``): the user named by its AccessKey
    (None: none named) from ``ip``, judged by ``access``."""

    __slots__ = ("access", "ip", "username")

    def __init__(self, access: UserAccess, username: str | None, ip: str) -> None:
        self.access, self.username, self.ip = access, username, ip

    def refusal(self, code: int, needed: Mapping[str, int]) -> str | None:
        """Why this caller may not do what a handler of ``code`` found it needs, or None."""
        if not self.access.authorization:
            return None
        rule = self.access.rules.get(code)
        return self.access.judge(self.username, translate((rule or Rule()).acts, dict(needed)), self.ip)


class UserAccess:
    """ACL 2.0 before every request (Apache 5.3's authentication, then authorization); ``users`` and
    ``acls`` look a user and its ACL up by name (the server's
    :class:`~.auth_metadata.AuthMetadata`).

    Example::

        access = UserAccess(meta.user, meta.acl, cluster="DefaultCluster", authentication=True,
                            authorization=True)
        server.before = access.check
    """

    def __init__(self, users: Callable[[str], User | None], acls: Callable[[str], Acl | None], *,
                 cluster: str, authentication: bool, authorization: bool,
                 authentication_whitelist: frozenset[int] = frozenset(),
                 authorization_whitelist: frozenset[int] = frozenset(),
                 rules: Mapping[int, Rule] = BROKER_RULES, cert_users: CertUsers | None = None) -> None:
        self.users, self.acls, self.cluster, self.rules = users, acls, cluster, rules
        self.cert_users = cert_users or CertUsers([])
        self.authentication, self.authorization = authentication, authorization
        self.authentication_whitelist = authentication_whitelist
        self.authorization_whitelist = authorization_whitelist
        self.refused = 0

    @classmethod
    def from_settings(cls, auth: AuthSettings, meta: AuthMetadata, *, cluster: str,
                      rules: Mapping[int, Rule] = BROKER_RULES) -> UserAccess:
        """The enforcement a server's ACL 2.0 keys ask for, over its users and ACLs."""
        return cls(meta.user, meta.acl, cluster=cluster, rules=rules,
                   authentication=auth.authentication_enabled, authorization=auth.authorization_enabled,
                   authentication_whitelist=auth.authentication_whitelist,
                   authorization_whitelist=auth.authorization_whitelist, cert_users=auth.cert_users())

    def check(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        ip = remote_ip(conn)
        username = cmd.ext_fields.get(ACCESS_KEY) or None
        by_certificate = username is None and bool(self.cert_users)
        if by_certificate:  # unsigned: the user the client certificate names, if any
            username = self.certificate_user(conn)

        def signed(user: User) -> bool:
            return by_certificate or signed_by(cmd, user.password)

        why = None if cmd.code in self.authentication_whitelist else self.authenticate(username, signed)
        if why is None and self.authorization and cmd.code not in self.authorization_whitelist:
            try:
                asks = acl2_asks(self.rules, cmd, self.cluster)
            except RequestRefused as e:
                asks, why = [], str(e)
            why = why or self.judge(username, asks, ip)
        if why is None:
            conn.attrs[USER] = UserCaller(self, username, ip)
            return None
        self.refused += 1
        return refuse(conn, cmd, ResponseCode.NO_PERMISSION, why, why)

    def certificate_user(self, conn: Connection) -> str | None:
        """The user ``conn``'s TLS client certificate names (:mod:`.cert_users`), judged once per
        connection; None without one."""
        if CERT_USER not in conn.attrs:
            conn.attrs[CERT_USER] = self.cert_users.username(conn.peer_certificate())
        found = conn.attrs[CERT_USER]
        return found if isinstance(found, str) else None

    def authenticate(self, username: str | None, signed: Callable[[User], bool]) -> str | None:
        """Why a request naming ``username`` is not signed by an enabled user with its password
        (Apache 5.3's words), or None (also when authentication is off). ``signed(user)`` checks the
        transport's own signature: the 4.x fields' (:func:`~.acl.signed_by`) or the 5.x
        ``authorization`` header's. White-listed codes are the caller's to skip."""
        if not self.authentication:
            return None
        if not username:
            return "username cannot be null."
        user = self.users(username)
        if user is None:
            return f"User:{username[:64]} is not found."
        if not user.enabled:
            return f"User:{username} is disabled."
        if not signed(user):
            return "check signature failed."
        return None

    def judge(self, username: str | None, asks: Asks, ip: str) -> str | None:
        """Why ``username`` may not do ``asks`` from ``ip``, or None: a super user may do anything;
        a normal user what its ACL allows (:func:`~.acl2.decide`)."""
        if not asks:
            return None
        if not username:
            return "Authorization failed: the request names no user (AccessKey)."
        user = self.users(username)
        if user is None:
            return f"User:{username[:64]} not found."
        if user.is_super:
            return None
        acl = self.acls(username)
        for resource, actions in asks:
            detail = decide(acl, resource, actions, ip)
            if detail is not None:
                return f"{user.subject} has no permission to access {resource.key} from {ip}, {detail}"
        return None

    def is_super_caller(self, conn: Connection) -> bool:
        """Whether the current request of ``conn`` came from a super user (authentication on; with it
        off, nobody is known and every caller counts)."""
        if not self.authentication:
            return True
        caller = conn.attrs.get(USER)
        user = self.users(caller.username) if isinstance(caller, UserCaller) and caller.username else None
        return user is not None and user.is_super
