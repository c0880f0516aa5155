"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320).

Checks, in RocketMQ's order: writable broker, topic name, topic exists (or is created through
TBW102), queue id in range, body size; then one store put. The stored properties are the
producer's encoded properties with ``CLUSTER`` appended as bytes: nothing is re-encoded per message.
With SYNC_FLUSH and ``WAIT=true`` the answer waits for the group commit that covers the message:
the handler returns a future (no task per message) that the transport answers from, kept by
:class:`~.durable.DurableWaiters` (one queue, one timer, one hand-back per sync). A message the store
holds for the timer is answered with its ``recallHandle`` (Apache 5.3.2+, :func:`recall_handle`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyrocketmq.remoting.batch import iter_batch_raw
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import HeaderError, SendMessageRequestHeader
from pyrocketmq.remoting.message import (
    MAX_PROPERTIES_BYTES,
    Prop,
    SysFlag,
    decode_properties,
    pack_host,
    tags_code,
)
from pyrocketmq.remoting.message_type import message_type, type_problem
from pyrocketmq.remoting.names import (
    NOT_ALLOWED_SEND_TOPICS,
    PERM_READ,
    PERM_WRITE,
    RETRY_GROUP_TOPIC_PREFIX,
    check_topic_name,
    dlq_topic,
)
from pyrocketmq.remoting.recall_handle import RecallHandle
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult

from ..delay import DLQ_QUEUE_NUMS
from ..settings import BrokerRole
from ..store import MessageInner, PutMessageStatus, PutResult, send_properties
from ..transaction import half_inner, is_prepared
from .durable import DurableWaiters
from .services import BrokerServices

if TYPE_CHECKING:
    from pyrocketmq.remoting.body import TopicConfig

    from ..ha.service import HAServer

log = logging.getLogger("pyrocketmq.broker")

_PUT_STATUS_CODE = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
    PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutMessageStatus.CREATE_MAPPED_FILE_FAILED: ResponseCode.SYSTEM_ERROR,
    PutMessageStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.OS_PAGECACHE_BUSY: ResponseCode.SYSTEM_BUSY,
    PutMessageStatus.UNKNOWN_ERROR: ResponseCode.SYSTEM_ERROR,
}


PUBLISH_TIMEOUT = 3.0
"""Seconds a send that created its topic waits for the name servers to route it."""


@dataclass(kw_only=True, eq=False, repr=False)
class SendProcessor(BrokerServices):
    store_host: bytes
    """This broker's address as stored with each message (``STOREHOST``)."""
    ha_server: HAServer | None
    publish_routes: Callable[[], Awaitable[object]] | None = None
    """Registers this broker's topics with the name servers now (after an auto-created topic)."""
    cluster_prop: bytes = field(init=False)
    max_body: int = field(init=False)
    durable: DurableWaiters = field(init=False)
    """SYNC_FLUSH sends waiting for their group commit."""
    _born_hosts: dict[str, bytes] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.cluster_prop = f"{Prop.CLUSTER}\x01{self.settings.identity.cluster_name}".encode()
        self.max_body = self.settings.store.max_message_size
        self.durable = DurableWaiters(self.store.flush_to, self.settings.store.sync_flush_timeout_ms / 1000)
        self.store.watch_durable(self.durable)

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.SEND_MESSAGE, self.handle_send)
        server.register(RequestCode.SEND_MESSAGE_V2, self.handle_send)
        server.register(RequestCode.SEND_BATCH_MESSAGE, self.handle_send)

    def _born_host(self, conn: Connection) -> bytes:
        packed = self._born_hosts.get(conn.remote_addr)
        if packed is None:
            host, _, port = conn.remote_addr.rpartition(":")
            try:
                packed = pack_host(host.strip("[]"), int(port))
            except (ValueError, OSError):
                packed = pack_host("127.0.0.1", 0)
            if len(self._born_hosts) > 10_000:
                self._born_hosts.clear()
            self._born_hosts[conn.remote_addr] = packed
        return packed

    # -- the handler --------------------------------------------------------------------------
    def handle_send(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            h = SendMessageRequestHeader.from_command(cmd)
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad send request header: {e}")
        body = cmd.payload
        batch = cmd.code == RequestCode.SEND_BATCH_MESSAGE or h.batch
        if self.settings.identity.role == BrokerRole.SLAVE:
            return self._slave_refusal(conn, cmd)
        version = self.topics.data_version.counter
        target = self._target(cmd, h, len(body), batch)
        if self.publish_routes is not None and self.topics.data_version.counter != version:
            # the send created its topic: the name servers route it before the producer hears back
            # (a future, not a held answer: the answer must wait for the routes too)
            return published_first(
                self.publish_routes, self._send(conn, cmd, h, body, batch, target, holder=None)
            )
        return self._send(conn, cmd, h, body, batch, target, holder=conn if conn.holds_answers else None)

    def _send(
        self,
        conn: Connection,
        cmd: RemotingCommand,
        h: SendMessageRequestHeader,
        body: bytes | bytearray | memoryview,
        batch: bool,
        target: tuple[str, int, TopicConfig] | RemotingCommand,
        holder: Connection | None,
    ) -> HandlerResult:
        if isinstance(target, RemotingCommand):
            return target
        topic, queue_id, config = target
        try:  # (a retry turned dead letter waits for nothing: its DELAY goes)
            _, props_bytes, props, wait = send_properties(h.properties, self.cluster_prop, topic != h.topic)
        except UnicodeEncodeError:
            return cmd.response(ResponseCode.MESSAGE_ILLEGAL, "the message properties are not valid Unicode")
        if len(props_bytes) > MAX_PROPERTIES_BYTES:
            return cmd.response(
                ResponseCode.MESSAGE_ILLEGAL, f"the message properties are over {MAX_PROPERTIES_BYTES} bytes"
            )
        if config.attributes and topic == h.topic:
            problem = self._type_problem(topic, config.message_type, props, body if batch else None)
            if problem is not None:
                return cmd.response(ResponseCode.MESSAGE_ILLEGAL, problem)
        sys_flag = h.sys_flag
        if config.topic_filter_type == "MULTI_TAG":
            sys_flag |= SysFlag.MULTI_TAGS
        # the send's one record for the store (a batch's: its body is the batch body, its properties the
        # batch's own)
        msg = MessageInner(
            config.topic_name if batch else topic,
            body,
            0 if batch else h.flag,
            props,
            props_bytes,
            queue_id,
            sys_flag,
            h.born_timestamp or int(time.time() * 1000),
            self._born_host(conn),
            self.store_host,
            h.reconsume_times or 0,
            0,
            0 if batch else tags_code(props.get(Prop.TAGS)),
        )
        if batch:
            if is_prepared(sys_flag):
                return cmd.response(
                    ResponseCode.MESSAGE_ILLEGAL, "a batch cannot be a transactional (prepared) message"
                )
            try:
                result = self.store.put_batch(msg)
            except ValueError as e:
                problem = str(e)
                return cmd.response(
                    ResponseCode.MESSAGE_ILLEGAL,
                    problem if problem == "empty batch" else f"bad batch body: {e}",
                )
        else:
            problem = self.store.timer_problem(msg)
            if problem is not None:
                return cmd.response(ResponseCode.MESSAGE_ILLEGAL, problem)
            result = self.store.put_message(half_inner(msg) if is_prepared(sys_flag) else msg)
        handle = (
            None
            if batch
            else recall_handle(topic, props, result.timer_due_ms, self.settings.identity.broker_name)
        )
        return self._answer(holder, cmd, result, topic, queue_id, wait, message_type(props).lower(), handle)

    @staticmethod
    def _type_problem(topic: str, topic_type: str | None, props: dict[str, str],
                      batch_body: bytes | bytearray | memoryview | None) -> str | None:
        """Why the message (or a message of the batch) does not fit the topic's ``message.type``."""
        if batch_body is None:
            return type_problem(topic, topic_type, props)
        try:
            items = [
                decode_properties(item_props) if item_props else {}
                for _, _, item_props in iter_batch_raw(batch_body)
            ]
        except ValueError:
            return None  # the batch check that follows says what is wrong with it
        return next((p for p in (type_problem(topic, topic_type, {**props, **i}) for i in items) if p), None)

    def _slave_refusal(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        if self.settings.network.master_service_addr:
            # reached through the master Service on a connection opened before a handover: refused,
            # then closed, so the client's next connection goes where the Service leads now
            asyncio.get_running_loop().call_soon(conn.close, "a slave: reconnect through the master Service")
        why = f"the broker[{self.settings.addr}] is a slave, sending is forbidden"
        return cmd.response(ResponseCode.SERVICE_NOT_AVAILABLE, why)

    def _target(
        self, cmd: RemotingCommand, h: SendMessageRequestHeader, body_size: int, batch: bool
    ) -> tuple[str, int, TopicConfig] | RemotingCommand:
        """Where the send goes, ``(topic, queue id, config)``, after RocketMQ's checks in its order
        (topic name, body size, topic exists or is created, writable, queue id; a slave refused
        before); or the refusal."""
        problem = check_topic_name(h.topic)
        if problem is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, problem)
        if h.topic in NOT_ALLOWED_SEND_TOPICS:  # the broker's own queues: only it writes there
            return cmd.response(
                ResponseCode.NO_PERMISSION, f"Sending message to topic[{h.topic}] is forbidden."
            )
        if body_size > self.max_body:
            return cmd.response(
                ResponseCode.MESSAGE_ILLEGAL,
                f"the {'batch' if batch else 'message'} body size {body_size} is over the max value "
                f"{self.max_body} (maxMessageSize)",
            )
        topics = self.topics
        topic = h.topic
        queue_id: int | None = h.queue_id
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and not batch:
            routed = self._retry_or_dlq(h)
            if isinstance(routed, str):
                return cmd.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, routed)
            topic, queue_id = routed
        config = topics.get(topic)
        if config is None:
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                config = topics.create_in_send_back(topic, 1, PERM_READ | PERM_WRITE)
            else:
                # Java: topicSysFlag is FLAG_UNIT (1) for a unit-mode producer, else 0 (not the message's
                # sysFlag)
                config = topics.create_in_send(
                    h.topic, h.default_topic or "", h.default_topic_queue_nums or 4, 1 if h.unit_mode else 0
                )
            if config is None:
                return cmd.response(
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"topic[{h.topic}] not exist, apply first please! (autoCreateTopicEnable is "
                    f"{'on' if self.settings.topics.auto_create_topic else 'off'})",
                )
        if not config.perm & PERM_WRITE:
            return cmd.response(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending is forbidden")
        if queue_id is None or queue_id < 0:
            queue_id = random.randrange(config.write_queue_nums) if config.write_queue_nums > 0 else 0
        elif queue_id >= max(config.write_queue_nums, config.read_queue_nums):
            return cmd.response(
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{queue_id}] is illegal, topic {topic} has {config.write_queue_nums} "
                "write queues",
            )
        return topic, queue_id, config

    def _answer(
        self,
        holder: Connection | None,
        cmd: RemotingCommand,
        result: PutResult,
        topic: str,
        queue_id: int,
        wait: bool,
        kind: str,
        handle: str | None = None,
    ) -> HandlerResult:
        """The send's answer: at once, or once the flush / the slave covers the message (``holder``: the
        connection that keeps the request until the sync; None: the answer is a future)."""
        code = _PUT_STATUS_CODE.get(result.status, ResponseCode.SYSTEM_ERROR)
        if code != ResponseCode.SUCCESS:
            return cmd.response(code, f"putting the message failed: {result.status.name}")
        self.stats.on_put(topic, result.message_count, result.wrote_bytes, kind)
        response = cmd.response(ResponseCode.SUCCESS)
        response.ext_fields = {  # strings already: no stringify pass per send
            "msgId": result.msg_id,
            "queueId": str(queue_id),
            "queueOffset": str(result.queue_offset),
            "MSG_REGION": "DefaultRegion",
            "TRACE_ON": "true",
        }
        if handle is not None:
            response.ext_fields["recallHandle"] = handle
        end = result.wrote_offset + result.wrote_bytes
        if not wait:
            return response
        if self.ha_server is not None and self.settings.identity.role == BrokerRole.SYNC_MASTER:
            return self._wait_slave(
                response, end, self.durable.wait(end, response) if self.store.sync_flush else None
            )
        if not self.store.sync_flush:
            return response
        if holder is None:
            return self.durable.wait(end, response)
        return None if self.durable.hold(end, holder, cmd, response) else response  # None: the sync answers

    def _retry_or_dlq(self, h: SendMessageRequestHeader) -> tuple[str, int | None] | str:
        """A send to ``%RETRY%<group>`` (a client whose send-back failed): its ``(topic, queue id)``,
        the group's DLQ once ``reconsumeTimes`` reached the max; or why the group is refused.
        The retry topic gets the group's ``retryQueueNums`` queues when created here."""
        name = h.topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        group = self.groups.find(name)
        if group is None:
            return f"subscription group not exist, {name}"
        topics = self.topics
        if topics.get(h.topic) is None:
            topics.create_in_send_back(h.topic, max(1, group.retry_queue_nums), PERM_READ | PERM_WRITE)
        max_times = h.max_reconsume_times if h.max_reconsume_times is not None else group.retry_max_times
        if (h.reconsume_times or 0) < max_times:
            return h.topic, h.queue_id
        dlq = dlq_topic(name)
        topics.create_in_send_back(dlq, DLQ_QUEUE_NUMS, PERM_READ | PERM_WRITE)
        return dlq, 0

    def _wait_slave(
        self, response: RemotingCommand, end: int, flushed: asyncio.Future[RemotingCommand] | None
    ) -> asyncio.Future[RemotingCommand]:
        """SYNC_MASTER: answer once a slave holds the bytes up to ``end`` (and the flush, if any, is
        done); SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT otherwise — the message stays stored."""
        assert self.ha_server is not None
        replicated = self.ha_server.wait_for_slave(end, self.settings.store.sync_flush_timeout_ms / 1000)
        out: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()

        def done(_f: object) -> None:
            if out.done() or not replicated.done() or (flushed is not None and not flushed.done()):
                return
            status = replicated.result()
            if status != PutMessageStatus.PUT_OK and response.code == ResponseCode.SUCCESS:
                response.code = _PUT_STATUS_CODE[status]
                response.remark = f"replication to the slave: {status.name}"
            out.set_result(response)

        replicated.add_done_callback(done)
        if flushed is not None:
            flushed.add_done_callback(done)
        return out


def recall_handle(topic: str, props: dict[str, str], due_ms: int, broker_name: str) -> str | None:
    """The recall handle of a single send the store held for the timer until ``due_ms`` (0: it did
    not); None for one without a message id or sent to a retry topic, as Apache's
    ``attachRecallHandle`` (a batch gets none either)."""
    message_id = props.get(Prop.UNIQ_KEY)
    if not due_ms or not message_id or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return None
    return RecallHandle.of(topic, broker_name, due_ms, message_id).encode()


async def published_first(
    publish: Callable[[], Awaitable[object]], result: HandlerResult
) -> RemotingCommand | None:
    """``result`` once the name servers have this broker's new topic (or a registration has failed:
    then the periodic one catches up, and the answer is not held longer than PUBLISH_TIMEOUT)."""
    try:
        await asyncio.wait_for(publish(), PUBLISH_TIMEOUT)
    except Exception as e:  # the message is stored: answer anyway
        log.warning("registering a new topic with the name servers before answering failed: %s", e)
    if inspect.isawaitable(result):
        return await result
    return result
