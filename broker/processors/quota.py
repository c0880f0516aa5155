"""Per-user quotas (:mod:`..quota`): their administration (UPDATE/GET/DELETE/LIST_USER_QUOTA,
3101-3104, JSON bodies) and their enforcement (:class:`QuotaGate`).

Administration: only a super user while authentication is on (the check the AUTH_* requests use).
Bodies: ``{"username": "alice", "producedBytesPerSecond": 51200, ...}`` to update (the limits named
replace the user's, the others stay; 0 removes one), ``{"username": "alice"}`` to get or delete;
a get answers the user's QuotaInfo (empty body: none), a list ``[{"username": ..., ...}, ...]``.
A body that is not well formed answers INVALID_PARAMETER with what is wrong.

Enforcement: every handler is wrapped (:meth:`QuotaGate.install`). A request's user is the one
the ACL 2.0 check let it in as (its AccessKey, authenticated); a request without one, or whose code
skips authentication, is not counted. Sends count their body (a batch whole) as produced bytes and
are held back *before* they are stored, by the delay their cost gives; pulls count the body of
their answer as consumed bytes and their answer is held back; every request counts one request.
A one-way request has no answer to hold back: it is counted only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from pyrocketmq.remoting.code import RequestCode as C, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.transport import Connection, Handler, HandlerRegistry, HandlerResult
from pyrocketmq.server.acl_service import CALLER, USER, UserCaller

from ..quota import QuotaError, QuotaTable
from ..quota_store import QuotaStore

log = logging.getLogger("pyrocketmq.broker.quota")

QUOTA_CODES = (C.UPDATE_USER_QUOTA, C.GET_USER_QUOTA, C.DELETE_USER_QUOTA, C.LIST_USER_QUOTA)
SEND_CODES = frozenset({C.SEND_MESSAGE, C.SEND_MESSAGE_V2, C.SEND_BATCH_MESSAGE})
PULL_CODES = frozenset({C.PULL_MESSAGE})
ACL_ATTRS = (CALLER, USER)
"""``Connection.attrs`` keys of whom the ACL checks let the current request in as."""


class QuotaProcessor:
    """Example: ``QuotaProcessor(quotas=store, super_caller=access.is_super_caller).register(server)``
    (no ``super_caller``: ACL 2.0 is not enforced and anyone may)."""

    def __init__(self, *, quotas: QuotaStore,
                 super_caller: Callable[[Connection], bool] | None = None) -> None:
        self.quotas = quotas
        self.super_caller = super_caller

    def register(self, server: HandlerRegistry) -> None:
        for code in QUOTA_CODES:
            server.register(code, self.handle)

    def handle(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        if self.super_caller is not None and not self.super_caller(conn):
            return cmd.response(ResponseCode.NO_PERMISSION,
                                f"only a super user may manage quotas (request code {cmd.code})")
        try:
            info = _body(cmd)
            body = self._run(cmd.code, info)
        except QuotaError as e:
            return cmd.response(ResponseCode.INVALID_PARAMETER, str(e))
        return cmd.response(ResponseCode.SUCCESS, body=body)

    def _run(self, code: int, info: dict[str, Any]) -> bytes | None:
        if code == C.LIST_USER_QUOTA:
            quotas = [{"username": name, **q.to_info()} for name, q in self.quotas.table.items()]
            return orjson.dumps(quotas) if quotas else None
        name = info.get("username")
        if not isinstance(name, str) or not name.strip():
            raise QuotaError("The username is blank")
        name = name.strip()
        if code == C.UPDATE_USER_QUOTA:
            quota = self.quotas.update(name, info)
            log.info("quota of %s: %s", name, quota.to_info())
            return orjson.dumps(quota.to_info())
        if code == C.DELETE_USER_QUOTA:
            if self.quotas.delete(name):
                log.info("quota of %s removed", name)
            return None
        held = self.quotas.table.get(name)
        return None if held is None else orjson.dumps({"username": name, **held.to_info()})


def _body(cmd: RemotingCommand) -> dict[str, Any]:
    raw = cmd.payload
    if not raw:
        return {}
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise QuotaError(f"the body is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise QuotaError("the body is not a JSON object")
    return doc


# -- enforcement ------------------------------------------------------------------------------------
def user_of(conn: Connection) -> str | None:
    """The user the current request of ``conn`` was let in as (ACL 2.0), or None."""
    caller = conn.attrs.get(USER)
    return caller.username if isinstance(caller, UserCaller) else None


def body_size(cmd: RemotingCommand) -> int:
    body = cmd.body
    if body is None:
        return 0
    return sum(map(len, body)) if isinstance(body, list) else len(body)


class QuotaGate:
    """Wraps a server's handlers so that each request of a user is counted against its quota and,
    over it, answered late (``skip``: codes no user is authenticated for, never counted).

    Example (once every processor registered, authentication on)::

        QuotaGate(store.table, skip=settings.auth.authentication_whitelist).install(server.handlers)
    """

    def __init__(self, table: QuotaTable, *, skip: frozenset[int] = frozenset(),
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.table = table
        self.skip = skip
        self.sleep = sleep

    def install(self, handlers: dict[int, Handler]) -> None:
        for code, handler in list(handlers.items()):
            if code not in self.skip:
                handlers[code] = self.wrap(code, handler)

    def wrap(self, code: int, handler: Handler) -> Handler:
        charge = self.table.charge
        if code in PULL_CODES:
            def pulled(conn: Connection, cmd: RemotingCommand) -> HandlerResult:
                user = user_of(conn)
                result = handler(conn, cmd)
                if user is None or result is None:
                    return result
                if isinstance(result, RemotingCommand):
                    delay = charge(user, consumed=body_size(result))
                    return result if delay <= 0.0 or cmd.is_oneway else self._later(result, delay)
                return self._pulled_later(user, result, cmd.is_oneway)

            return pulled
        produced = code in SEND_CODES

        def gated(conn: Connection, cmd: RemotingCommand) -> HandlerResult:
            user = user_of(conn)
            if user is None:
                return handler(conn, cmd)
            delay = charge(user, produced=body_size(cmd) if produced else 0)
            if delay <= 0.0 or cmd.is_oneway:
                return handler(conn, cmd)
            attrs = conn.attrs  # whom the ACL checks let it in as, now (later requests may change it)
            return self._deferred(handler, conn, cmd, delay, {k: attrs[k] for k in ACL_ATTRS if k in attrs})

        return gated

    async def _later(self, result: RemotingCommand, delay: float) -> RemotingCommand:
        await self.sleep(delay)
        return result

    async def _pulled_later(self, user: str, pending: Awaitable[RemotingCommand | None],
                            oneway: bool) -> RemotingCommand | None:
        result = await pending
        delay = self.table.charge(user, consumed=0 if result is None else body_size(result))
        if result is not None and delay > 0.0 and not oneway:
            await self.sleep(delay)
        return result

    async def _deferred(self, handler: Handler, conn: Connection, cmd: RemotingCommand,
                        delay: float, mine: dict[str, object]) -> RemotingCommand | None:
        """Run ``handler`` once ``delay`` passed, its answer returned (it may not :meth:`~Connection.hold`
        it: this coroutine's result is the answer, so the connection is marked as one that does not
        hold answers while the handler runs). Whom the ACL checks let the request in as is put back
        on the connection for that call (a handler may ask the ACL; later requests may have changed
        it meanwhile); nothing else runs during it."""
        attrs = conn.attrs
        await self.sleep(delay)
        if conn.closed:
            return None
        current = {k: attrs.pop(k) for k in ACL_ATTRS if k in attrs}
        attrs.update(mine)
        conn.holds_answers = False
        try:
            result = handler(conn, cmd)
        finally:
            del conn.holds_answers
            for k in ACL_ATTRS:
                attrs.pop(k, None)
            attrs.update(current)
        if result is None or isinstance(result, RemotingCommand):
            return result
        return await result
