"""Finding stored messages for the admin API: by key or unique key through the brokers' index
(QUERY_MESSAGE), by queue offset (one pull), and the messages of a queue between two offsets
(mqadmin ``printMsg``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from pyrocketmq.remoting.body import MessageQueue, TopicRouteData
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import PullMessageRequestHeader
from pyrocketmq.remoting.message import (
    MessageDecodeError,
    MessageExt,
    Prop,
    SysFlag,
    decode_messages,
    uncompressed_body,
)

from .errors import MQBrokerError, MQClientError
from .request_errors import check_response
from .route import MASTER_ID

if TYPE_CHECKING:
    from .instance import ClientInstance

TOOLS_GROUP = "TOOLS_CONSUMER"
"""The group mqadmin's lookups pull with (it commits nothing)."""
_SUBSCRIPTION = 0x4


def _masters(route: TopicRouteData) -> list[str]:
    out = []
    for bd in route.broker_datas:
        addr = {int(k): v for k, v in (bd.broker_addrs or {}).items()}.get(MASTER_ID)
        if addr is not None:
            out.append(addr)
    return out


async def by_key(
    inst: ClientInstance,
    route: TopicRouteData,
    topic: str,
    key: str,
    begin_ms: int,
    end_ms: int,
    max_num: int,
    *,
    unique: bool = False,
) -> list[MessageExt]:
    """QUERY_MESSAGE to every master of ``topic``; the index's hash hits checked against the keys."""
    if not key:
        raise MQClientError("the key to look for is empty")
    fields: dict[str, object] = {"topic": topic, "key": key, "maxNum": max_num, "beginTimestamp": begin_ms,
                                 "endTimestamp": end_ms}
    if unique:
        fields["_UNIQUE_KEY_QUERY"] = "true"
    found: list[MessageExt] = []
    for addr in _masters(route):
        resp = await inst.invoke(addr, RemotingCommand.request(RequestCode.QUERY_MESSAGE, dict(fields)), 15.0)
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            continue
        check_response(resp, addr)
        for m in decode(resp.payload, addr):
            if (m.properties.get(Prop.UNIQ_KEY) == key) if unique else (key in m.keys):
                found.append(m)
    return sorted(found, key=lambda m: (m.store_timestamp, m.queue_id, m.queue_offset))[:max_num]


async def _pull(
    inst: ClientInstance, mq: MessageQueue, offset: int, max_nums: int
) -> tuple[list[MessageExt], int, int]:
    """(messages, next offset, response code) of one pull from the master of ``mq``."""
    addr = await inst.master_addr_of(mq.topic, mq.broker_name)
    fields = PullMessageRequestHeader(consumer_group=TOOLS_GROUP, topic=mq.topic, queue_id=mq.queue_id,
                                      queue_offset=offset, max_msg_nums=max_nums, sys_flag=_SUBSCRIPTION,
                                      commit_offset=0, suspend_timeout_millis=0, subscription="*",
                                      sub_version=0, expression_type="TAG").to_ext()  # fmt: skip
    resp = await inst.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, fields))
    next_offset = int(resp.ext_fields.get("nextBeginOffset", offset) or offset)
    if resp.code != ResponseCode.SUCCESS:
        return [], next_offset, resp.code
    return decode(resp.payload, addr), next_offset, resp.code


async def message_at(inst: ClientInstance, mq: MessageQueue, offset: int) -> MessageExt:
    msgs, _, code = await _pull(inst, mq, offset, 1)
    if not msgs or msgs[0].queue_offset != offset:
        raise MQBrokerError.for_code(ResponseCode.QUERY_NOT_FOUND,
                                     f"no message at offset {offset} of {mq.topic} {mq.broker_name} "
                                     f"queue {mq.queue_id} (pull answered {code})", None)  # fmt: skip
    return msgs[0]


async def between(
    inst: ClientInstance, mq: MessageQueue, begin: int, end: int, batch: int = 32
) -> AsyncIterator[MessageExt]:
    """The messages of ``mq`` from logical offset ``begin`` up to (not including) ``end``."""
    offset = begin
    while offset < end:
        msgs, next_offset, code = await _pull(inst, mq, offset, min(batch, end - offset))
        for m in msgs:
            if m.queue_offset < end:
                yield m
        if next_offset <= offset or code not in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY):
            return
        offset = next_offset


def decode(body: bytes | bytearray | memoryview, addr: str) -> list[MessageExt]:
    try:
        msgs = decode_messages(body)
    except MessageDecodeError as e:
        raise MQBrokerError(ResponseCode.SYSTEM_ERROR, f"undecodable message body: {e}", addr) from None
    for m in msgs:
        if m.sys_flag & SysFlag.COMPRESSED:
            m.body = uncompressed_body(m)
            m.sys_flag &= ~(SysFlag.COMPRESSED | SysFlag.COMPRESSION_MASK)
    return msgs
