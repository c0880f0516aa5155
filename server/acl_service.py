"""A server's access control at run time: the ACL file loaded, checked before every request,
reloaded when it changes (a broken edit is logged and the previous rules stay).

The check records on the connection the account the request was let in with (``attrs[CALLER]``),
for the handlers whose request names no topic, so that they can ask once they have found one:
:func:`acl_refusal` (VIEW_MESSAGE_BY_ID asks SUB on the message's topic). The record is the
current request's: the check runs right before its handler, which asks before it awaits anything.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.log_limit import RateLimitedLog
from pyrocketmq.remoting.transport import Connection

from .acl import ADMIN_CODES, Account, AclConfigError, AclValidator, load_plain_acl, needs, permission_refusal
from .acl_perm import Needs

log = logging.getLogger("pyrocketmq.acl")
_refusals = RateLimitedLog(log)
RELOAD_INTERVAL = 5.0
"""Seconds between looks at the ACL file's modification time."""
CALLER = "acl.account"
"""``Connection.attrs`` key: the :class:`~.acl.Account` the connection's current request was let in
with; None for a white-listed address; absent when no ACL checks the connection."""


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
    if not isinstance(account, Account):
        return None
    why = permission_refusal(account, needed)
    if why is None:
        return None
    _refusals.warning("ACL: refused request code %d from %s: %s", cmd.code, conn.remote_addr, why)
    return cmd.response(ResponseCode.SYSTEM_ERROR, f"AclException: {why}")


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
        self._log = RateLimitedLog(log)
        log.info("ACL on: %d accounts from %s", len(self.validator.config.accounts), path)

    def _stat(self) -> float:
        try:
            return os.stat(self.path).st_mtime
        except OSError:
            return 0.0

    def check(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        ip = conn.remote_addr.rpartition(":")[0].strip("[]")
        account, why = self.validator.admit(cmd, ip)
        if why is None:
            conn.attrs[CALLER] = account
            return None
        self.refused += 1
        self._log.warning("ACL: refused request code %d from %s: %s", cmd.code, conn.remote_addr, why)
        return cmd.response(ResponseCode.SYSTEM_ERROR, f"AclException: {why}")

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
