"""The consumer RPCs of the 5.x endpoint: QueryAssignment, ReceiveMessage (server streaming, long
polling), AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue, over
:class:`~.pop.PopService`.

Assignments name queue id -1 on each broker ("any readable queue here"), and a receive naming a real
queue id (simple consumers pick one from the route) is read the same way: it takes from the broker's
queues of the topic in turn, so any number of consumers of a group share every queue
and an invisible message is never seen by two of them. A push consumer's receive asks for
``auto_renew``: its leases are kept invisible, renewed by :meth:`ConsumeRpcs.renew_leases`, for as
long as the client keeps its heartbeats and until it acks or changes them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from pyrocketmq.remoting.names import PERM_READ

from ..message_filter import SqlParseError, sql_record_filter
from ..processors.pull import parse_tag_expression
from .clients import ClientRegistry, ClientSession
from .convert import endpoints, incoming, permission, status
from .pb import definition_pb2 as pb, service_pb2 as spb
from .pop import Filter, Popped, PopService
from .pop_state import BadHandle, Handle
from .routes import RouteLookup
from .service import session_of, topic_route

if TYPE_CHECKING:
    from ..subscription_group import SubscriptionGroupManager
    from ..topic_config import TopicConfigManager

log = logging.getLogger("pyrocketmq.broker.proxy")

MAX_BATCH = 32
DEFAULT_INVISIBLE_MS = 30_000
AUTO_RENEW_MS = 60_000
"""Invisible time of an auto-renewed lease (RocketMQ's proxy renews push consumers' messages likewise)."""
MAX_LONG_POLLING_MS = 30_000
DEADLINE_RESERVE = 0.2
"""Seconds before a receive's gRPC deadline by which an empty long poll answers "no message"."""
TICK = 1.0
"""Seconds between looks at expired leases while a receive waits."""


def polling_time(asked_ms: int | None, remaining: float | None, request_timeout: float = 0.0) -> float:
    """Seconds an empty receive waits for messages, over early enough for the answer to reach the
    client before its gRPC deadline (``remaining`` seconds; None: no deadline), as Apache's proxy does:

    * what the request asks (``asked_ms``), at most ``MAX_LONG_POLLING_MS``;
    * a request that asks nothing (Go's SimpleConsumer announces its wait in its settings only) waits
      for its deadline less half the client's ``request_timeout`` (seconds, from its settings);
    * never past the deadline: Rust's 5.0.0 client sets its deadline to the polling time itself, so an
      answer sent at the end of a full poll would come too late (DEADLINE_EXCEEDED, not "no message").

    >>> polling_time(20_000, 3.0)
    2.8
    >>> polling_time(None, 6.0, request_timeout=3.0)
    4.5
    """
    if asked_ms is None:
        asked_ms = MAX_LONG_POLLING_MS if remaining is None else int((remaining - request_timeout / 2) * 1000)
    polling = min(max(asked_ms, 0), MAX_LONG_POLLING_MS) / 1000
    if remaining is not None:
        polling = min(polling, max(remaining - DEADLINE_RESERVE, 0.0))
    return polling


class ConsumeRpcs:
    def __init__(
        self,
        *,
        pop: PopService,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        routes: RouteLookup,
        clients: ClientRegistry,
        sql_enabled: bool,
        broker_name: str,
        seen: Callable[[str, pb.Code], None],
        observe_receive: Callable[[float], None] | None = None,
    ) -> None:
        self.pop = pop
        self.topics = topics
        self.groups = groups
        self.routes = routes
        self.clients = clients
        self.sql_enabled = sql_enabled
        self.broker_name = broker_name
        self._seen = seen
        self.observe_receive = observe_receive
        """Told the seconds of each receive that handed out messages (metrics)."""
        self._turn = itertools.count()
        self.renewing: dict[tuple[str, Handle], str] = {}
        """Auto-renewed leases: (group, handle) → the client id holding them."""

    def _session(self, context: Any) -> ClientSession:
        return session_of(self.clients, context)

    # -- assignment -------------------------------------------------------------------------------
    async def query_assignment(
        self, request: spb.QueryAssignmentRequest, context: Any
    ) -> spb.QueryAssignmentResponse:
        self._session(context)
        topic = request.topic.name
        route = await topic_route(self.routes, self.topics, topic)
        if isinstance(route, pb.Status):
            self._seen("QueryAssignment", route.code)
            return spb.QueryAssignmentResponse(status=route)
        spans, types = route
        out = []
        for span in sorted(spans, key=lambda s: s.broker_name):
            if not span.perm & PERM_READ or span.read_queue_nums <= 0:
                continue
            queue = pb.MessageQueue(
                topic=pb.Resource(name=topic),
                id=-1,
                permission=permission(span.perm),
                broker=pb.Broker(name=span.broker_name, id=0, endpoints=endpoints(span.host, span.port)),
                accept_message_types=types,
            )
            out.append(pb.Assignment(message_queue=queue))
        self._seen("QueryAssignment", pb.OK)
        return spb.QueryAssignmentResponse(status=status(pb.OK), assignments=out)

    # -- receive ----------------------------------------------------------------------------------
    def _filter(self, expression: pb.FilterExpression) -> Filter | str:
        text = expression.expression
        if expression.type == pb.SQL:
            if not self.sql_enabled:
                return "SQL92 filtering is off on this broker (enablePropertyFilter=false)"
            try:
                return Filter(record=sql_record_filter(text))
            except SqlParseError as e:
                return f"the SQL92 expression {text!r} does not parse: {e}"
        return Filter(tag_codes=parse_tag_expression(text))

    async def receive_message(self, request: spb.ReceiveMessageRequest,
                              context: Any) -> AsyncIterator[spb.ReceiveMessageResponse]:
        session = self._session(context)
        group, topic = request.group.name, request.message_queue.topic.name
        log.debug(
            "ReceiveMessage from %s: group %s, queue %s/%d, batch %d, filter %s %r",
            session.client_id,
            group,
            topic,
            request.message_queue.id,
            request.batch_size,
            request.filter_expression.type,
            request.filter_expression.expression,
        )
        problem, code = self._receive_problem(group, topic)
        flt = self._filter(request.filter_expression)
        if isinstance(flt, str):
            problem, code = flt, pb.ILLEGAL_FILTER_EXPRESSION
        if problem is not None or isinstance(flt, str):
            self._seen("ReceiveMessage", code)
            yield spb.ReceiveMessageResponse(status=status(code, problem or ""))
            return
        config = self.groups.find(group)
        assert config is not None  # checked by _receive_problem
        auto_renew = request.auto_renew
        invisible_ms = (
            AUTO_RENEW_MS
            if auto_renew
            else (
                request.invisible_duration.ToMilliseconds()
                if request.HasField("invisible_duration")
                else DEFAULT_INVISIBLE_MS
            )
        )
        if invisible_ms <= 0:
            self._seen("ReceiveMessage", pb.ILLEGAL_INVISIBLE_TIME)
            yield spb.ReceiveMessageResponse(
                status=status(pb.ILLEGAL_INVISIBLE_TIME, "the invisible duration must be positive")
            )
            return
        began = time.perf_counter()
        popped = await self._receive(
            group,
            topic,
            max(1, min(request.batch_size or 1, MAX_BATCH)),
            invisible_ms,
            config.consume_message_orderly,
            config.retry_max_times + 1,
            flt,
            self._polling(request, session, context),
        )
        if not popped:
            self._seen("ReceiveMessage", pb.MESSAGE_NOT_FOUND)
            yield spb.ReceiveMessageResponse(status=status(pb.MESSAGE_NOT_FOUND, "no new message"))
            return
        self._seen("ReceiveMessage", pb.OK)
        if self.observe_receive is not None:
            self.observe_receive(time.perf_counter() - began)
        yield spb.ReceiveMessageResponse(status=status(pb.OK))
        for p in popped:
            handle = p.handle.encode()
            if auto_renew:
                self.renewing[(group, p.handle)] = session.client_id
            yield spb.ReceiveMessageResponse(
                message=incoming(
                    p.message,
                    receipt_handle=handle,
                    delivery_attempt=p.lease.attempt,
                    invisible_ms=invisible_ms,
                )
            )
        stamp = spb.ReceiveMessageResponse()
        stamp.delivery_timestamp.FromMilliseconds(int(time.time() * 1000))
        yield stamp

    @staticmethod
    def _polling(request: spb.ReceiveMessageRequest, session: ClientSession, context: Any) -> float:
        asked = None
        if request.HasField("long_polling_timeout"):
            asked = request.long_polling_timeout.ToMilliseconds()
        settings = session.settings
        timeout = settings.request_timeout.ToMilliseconds() / 1000 if settings is not None else 0.0
        return polling_time(asked, context.time_remaining(), timeout)

    def _receive_problem(self, group: str, topic: str) -> tuple[str | None, pb.Code]:
        if not group:
            return "the request names no consumer group", pb.ILLEGAL_CONSUMER_GROUP
        config = self.groups.find(group)
        if config is None:
            return f"consumer group {group} is not found", pb.CONSUMER_GROUP_NOT_FOUND
        if not config.consume_enable:
            return f"consumer group {group} is not allowed to consume", pb.FORBIDDEN
        topic_config = self.topics.get(topic)
        if topic_config is None:
            return f"topic {topic} is not found on broker {self.broker_name}", pb.TOPIC_NOT_FOUND
        if not topic_config.perm & PERM_READ:
            return f"topic {topic} is not readable on broker {self.broker_name}", pb.FORBIDDEN
        return None, pb.OK

    async def _receive(self, group: str, topic: str, want: int, invisible_ms: int, fifo: bool,
                       max_attempts: int, flt: Filter, polling: float) -> list[Popped]:
        deadline = time.monotonic() + polling
        while True:
            config = self.topics.get(topic)
            # the queue a receive names only picks the broker (as RocketMQ's proxy does): any readable
            # queue of the topic here may answer, so a client's round-robin over ids never waits on an
            # empty queue while another one holds messages
            queues = list(range(config.read_queue_nums if config else 0))
            out: list[Popped] = []
            turn = next(self._turn)
            for i in range(len(queues)):
                if len(out) >= want:
                    break
                qid = queues[(turn + i) % len(queues)]
                got, dead = self.pop.take(
                    group,
                    topic,
                    qid,
                    want - len(out),
                    invisible_ms=invisible_ms,
                    fifo=fifo,
                    max_attempts=max_attempts,
                    flt=flt,
                )
                out.extend(got)
                if dead:
                    asyncio.ensure_future(self.pop.dead_letter(group, dead))
            remaining = deadline - time.monotonic()
            if out or remaining <= 0:
                return out
            await self.pop.wait(topic, min(remaining, TICK))

    # -- settling -----------------------------------------------------------------------------------
    def _handle(self, text: str) -> Handle | None:
        try:
            return Handle.decode(text)
        except BadHandle:
            return None

    async def ack_message(self, request: spb.AckMessageRequest, context: Any) -> spb.AckMessageResponse:
        self._session(context)
        group = request.group.name
        entries = []
        for entry in request.entries:
            handle = self._handle(entry.receipt_handle)
            ok = handle is not None and self.pop.ack(group, handle)
            if handle is not None:
                self.renewing.pop((group, handle), None)
            entries.append(
                spb.AckMessageResultEntry(
                    message_id=entry.message_id,
                    receipt_handle=entry.receipt_handle,
                    status=status(pb.OK)
                    if ok
                    else status(
                        pb.INVALID_RECEIPT_HANDLE, "the receipt handle is stale or not this broker's"
                    ),
                )
            )
        codes = {e.status.code for e in entries}
        overall = status(pb.OK) if codes == {pb.OK} else (
            entries[0].status if len(codes) == 1 else status(pb.MULTIPLE_RESULTS, "see entries"))
        self._seen("AckMessage", overall.code)
        return spb.AckMessageResponse(status=overall, entries=entries)

    async def change_invisible_duration(self, request: spb.ChangeInvisibleDurationRequest,
                                        context: Any) -> spb.ChangeInvisibleDurationResponse:
        self._session(context)
        group = request.group.name
        handle = self._handle(request.receipt_handle)
        invisible_ms = request.invisible_duration.ToMilliseconds()
        if invisible_ms < 0:
            self._seen("ChangeInvisibleDuration", pb.ILLEGAL_INVISIBLE_TIME)
            return spb.ChangeInvisibleDurationResponse(
                status=status(pb.ILLEGAL_INVISIBLE_TIME, "negative invisible duration")
            )
        new = None if handle is None else self.pop.change(group, handle, invisible_ms)
        if handle is not None:
            self.renewing.pop((group, handle), None)
        if new is None:
            self._seen("ChangeInvisibleDuration", pb.INVALID_RECEIPT_HANDLE)
            return spb.ChangeInvisibleDurationResponse(
                status=status(pb.INVALID_RECEIPT_HANDLE, "the receipt handle is stale or not this broker's"))
        self._seen("ChangeInvisibleDuration", pb.OK)
        return spb.ChangeInvisibleDurationResponse(status=status(pb.OK), receipt_handle=new.encode())

    async def forward_message_to_dead_letter_queue(
        self, request: spb.ForwardMessageToDeadLetterQueueRequest, context: Any
    ) -> spb.ForwardMessageToDeadLetterQueueResponse:
        self._session(context)
        group = request.group.name
        handle = self._handle(request.receipt_handle)
        msg = None if handle is None else self.pop.take_for_dlq(group, handle)
        if handle is not None:
            self.renewing.pop((group, handle), None)
        if msg is None:
            self._seen("ForwardMessageToDeadLetterQueue", pb.INVALID_RECEIPT_HANDLE)
            return spb.ForwardMessageToDeadLetterQueueResponse(
                status=status(pb.INVALID_RECEIPT_HANDLE, "the receipt handle is stale or not this broker's"))
        await self.pop.dead_letter(group, [msg])
        self._seen("ForwardMessageToDeadLetterQueue", pb.OK)
        return spb.ForwardMessageToDeadLetterQueueResponse(status=status(pb.OK))

    def renew_leases(self) -> int:
        """Keep auto-renewed leases invisible while their client is alive; forget the others."""
        now = int(time.time() * 1000)
        renewed = 0
        for (group, handle), client_id in list(self.renewing.items()):
            session = self.clients.sessions.get(client_id)
            if session is None or not self.pop.extend(group, handle, now + AUTO_RENEW_MS):
                del self.renewing[(group, handle)]
                continue
            renewed += 1
        return renewed
