"""Per-user quotas (:mod:`pyrocketmq.broker.quota`) on the 5.x endpoint, as on the remoting port: each
call of an ACL 2.0 user counts as a request, a SendMessage's bodies as produced bytes and each message
a ReceiveMessage hands out as consumed bytes; over a limit, the answer (or the next message of a
receive) is held back by the debt, at most ``max_delay`` seconds at a time, never refused.

The user is the one the access check let the call in as (:data:`CALLER`, set in the call's own task,
so it is that call's alone); calls of nobody known (authentication off, ACL 1.0 accounts) are not
counted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from ..quota import QuotaTable

CALLER: ContextVar[str | None] = ContextVar("pyrocketmq_grpc_caller", default=None)
"""The ACL 2.0 user the current gRPC call was let in as."""


def _produced(request: Any) -> int:
    messages = getattr(request, "messages", None)
    return sum(len(m.body) for m in messages) if messages is not None else 0


class GrpcMeter:
    """Counts calls against their user's quota and holds them back over it."""

    def __init__(self, table: QuotaTable, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.table = table
        self.sleep = sleep

    async def call(self, request: Any) -> None:
        """A call begins (``request`` None: a stream opened): one request, and a send's bytes."""
        user = CALLER.get()
        if user is None:
            return
        delay = self.table.charge(user, produced=_produced(request) if request is not None else 0)
        if delay > 0.0:
            await self.sleep(delay)

    async def item(self, item: Any) -> None:
        """A streamed answer goes out: a received message's bytes."""
        user = CALLER.get()
        if user is None or not item.HasField("message"):
            return
        delay = self.table.charge(user, consumed=len(item.message.body), requests=0)
        if delay > 0.0:
            await self.sleep(delay)
