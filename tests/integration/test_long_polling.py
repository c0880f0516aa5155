"""A pull held on an empty queue is answered with the message that lands while it waits."""

from __future__ import annotations

import asyncio
import time

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient

from .wire import create_topic, pull, send_v2


def test_held_pull_answered_by_arriving_message(broker):
    async def run():
        client = RemotingClient()
        assert (await client.invoke(broker.addr, create_topic("HoldTopic", 2), 5)).code == 0
        started = time.monotonic()
        held = asyncio.ensure_future(
            client.invoke(broker.addr, pull("HoldTopic", 0, 0, suspend_ms=10_000), 30)
        )
        await asyncio.sleep(0.5)
        assert not held.done(), "the pull was answered before any message existed"
        sent = await client.invoke(broker.addr, send_v2("HoldTopic", b"wake-up", queue_id=0), 5)
        assert sent.code == ResponseCode.SUCCESS
        resp = await held
        waited = time.monotonic() - started
        assert resp.code == ResponseCode.SUCCESS, resp
        assert [m.body for m in decode_messages(resp.body)] == [b"wake-up"]
        assert int(resp.ext_fields["nextBeginOffset"]) == 1
        # Answered by the message, not by the 10 s suspend timeout running out.
        assert waited < 10, waited
        await client.close()

    asyncio.run(run())


def test_held_pull_times_out_with_no_new_message(broker):
    async def run():
        client = RemotingClient()
        assert (await client.invoke(broker.addr, create_topic("QuietTopic", 1), 5)).code == 0
        resp = await client.invoke(broker.addr, pull("QuietTopic", 0, 0, suspend_ms=300), 10)
        assert resp.code == ResponseCode.PULL_NOT_FOUND
        assert resp.ext_fields["nextBeginOffset"] == "0"
        assert set(resp.ext_fields) >= {"suggestWhichBrokerId", "minOffset", "maxOffset"}
        await client.close()

    asyncio.run(run())


def test_held_pull_ignores_other_tags(broker):
    async def run():
        client = RemotingClient()
        assert (await client.invoke(broker.addr, create_topic("TagHold", 1), 5)).code == 0
        held = asyncio.ensure_future(
            client.invoke(broker.addr, pull("TagHold", 0, 0, suspend_ms=10_000, sub="TagA"), 30)
        )
        await asyncio.sleep(0.3)
        await client.invoke(broker.addr, send_v2("TagHold", b"b", tags="TagB"), 5)
        await asyncio.sleep(0.3)
        assert not held.done(), "a message with another tag woke the pull"
        await client.invoke(broker.addr, send_v2("TagHold", b"a", tags="TagA"), 5)
        resp = await held
        assert resp.code == ResponseCode.SUCCESS
        assert [m.body for m in decode_messages(resp.body)] == [b"a"]
        await client.close()

    asyncio.run(run())
