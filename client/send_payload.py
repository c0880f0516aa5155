"""What one send puts on the wire, and what its answer means: pure, no I/O.

A send's :class:`Payload` is built once and reused by every attempt (a retry sends the same
bytes and the same unique id):

- :func:`prepare_single` validates one message, gives it its unique id (``UNIQ_KEY``) unless it has
  one, and zlib-compresses (level 5) a body of at least ``compress_over`` bytes, flagging
  ``sysFlag = COMPRESSED | ZLIB`` (``0x301``, what the 4.9.7 Java producer sets);
- :func:`prepare_batch` turns messages of one topic into one SEND_BATCH_MESSAGE body
  (``encode_batch``, never compressed);
- :func:`build_send_header` gives SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE's short ``a..n`` header;
- :func:`send_result_from_response` reads the answer: 0/10/11/12 make a
  :class:`~.message.SendResult`, any other code its :class:`~.errors.MQBrokerError`.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from pyrocketmq.remoting.batch import encode_batch
from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import SendMessageRequestHeader
from pyrocketmq.remoting.message import SysFlag, UniqIdGenerator, encode_properties
from pyrocketmq.remoting.names import AUTO_CREATE_TOPIC, RETRY_GROUP_TOPIC_PREFIX

from .errors import MQBrokerError, MQClientError
from .message import Message, SendResult, SendStatus, same_topic
from .settings import ProducerSettings

_STATUS_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


@dataclass(slots=True, frozen=True)
class Payload:
    """What goes on the wire for one send, computed once and reused by every attempt."""

    topic: str
    body: bytes
    sys_flag: int
    properties: str
    flag: int
    batch: bool
    #: The unique id(s) of the message(s), comma-joined for a batch (SendResult.msg_id).
    unique_id: str
    #: For a message sent to ``%RETRY%<group>`` by a consumer (header ``j``/``l``).
    reconsume_times: int | None = None
    max_reconsume_times: int | None = None


def compress_body(body: bytes, settings: ProducerSettings) -> tuple[bytes, int]:
    """``(body, sysFlag bits)``: zlib at ``compress_level`` when ``len(body) >= compress_over``.

    >>> compress_body(b"x" * 10, ProducerSettings())
    (b'xxxxxxxxxx', 0)
    >>> hex(compress_body(b"x" * 4096, ProducerSettings())[1])
    '0x301'
    """
    if len(body) >= settings.compress_over > 0:
        return zlib.compress(body, settings.compress_level), SysFlag.COMPRESSED | SysFlag.COMPRESSION_ZLIB
    return bytes(body), 0


def prepare_single(msg: Message, settings: ProducerSettings, ids: UniqIdGenerator) -> Payload:
    """Validate one message, assign its unique id, compress its body, encode its properties."""
    msg.validate(settings.max_message_size)
    if not msg.unique_id:
        msg.unique_id = ids.next_id()
    body, sys_flag = compress_body(bytes(msg.body), settings)
    props = msg.wire_properties()
    return Payload(
        topic=msg.topic,
        body=body,
        sys_flag=sys_flag,
        properties=encode_properties(props).decode(),
        flag=msg.flag,
        batch=False,
        unique_id=msg.unique_id,
    )


def prepare_batch(msgs: Sequence[Message], settings: ProducerSettings, ids: UniqIdGenerator) -> Payload:
    """Validate a batch (one topic, no delay, no retry topic), assign ids, encode the batch body."""
    topic = same_topic(msgs)
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        raise MQClientError("batches cannot be sent to retry topics; send those messages one by one")
    items = []
    for m in msgs:
        m.validate(settings.max_message_size)
        if m.delay_level > 0:
            raise MQClientError(
                "batched messages cannot have a delay level; send delayed messages one by one"
            )
        if not m.unique_id:
            m.unique_id = ids.next_id()
        items.append((bytes(m.body), m.flag, m.wire_properties()))
    body = encode_batch(items)
    if len(body) > settings.max_message_size:
        raise MQClientError(
            f"the batch encodes to {len(body)} bytes; the limit is {settings.max_message_size}: split it"
        )
    wait = "true" if msgs[0].wait_store_msg_ok else "false"
    return Payload(
        topic=topic,
        body=body,
        sys_flag=0,
        properties=encode_properties({"WAIT": wait}).decode(),
        flag=0,
        batch=True,
        unique_id=",".join(m.unique_id or "" for m in msgs),
    )


def build_send_header(
    payload: Payload,
    *,
    group: str,
    queue: MessageQueue,
    born_timestamp: int,
    default_topic: str = AUTO_CREATE_TOPIC,
    default_topic_queue_nums: int = 4,
) -> dict[str, str]:
    """The SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE ext fields (short keys ``a``..``n``).

    >>> from pyrocketmq.remoting.body import MessageQueue
    >>> p = Payload("T", b"x", 0, "WAIT\\x01true\\x02", 0, False, "ID")
    >>> mq = MessageQueue(topic="T", broker_name="broker-a", queue_id=1)
    >>> h = build_send_header(p, group="pg", queue=mq, born_timestamp=1)
    >>> h["a"], h["b"], h["c"], h["d"], h["e"], h["m"], h["n"]
    ('pg', 'T', 'TBW102', '4', '1', 'false', 'broker-a')
    """
    header = SendMessageRequestHeader(
        producer_group=group,
        topic=payload.topic,
        default_topic=default_topic,
        default_topic_queue_nums=default_topic_queue_nums,
        queue_id=queue.queue_id,
        sys_flag=payload.sys_flag,
        born_timestamp=born_timestamp,
        flag=payload.flag,
        properties=payload.properties,
        reconsume_times=payload.reconsume_times or 0,
        unit_mode=False,
        batch=payload.batch,
        max_reconsume_times=payload.max_reconsume_times,
    )
    fields = header.to_ext_v2()
    fields["n"] = queue.broker_name  # 4.9.5+: the broker name the queue belongs to
    return fields


def send_result_from_response(
    resp: RemotingCommand, payload: Payload, broker_name: str, addr: str
) -> SendResult:
    """A :class:`SendResult` from a send's answer, or the :class:`MQBrokerError` it stands for."""
    status = _STATUS_BY_CODE.get(resp.code)
    if status is None:
        raise MQBrokerError.for_code(resp.code, resp.remark, addr)
    queue_id = resp.get_int("queueId", -1)
    return SendResult(
        status=status,
        msg_id=payload.unique_id,
        offset_msg_id=resp.get_str("msgId") or "",
        message_queue=MessageQueue(
            topic=payload.topic, broker_name=broker_name, queue_id=queue_id if queue_id is not None else -1
        ),
        queue_offset=resp.get_int("queueOffset", -1) or 0,
        transaction_id=resp.get_str("transactionId"),
        region_id=resp.get_str("MSG_REGION"),
    )
