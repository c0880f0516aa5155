"""A topic a send creates, and the %RETRY% topic a first send-back creates, are routed by the name
server by the time the client hears back: asking the name server right after the answer finds them."""

from __future__ import annotations

import asyncio

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient

from . import wire


async def _route_code(client: RemotingClient, namesrv: str, topic: str) -> int:
    resp = await client.invoke(
        namesrv, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), 5
    )
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
            back = RemotingCommand.request(
                RequestCode.CONSUMER_SEND_MSG_BACK,
                {
                    "offset": 0,
                    "group": "fresh-group",
                    "delayLevel": 0,
                    "originMsgId": "X",
                    "originTopic": "Fresh0",
                },
            )
            answered = await client.invoke(broker.addr, back, 5)
            retry = await _route_code(client, namesrv.addr, "%RETRY%fresh-group")
            return codes, answered.code, retry
        finally:
            await client.close()

    codes, back_code, retry = asyncio.run(go())
    assert codes == [ResponseCode.SUCCESS] * 5
    assert back_code == ResponseCode.SUCCESS and retry == ResponseCode.SUCCESS


def test_a_name_server_without_the_master_is_passed_over(tmp_path, namesrv, broker):
    """A name server that lost a group's master (it was cut off, or stopped a while, when the master
    changed) answers a route with only a slave: the client asks the next name server instead of
    failing with "no master"."""
    from pyrocketmq.client import Message, SyncProducer, SyncPullConsumer

    from .procs import start_namesrv
    from .test_namesrv import register_cmd

    stale = start_namesrv(tmp_path / "stale")
    try:
        with SyncProducer("P_stale", namesrv.addr) as producer:
            producer.send(Message("Stale1", b"x"))
        async def with_a_slave_only_on_the_stale_one() -> list[bytes]:
            slave = RemotingClient()  # registered while its connection lasts
            try:
                resp = await slave.invoke(stale.addr, register_cmd("127.0.0.2:10911", 1, "Stale1"), 5)
                assert resp.code == ResponseCode.SUCCESS
                # (the blocking consumer runs on its own loop thread)
                with SyncPullConsumer("C_stale", f"{stale.addr};{namesrv.addr}") as consumer:
                    consumer.assign(consumer.fetch_queues("Stale1"))
                    consumer.seek_to_begin()
                    got: list[bytes] = []
                    for _ in range(10):
                        got += [m.body for m in consumer.poll(timeout=1)]
                        if got:
                            break
                    return got
            finally:
                await slave.close()

        assert b"x" in asyncio.run(with_a_slave_only_on_the_stale_one())
    finally:
        stale.stop()
