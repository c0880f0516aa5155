"""``apache.rocketmq.v2.MessagingService`` in the broker process (RocketMQ 5's proxy, local mode).

Each call is answered by the broker's own 4.x processors: a SendMessage becomes a SEND_MESSAGE
request, an EndTransaction an END_TRANSACTION and a RecallMessage a RECALL_MESSAGE (:mod:`.recall`),
dispatched in-process to the handler the remoting server would have called (a recall for another
broker goes to that broker's remoting port). So a 5.x send passes the same checks (topic,
permission, size, message type, timer limits), lands in the same store and waits on the same flush
and replication as a 4.x one, and the two kinds of clients share topics and groups.

Every answer is gRPC OK with the outcome in the body's ``status`` (what the official clients
expect); a call the broker cannot take (a slave, say) says why in that status.

A session holds only Settings its caller was allowed to announce (``access``, the check every RPC
passes): a refused Settings is answered with the refusing status on the stream and leaves the session
announcing nothing, and a stream opened under a client id whose announcements its caller could not
make itself does not inherit them. So a session answers the check-backs of exactly the topics it may
publish to.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import Prop
from pyrocketmq.remoting.msg_id import decode_offset_msg_id
from pyrocketmq.remoting.transport import Handler, RemotingError, call_handler

from ..transaction import COMMIT, ROLLBACK
from .auth import Access
from .clients import ClientRegistry, ClientSession
from .convert import (
    QueueSpan,
    Refused,
    accepted_types,
    code_of,
    consumer_settings,
    message_queues,
    outgoing,
    settings_reply,
    status,
    transaction_group,
)
from .pb import definition_pb2 as pb, service_pb2 as spb
from .queue_select import QueueChooser
from .recall import recall_answer, recall_request
from .routes import RouteLookup, RouteUnavailable

if TYPE_CHECKING:
    from ..client_manager import ProducerManager
    from ..store.message_store import MessageStore
    from ..subscription_group import SubscriptionGroupManager
    from ..topic_config import TopicConfigManager

log = logging.getLogger("pyrocketmq.broker.proxy")

RECALL_TIMEOUT = 3.0
"""Seconds a recall forwarded to another broker waits for its answer (Apache's proxy: 2 s)."""
PYTHON_LANGUAGE = 6
"""LanguageCode the 4.x producer table shows for 5.x clients (Java's LanguageCode has no GRPC)."""


def client_id_of(context: Any) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == "x-mq-client-id":
            return str(value)
    return ""


def peer_of(context: Any) -> str:
    """``ip:port`` of the caller from gRPC's ``ipv4:1.2.3.4:5`` / ``ipv6:[::1]:5``."""
    peer = str(context.peer() or "")
    kind, _, rest = peer.partition(":")
    return rest if kind in ("ipv4", "ipv6") else "127.0.0.1:0"


def session_of(clients: ClientRegistry, context: Any) -> ClientSession:
    """The calling client's session (keyed by ``x-mq-client-id``, else by its address), touched."""
    peer = peer_of(context)
    return clients.touch(client_id_of(context) or peer, peer)


async def topic_route(routes: RouteLookup, topics: TopicConfigManager,
                      topic: str) -> tuple[list[QueueSpan], tuple[pb.MessageType, ...]] | pb.Status:
    """The topic's spans and accepted message types (QueryRoute, QueryAssignment), or the failing status."""
    try:
        spans = await routes.spans(topic)
    except RouteUnavailable as e:
        return status(pb.INTERNAL_SERVER_ERROR, str(e))
    if not spans:
        return status(pb.TOPIC_NOT_FOUND, f"topic {topic} is not found")
    config = topics.get(topic)
    return spans, accepted_types(config.message_type if config is not None else None)


@dataclass(frozen=True)
class ClientTerms:
    """What the endpoint's settings replies tell clients: the largest body a producer may send, and the
    delays of a consumer group's retry backoff."""

    max_body_size: int
    retry_delays_ms: list[int] = field(default_factory=list)


class MessagingService:
    def __init__(
        self,
        *,
        handlers: Mapping[int, Handler],
        store: MessageStore,
        topics: TopicConfigManager,
        producers: ProducerManager,
        routes: RouteLookup,
        clients: ClientRegistry,
        terms: ClientTerms,
        groups: SubscriptionGroupManager | None = None,
        on_call: Callable[[str, str], None] | None = None,
        access: Access | None = None,
        broker_name: str = "",
    ) -> None:
        self.handlers = handlers
        self.store = store
        self.topics = topics
        self.producers = producers
        self.routes = routes
        self.clients = clients
        self.terms = terms
        self.groups = groups
        self.on_call = on_call
        """Told every answered call's RPC name and status code (metrics)."""
        self.access = access
        """The check every RPC passes, applied to what a Telemetry stream announces (None: no access
        control)."""
        self.broker_name = broker_name
        """This broker's name: a recall handle naming another broker is forwarded to it."""
        self.queues = QueueChooser()
        """Picks each send's queue (the request's ``queue_id`` is not trusted, as in Apache's proxy)."""

    def seen(self, rpc: str, code: pb.Code) -> None:
        if self.on_call is not None:
            self.on_call(rpc, pb.Code.Name(code))

    def _session(self, context: Any) -> ClientSession:
        return session_of(self.clients, context)

    async def _dispatch(self, session: ClientSession, cmd: RemotingCommand) -> RemotingCommand | None:
        return await call_handler(self.handlers, session.channel, cmd, "5.x endpoint")

    # -- routes and clients ---------------------------------------------------------------------
    async def query_route(self, request: spb.QueryRouteRequest, context: Any) -> spb.QueryRouteResponse:
        self._session(context)
        topic = request.topic.name
        route = await topic_route(self.routes, self.topics, topic)
        if isinstance(route, pb.Status):
            self.seen("QueryRoute", route.code)
            return spb.QueryRouteResponse(status=route)
        spans, types = route
        self.seen("QueryRoute", pb.OK)
        return spb.QueryRouteResponse(
            status=status(pb.OK), message_queues=message_queues(topic, spans, types)
        )

    async def heartbeat(self, request: spb.HeartbeatRequest, context: Any) -> spb.HeartbeatResponse:
        session = self._session(context)
        self._register_producer(session)
        self.seen("Heartbeat", pb.OK)
        return spb.HeartbeatResponse(status=status(pb.OK))

    async def notify_client_termination(self, request: spb.NotifyClientTerminationRequest,
                                        context: Any) -> spb.NotifyClientTerminationResponse:
        session = self.clients.drop(client_id_of(context) or peer_of(context))
        if session is not None:
            self.producers.remove_connection(session.channel)
        self.seen("NotifyClientTermination", pb.OK)
        return spb.NotifyClientTerminationResponse(status=status(pb.OK))

    def _register_producer(self, session: ClientSession) -> None:
        """A producer's session answers transaction check-backs of the topics it publishes."""
        for topic in session.publishing_topics:
            self.producers.register(
                session.client_id, session.channel, PYTHON_LANGUAGE, 0, transaction_group(topic)
            )

    def _announce(self, session: ClientSession, settings: pb.Settings | None) -> None:
        """The session's Settings become ``settings`` (None: nothing announced), its producer groups
        theirs."""
        session.settings = settings
        self.producers.remove_connection(session.channel)
        self._register_producer(session)

    def _refusal(self, settings: pb.Settings, context: Any) -> pb.Status | None:
        return None if self.access is None else self.access(spb.TelemetryCommand(settings=settings), context)

    def expire(self) -> int:
        """Forget clients silent past the expiry (run periodically)."""
        gone = self.clients.expired()
        for session in gone:
            self.producers.remove_connection(session.channel)
        return len(gone)

    # -- Telemetry --------------------------------------------------------------------------------
    async def telemetry(self, requests: AsyncIterator[spb.TelemetryCommand],
                        context: Any) -> AsyncIterator[spb.TelemetryCommand]:
        session = self._session(context)
        if session.settings is not None and self._refusal(session.settings, context) is not None:
            self._announce(session, None)  # a stream under another's client id: it must announce for itself
        stream = session.open_stream()
        reader = asyncio.ensure_future(self._read_telemetry(session, stream, requests, context))
        try:
            while True:
                command = await stream.get()
                if command is None:
                    return
                yield command
        finally:
            reader.cancel()
            session.end_stream(stream)

    async def _read_telemetry(
        self,
        session: ClientSession,
        stream: asyncio.Queue[spb.TelemetryCommand | None],
        requests: AsyncIterator[spb.TelemetryCommand],
        context: Any,
    ) -> None:
        try:
            async for command in requests:
                if session.stream is not stream:  # replaced by a newer stream: that one speaks for the client
                    return
                session.last_seen = time.monotonic()
                kind = command.WhichOneof("command")
                if kind == "settings":
                    session.push(self._settle(session, command.settings, context))
                elif kind in ("thread_stack_trace", "verify_message_result"):
                    log.info("5.x client %s answered %s", session.client_id, kind)
                else:
                    log.info("5.x client %s sent an unexpected Telemetry command %s", session.client_id, kind)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # the stream broke: the client reconnects with a new one
            log.info("Telemetry stream of %s ended: %s", session.client_id, e)
        finally:
            session.end_stream(stream)

    def _settle(self, session: ClientSession, settings: pb.Settings, context: Any) -> spb.TelemetryCommand:
        """Take or refuse the Settings a client announces; the answer to write on its stream."""
        refused = self._refusal(settings, context)
        self._announce(session, settings if refused is None else None)
        self.seen("Telemetry", pb.OK if refused is None else refused.code)
        if refused is not None:
            return spb.TelemetryCommand(status=refused)
        return spb.TelemetryCommand(status=status(pb.OK), settings=self._settings_reply(settings))

    def _settings_reply(self, client: pb.Settings) -> pb.Settings:
        reply = settings_reply(client, max_body_size=self.terms.max_body_size)
        if client.HasField("subscription") and self.groups is not None:
            config = self.groups.find(client.subscription.group.name)
            if config is not None:
                consumer_settings(
                    reply,
                    fifo=config.consume_message_orderly,
                    max_attempts=config.retry_max_times + 1,
                    retry_delays_ms=self.terms.retry_delays_ms,
                )
        return reply

    # -- sending ----------------------------------------------------------------------------------
    async def send_message(self, request: spb.SendMessageRequest, context: Any) -> spb.SendMessageResponse:
        session = self._session(context)
        if not request.messages:
            self.seen("SendMessage", pb.BAD_REQUEST)
            return spb.SendMessageResponse(status=status(pb.BAD_REQUEST, "no message to send"))
        chosen: dict[str, int] = {}
        entries = [await self._send_one(session, m, self._queue_of(request, m, chosen))
                   for m in request.messages]
        first = entries[0].status
        overall = (
            first
            if all(e.status.code == first.code for e in entries)
            else status(pb.MULTIPLE_RESULTS, "see entries")
        )
        self.seen("SendMessage", overall.code)
        return spb.SendMessageResponse(status=overall, entries=entries)

    def _queue_of(self, request: spb.SendMessageRequest, message: pb.Message, chosen: dict[str, int]) -> int:
        """The queue of ``message`` among this broker's write queues of its topic: one per topic and
        request, by the message group's hash for a request of one FIFO message, else round-robin."""
        topic = message.topic.name
        if topic not in chosen:
            config = self.topics.get(topic)
            sp = message.system_properties
            group = sp.message_group if len(request.messages) == 1 and sp.HasField("message_group") else None
            chosen[topic] = self.queues.choose(topic, config.write_queue_nums if config else 0, group)
        return chosen[topic]

    async def _send_one(
        self, session: ClientSession, message: pb.Message, queue_id: int
    ) -> spb.SendResultEntry:
        message_id = message.system_properties.message_id
        try:
            out = outgoing(message, queue_id, int(time.time() * 1000))
        except Refused as e:
            return spb.SendResultEntry(status=status(e.code, str(e)), message_id=message_id)
        config = self.topics.get(out.topic)
        declared = message.system_properties.message_type
        if config is not None and config.message_type and declared not in accepted_types(config.message_type):
            # a 5.x client declares its message's type: a typed topic takes only its own (4.x senders,
            # which declare nothing, are judged by the send processor's own rule)
            return spb.SendResultEntry(status=status(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, (
                f"the topic[{out.topic}] takes {config.message_type} messages, not "
                f"{pb.MessageType.Name(declared)} ones")), message_id=message_id)
        group = transaction_group(out.topic) if out.sys_flag else "%GRPC_PRODUCER%"
        cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE, out.header(group), out.body)
        resp = await self._dispatch(session, cmd)
        if resp is None or resp.code != ResponseCode.SUCCESS:
            code = ResponseCode.SYSTEM_ERROR if resp is None else resp.code
            remark = "no answer" if resp is None else resp.remark or ""
            return spb.SendResultEntry(status=status(code_of(code, remark), remark), message_id=message_id)
        fields = resp.ext_fields
        entry = spb.SendResultEntry(status=status(pb.OK), message_id=message_id,
                                    offset=int(fields.get("queueOffset") or 0),
                                    recall_handle=str(fields.get("recallHandle") or ""))
        if out.sys_flag:
            entry.transaction_id = str(fields.get("msgId") or "")
        return entry

    async def end_transaction(
        self, request: spb.EndTransactionRequest, context: Any
    ) -> spb.EndTransactionResponse:
        session = self._session(context)
        answer = await self._end(session, request)
        self.seen("EndTransaction", answer.code)
        return spb.EndTransactionResponse(status=answer)

    async def _end(self, session: ClientSession, request: spb.EndTransactionRequest) -> pb.Status:
        if request.resolution not in (pb.COMMIT, pb.ROLLBACK):
            return status(pb.OK, "the transaction stays unresolved: the broker will check it back")
        try:
            _, _, offset = decode_offset_msg_id(request.transaction_id)
        except ValueError:
            return status(
                pb.INVALID_TRANSACTION_ID,
                f"transaction id {request.transaction_id!r} is not one this broker gave",
            )
        half = self.store.look_message(offset)
        if half is None or half.properties.get(Prop.REAL_TOPIC) != request.topic.name:
            return status(
                pb.INVALID_TRANSACTION_ID,
                f"no half message of topic {request.topic.name} for transaction {request.transaction_id}",
            )
        fields = {
            "producerGroup": half.properties.get(Prop.PGROUP, ""),
            "tranStateTableOffset": str(half.queue_offset),
            "commitLogOffset": str(offset),
            "commitOrRollback": str(COMMIT if request.resolution == pb.COMMIT else ROLLBACK),
            "msgId": request.message_id,
            "fromTransactionCheck": "true" if request.source == pb.SOURCE_SERVER_CHECK else "false",
            "transactionId": request.transaction_id,
        }
        resp = await self._dispatch(session, RemotingCommand.request(RequestCode.END_TRANSACTION, fields))
        if resp is None or resp.code == ResponseCode.SUCCESS:
            return status(pb.OK)
        return status(code_of(resp.code, resp.remark), resp.remark or "")

    async def recall_message(
        self, request: spb.RecallMessageRequest, context: Any
    ) -> spb.RecallMessageResponse:
        session = self._session(context)
        config = self.topics.get(request.topic.name)
        topic_type = config.message_type if config is not None else None
        cmd = recall_request(request.topic.name, request.recall_handle, topic_type)
        if isinstance(cmd, pb.Status):
            answer, message_id = cmd, ""
        else:
            answer, message_id = recall_answer(await self._recall_at(session, cmd))
        self.seen("RecallMessage", answer.code)
        return spb.RecallMessageResponse(status=answer, message_id=message_id)

    async def _recall_at(self, session: ClientSession, cmd: RemotingCommand) -> RemotingCommand | None:
        """RECALL_MESSAGE answered by the broker its handle names: this one, or the master of another
        one of the topic's route, over the remoting port (as Apache's proxy in cluster mode; a client
        sends every recall to its own endpoint). A broker no route names answers here (refused)."""
        name, topic = cmd.ext_fields["bname"], cmd.ext_fields["topic"]
        addr = None
        if name != self.broker_name:
            try:
                addr = await self.routes.master_of(topic, name)
            except RouteUnavailable as e:
                log.info("recall for %s: no route (%s); answered here", name, e)
        if addr is None:
            return await self._dispatch(session, cmd)
        try:
            return await self.routes.client.invoke(addr, cmd, RECALL_TIMEOUT)
        except RemotingError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"recall failed, {name} did not answer: {e}")
