"""A topic a send creates, and the %RETRY% topic a first send-back creates, are routed by the name
server by the time the client hears back: asking the name server right after the answer finds them."""

from __future__ import annotations

import asyncio

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient

from . import wire


async def _route_code(client: RemotingClient, namesrv: str, topic: str) -> int:
    resp = await client.invoke(namesrv, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), 5)
    return resp.code


def test_auto_created_topics_are_routed_before_the_answer(namesrv, broker):
    async def go():
        client = RemotingClient()
        try:
            codes = []
            for i in range(5):
                topic = f"Fresh{i}"
                sent = await client.invoke(broker.addr, wire.send_v2(topic, b"x"), 5)
                assert sent.code == ResponseCode.SUCCESS, sent.remark
                codes.append(await _route_code(client, namesrv.addr, topic))
            back = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
                "offset": 0, "group": "fresh-group", "delayLevel": 0, "originMsgId": "X", "originTopic": "Fresh0"})
            answered = await client.invoke(broker.addr, back, 5)
            retry = await _route_code(client, namesrv.addr, "%RETRY%fresh-group")
            return codes, answered.code, retry
        finally:
            await client.close()

    codes, back_code, retry = asyncio.run(go())
    assert codes == [ResponseCode.SUCCESS] * 5
    assert back_code == ResponseCode.SUCCESS and retry == ResponseCode.SUCCESS
