"""Raw remoting calls for integration tests: exactly what a Java client puts on the wire."""

from __future__ import annotations

import asyncio
import time

from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import encode_properties
from pyrocketmq.remoting.remoting_client import RemotingClient


def send_v2(
    topic: str, body: bytes, *, queue_id: int = 0, tags: str | None = None, props: dict | None = None
) -> RemotingCommand:
    properties = dict(props or {})
    if tags:
        properties["TAGS"] = tags
    properties.setdefault("WAIT", "true")
    ext = {
        "a": "test-producer",
        "b": topic,
        "c": "TBW102",
        "d": 4,
        "e": queue_id,
        "f": 0,
        "g": int(time.time() * 1000),
        "h": 0,
        "i": encode_properties(properties).decode(),
        "j": 0,
        "k": False,
        "m": False,
    }
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)


def pull(
    topic: str,
    queue_id: int,
    offset: int,
    *,
    group: str = "test-group",
    suspend_ms: int = 0,
    max_nums: int = 32,
    sub: str = "*",
    expression_type: str = "TAG",
) -> RemotingCommand:
    sys_flag = 0x4 | (0x2 if suspend_ms else 0)
    ext = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": queue_id,
        "queueOffset": offset,
        "maxMsgNums": max_nums,
        "sysFlag": sys_flag,
        "commitOffset": 0,
        "suspendTimeoutMillis": suspend_ms,
        "subscription": sub,
        "subVersion": 0,
        "expressionType": expression_type,
    }
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, ext)


def create_topic(topic: str, queues: int = 4) -> RemotingCommand:
    return RemotingCommand.request(
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        {
            "topic": topic,
            "defaultTopic": "TBW102",
            "readQueueNums": queues,
            "writeQueueNums": queues,
            "perm": 6,
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": 0,
            "order": False,
        },
    )


async def max_phy_offset(client: RemotingClient, addr: str) -> int:
    resp = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 5)
    import orjson

    return int(orjson.loads(resp.body)["table"]["commitLogMaxOffset"])


def invoke_once(addr: str, cmd: RemotingCommand, timeout: float = 10) -> RemotingCommand:
    """``cmd`` sent to ``addr`` on a connection of its own, from synchronous test code."""
    async def go() -> RemotingCommand:
        client = RemotingClient()
        try:
            return await client.invoke(addr, cmd, timeout)
        finally:
            await client.close()

    return asyncio.run(go())
