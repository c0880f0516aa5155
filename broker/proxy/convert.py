"""Pure translation between RocketMQ 5's protobuf messages and the 4.x model the broker stores.

A 5.x message maps onto 4.x properties the way RocketMQ 5's own proxy does it, so 4.x and 5.x
clients read each other's messages: the tag is ``TAGS``, keys are ``KEYS`` (space separated), the
client's message id is ``UNIQ_KEY``, a FIFO message group is ``__SHARDINGKEY``, a delivery time is
``TIMER_DELIVER_MS``, a transactional message carries ``TRAN_MSG``/``PGROUP`` and the prepared sys
flag. User properties are copied as they are (a key that names a system property is refused).
"""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from google.protobuf.timestamp_pb2 import Timestamp

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import KEY_SEPARATOR, MessageExt, Prop, SysFlag, encode_properties
from pyrocketmq.remoting.names import AUTO_CREATE_TOPIC, PERM_READ, PERM_WRITE, TRANSACTION_GROUP_PREFIX

from .pb import definition_pb2 as pb

MAX_KEY_LENGTH = 128
"""Longest message key, tag or group name the 5.x clients may send (RocketMQ 5's checks)."""

RESERVED_PROPERTIES = frozenset({
    Prop.KEYS, Prop.TAGS, Prop.WAIT, Prop.DELAY, Prop.RETRY_TOPIC, Prop.REAL_TOPIC, Prop.REAL_QID,
    Prop.TRAN_MSG, Prop.PGROUP, Prop.MIN_OFFSET, Prop.MAX_OFFSET, Prop.UNIQ_KEY, Prop.RECONSUME_TIME,
    Prop.MAX_RECONSUME_TIMES, Prop.TRAN_PREPARED_QUEUE_OFFSET, Prop.TRANSACTION_CHECK_TIMES, Prop.CLUSTER,
    Prop.SHARDING_KEY, Prop.TIMER_DELIVER_MS, Prop.TIMER_DELAY_SEC, Prop.TIMER_DELAY_MS, Prop.TIMER_OUT_MS,
    Prop.START_DELIVER_TIME, Prop.MSG_REGION, Prop.TRACE_ON,
})
"""4.x system property names a 5.x user property may not take (the broker's own meaning wins)."""



class Refused(ValueError):
    """A message the 5.x API refuses, with the status code to answer."""

    def __init__(self, code: pb.Code, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One 5.x message as a 4.x send: the header fields and the body."""

    topic: str
    queue_id: int
    properties: dict[str, str]
    sys_flag: int
    born_timestamp: int
    body: bytes

    def header(self, producer_group: str) -> dict[str, str]:
        """SEND_MESSAGE's header (long field names)."""
        return {
            "producerGroup": producer_group,
            "topic": self.topic,
            "defaultTopic": AUTO_CREATE_TOPIC,
            "defaultTopicQueueNums": "4",
            "queueId": str(self.queue_id),
            "sysFlag": str(self.sys_flag),
            "bornTimestamp": str(self.born_timestamp),
            "flag": "0",
            "properties": encode_properties(self.properties).decode(),
            "reconsumeTimes": "0",
            "unitMode": "false",
            "batch": "false",
        }


def transaction_group(topic: str) -> str:
    return TRANSACTION_GROUP_PREFIX + topic


def status(code: pb.Code, message: str = "OK") -> pb.Status:
    return pb.Status(code=code, message=message)


MS_IN_SECONDS = 100_000_000_000
"""A Timestamp whose ``seconds`` is past this (the year 5138) holds epoch milliseconds instead: the
official Python client 5.1.2 writes a message's delivery time that way."""


def timestamp_ms(ts: Timestamp) -> int:
    """Epoch milliseconds of a protobuf Timestamp (see :data:`MS_IN_SECONDS`)."""
    if ts.seconds > MS_IN_SECONDS:
        return int(ts.seconds)
    return int(ts.seconds) * 1000 + int(ts.nanos) // 1_000_000


def outgoing(msg: pb.Message, queue_id: int, now_ms: int) -> Outgoing:
    """The 4.x form of a message a 5.x producer sends; :class:`Refused` when it breaks a rule."""
    sp = msg.system_properties
    topic = msg.topic.name
    if not topic:
        raise Refused(pb.ILLEGAL_TOPIC, "the message names no topic")
    if not sp.message_id:
        raise Refused(pb.ILLEGAL_MESSAGE_ID, "the message has no message_id")
    props: dict[str, str] = {}
    for key, value in msg.user_properties.items():
        if (
            key in RESERVED_PROPERTIES
            or not key
            or "\x01" in key
            or "\x02" in key
            or "\x01" in value
            or "\x02" in value
        ):
            raise Refused(
                pb.ILLEGAL_MESSAGE_PROPERTY_KEY, f"user property {key!r} is reserved or holds a separator"
            )
        props[key] = value
    if sp.HasField("tag"):
        if not sp.tag or "|" in sp.tag or len(sp.tag) > MAX_KEY_LENGTH or sp.tag.strip() != sp.tag:
            raise Refused(
                pb.ILLEGAL_MESSAGE_TAG, f"tag {sp.tag!r} is empty, too long, or holds '|' or blanks"
            )
        props[Prop.TAGS] = sp.tag
    if sp.keys:
        for key in sp.keys:
            if not key or KEY_SEPARATOR in key or len(key) > MAX_KEY_LENGTH:
                raise Refused(pb.ILLEGAL_MESSAGE_KEY, f"key {key!r} is empty, too long, or holds a blank")
        props[Prop.KEYS] = KEY_SEPARATOR.join(sp.keys)
    props[Prop.UNIQ_KEY] = sp.message_id
    sys_flag = 0
    kind = sp.message_type
    if sp.HasField("message_group"):
        if kind != pb.FIFO:
            raise Refused(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "only a FIFO message has a message group")
        if not sp.message_group or len(sp.message_group) > MAX_KEY_LENGTH:
            raise Refused(pb.ILLEGAL_MESSAGE_GROUP, "the message group is empty or too long")
        props[Prop.SHARDING_KEY] = sp.message_group
    elif kind == pb.FIFO:
        raise Refused(pb.ILLEGAL_MESSAGE_GROUP, "a FIFO message needs a message group")
    if sp.HasField("delivery_timestamp"):
        if kind != pb.DELAY:
            raise Refused(
                pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "only a DELAY message has a delivery timestamp"
            )
        props[Prop.TIMER_DELIVER_MS] = str(timestamp_ms(sp.delivery_timestamp))
    elif kind == pb.DELAY:
        raise Refused(pb.ILLEGAL_DELIVERY_TIME, "a DELAY message needs a delivery timestamp")
    if kind == pb.TRANSACTION:
        props[Prop.TRAN_MSG] = "true"
        props[Prop.PGROUP] = transaction_group(topic)
        if sp.HasField("orphaned_transaction_recovery_duration"):
            seconds = sp.orphaned_transaction_recovery_duration.seconds
            if seconds > 0:
                props[Prop.CHECK_IMMUNITY_TIME_IN_SECONDS] = str(seconds)
        sys_flag |= SysFlag.TRANSACTION_PREPARED
    born = timestamp_ms(sp.born_timestamp) if sp.HasField("born_timestamp") else now_ms
    return Outgoing(topic=topic, queue_id=queue_id, properties=props, sys_flag=sys_flag,
                    born_timestamp=born or now_ms, body=bytes(msg.body))


def incoming(msg: MessageExt, *, topic: str | None = None, receipt_handle: str | None = None,
             delivery_attempt: int | None = None, invisible_ms: int | None = None) -> pb.Message:
    """A stored message as a 5.x client reads it (``topic`` overrides the stored one, as for a
    half message checked back under its real topic)."""
    props = msg.properties
    out = pb.Message()
    out.topic.name = topic or msg.topic
    sp = out.system_properties
    for key, value in props.items():
        if key not in RESERVED_PROPERTIES and not key.startswith("__") and key not in _HIDDEN:
            out.user_properties[key] = value
    tag = props.get(Prop.TAGS)
    if tag is not None:
        sp.tag = tag
    sp.keys.extend(msg.keys)
    sp.message_id = msg.msg_id
    body = msg.body
    sp.body_digest.type = pb.MD5
    sp.body_digest.checksum = hashlib.md5(body).hexdigest().upper()
    sp.body_encoding = pb.IDENTITY
    sp.message_type = message_type_of(props, msg.sys_flag)
    sp.born_timestamp.FromMilliseconds(msg.born_timestamp)
    sp.born_host = msg.born_host[0]
    sp.store_timestamp.FromMilliseconds(msg.store_timestamp)
    sp.store_host = f"{msg.store_host[0]}:{msg.store_host[1]}"
    deliver = props.get(Prop.TIMER_OUT_MS) or props.get(Prop.TIMER_DELIVER_MS)
    if deliver and deliver.isdigit():
        sp.delivery_timestamp.FromMilliseconds(int(deliver))
    group = props.get(Prop.SHARDING_KEY)
    if group:
        sp.message_group = group
    sp.queue_id = msg.queue_id
    sp.queue_offset = msg.queue_offset
    if receipt_handle is not None:
        sp.receipt_handle = receipt_handle
    if delivery_attempt is not None:
        sp.delivery_attempt = delivery_attempt
    if invisible_ms is not None:
        sp.invisible_duration.FromMilliseconds(invisible_ms)
    out.body = body
    return out


_HIDDEN = frozenset({Prop.CHECK_IMMUNITY_TIME_IN_SECONDS, Prop.TIMER_DEQUEUE_MS, Prop.TIMER_ENQUEUE_MS,
                     Prop.TIMER_ROLL_TIMES, Prop.MSG_TYPE, Prop.CONSUME_START_TIME, Prop.ORIGIN_MESSAGE_ID})


def message_type_of(props: Mapping[str, str], sys_flag: int) -> pb.MessageType:
    if props.get(Prop.TRAN_MSG) == "true" or sys_flag & SysFlag.TRANSACTION_MASK:
        return pb.TRANSACTION
    if props.get(Prop.SHARDING_KEY):
        return pb.FIFO
    if any(k in props for k in (Prop.TIMER_DELIVER_MS, Prop.TIMER_DELAY_SEC, Prop.TIMER_DELAY_MS,
                                Prop.START_DELIVER_TIME, Prop.DELAY, Prop.TIMER_OUT_MS)):
        return pb.DELAY
    return pb.NORMAL


ALL_TYPES: tuple[pb.MessageType, ...] = (pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION)
_TOPIC_TYPES = {"NORMAL": pb.NORMAL, "FIFO": pb.FIFO, "DELAY": pb.DELAY, "TRANSACTION": pb.TRANSACTION}


def accepted_types(topic_type: str | None) -> tuple[pb.MessageType, ...]:
    """What a topic takes: its ``message.type`` (a typed topic), every type otherwise (a 4.x topic
    has no type, and mixing is what 4.x producers do)."""
    if topic_type and topic_type.upper() in _TOPIC_TYPES:
        return (_TOPIC_TYPES[topic_type.upper()],)
    return ALL_TYPES


def permission(perm: int) -> pb.Permission:
    readable, writable = bool(perm & PERM_READ), bool(perm & PERM_WRITE)
    if readable and writable:
        return pb.READ_WRITE
    return pb.READ if readable else pb.WRITE if writable else pb.NONE


def endpoints(host: str, port: int) -> pb.Endpoints:
    """``host:port`` as 5.x endpoints (an IP literal is IPv4/IPv6, anything else a domain name)."""
    scheme = pb.DOMAIN_NAME
    for family, kind in ((socket.AF_INET, pb.IPv4), (socket.AF_INET6, pb.IPv6)):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        scheme = kind
        break
    return pb.Endpoints(scheme=scheme, addresses=[pb.Address(host=host, port=port)])


@dataclass(frozen=True, slots=True)
class QueueSpan:
    """One broker's queues of a topic: what the route of the name servers says."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    host: str
    port: int


def message_queues(topic: str, spans: Iterable[QueueSpan],
                   types: tuple[pb.MessageType, ...]) -> list[pb.MessageQueue]:
    """The route a 5.x client sees: per broker, queues ``0..max(r, w)-1`` with the permission each
    has (a queue past the read count is write-only, past the write count read-only), in a stable
    order (FIFO producers pick a queue by hashing the group over this list)."""
    out: list[pb.MessageQueue] = []
    for span in sorted(spans, key=lambda s: s.broker_name):
        broker = pb.Broker(name=span.broker_name, id=0, endpoints=endpoints(span.host, span.port))
        for qid in range(max(span.read_queue_nums, span.write_queue_nums)):
            perm = span.perm
            if qid >= span.read_queue_nums:
                perm &= ~PERM_READ
            if qid >= span.write_queue_nums:
                perm &= ~PERM_WRITE
            out.append(pb.MessageQueue(topic=pb.Resource(name=topic), id=qid, permission=permission(perm),
                                       broker=broker, accept_message_types=types))
    return out


_REMOTING_TO_CODE: dict[int, pb.Code] = {
    ResponseCode.SUCCESS: pb.OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: pb.MASTER_PERSISTENCE_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: pb.SLAVE_PERSISTENCE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: pb.HA_NOT_AVAILABLE,
    ResponseCode.TOPIC_NOT_EXIST: pb.TOPIC_NOT_FOUND,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: pb.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.MESSAGE_ILLEGAL: pb.BAD_REQUEST,
    ResponseCode.NO_PERMISSION: pb.FORBIDDEN,
    ResponseCode.SYSTEM_BUSY: pb.TOO_MANY_REQUESTS,
    ResponseCode.NO_MESSAGE: pb.MESSAGE_NOT_FOUND,
}


def code_of(remoting_code: int, remark: str | None = None) -> pb.Code:
    """The 5.x status code of a 4.x answer (a type mismatch has its own code)."""
    if remoting_code == ResponseCode.MESSAGE_ILLEGAL and remark and "messages, not" in remark:
        return pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    if remoting_code == ResponseCode.MESSAGE_ILLEGAL and remark and "body size" in remark:
        return pb.MESSAGE_BODY_TOO_LARGE
    return _REMOTING_TO_CODE.get(remoting_code, pb.INTERNAL_SERVER_ERROR)


def settings_reply(client: pb.Settings, *, max_body_size: int) -> pb.Settings:
    """What the broker answers to a client's Settings: the client's own, with the server's limits
    (a producer's ``max_body_size``, message type validation), a retry policy when the client sent
    none, and client metrics off (there is no collector to send them to)."""
    out = pb.Settings()
    out.CopyFrom(client)
    if out.HasField("publishing"):
        out.publishing.max_body_size = max_body_size
        out.publishing.validate_message_type = True
    policy = out.backoff_policy
    if not policy.HasField("exponential_backoff") and not policy.HasField("customized_backoff"):
        policy.exponential_backoff.initial.FromMilliseconds(10)
        policy.exponential_backoff.max.FromMilliseconds(1000)
        policy.exponential_backoff.multiplier = 2.0
    if policy.max_attempts <= 0:
        policy.max_attempts = 3
    out.metric.Clear()
    out.metric.on = False
    return out


RECEIVE_BATCH_SIZE = 32
LONG_POLLING_MS = 20_000


def consumer_settings(out: pb.Settings, *, fifo: bool, max_attempts: int, retry_delays_ms: list[int]) -> None:
    """Fill a consumer's Settings reply: the group's FIFO flag, batch size, long polling, and its
    retry policy (RocketMQ's retry delays, the last repeated, ``max_attempts`` deliveries in all)."""
    sub = out.subscription
    sub.fifo = fifo
    sub.receive_batch_size = RECEIVE_BATCH_SIZE
    if not sub.HasField("long_polling_timeout") or sub.long_polling_timeout.ToMilliseconds() <= 0:
        sub.long_polling_timeout.FromMilliseconds(LONG_POLLING_MS)
    policy = out.backoff_policy
    policy.Clear()
    policy.max_attempts = max_attempts
    # a customized backoff for FIFO groups too: the Python client knows no other kind for consumers
    delays = retry_delays_ms or [1000]
    for i in range(max(1, max_attempts - 1)):
        policy.customized_backoff.next.add().FromMilliseconds(delays[min(i, len(delays) - 1)])
