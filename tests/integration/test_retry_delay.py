"""Retry, delay levels and the dead-letter queue on a real broker process (PROTOCOL.md §5).

The broker runs with short delay levels (1 s each, 4 s for the last); assertions are on what is
stored where, never on how fast it got there (the waits only bound the test).
"""

from __future__ import annotations

import asyncio
import time

import orjson
import pytest

from pyrocketmq.remoting.body import SubscriptionGroupConfig
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import MessageExt, decode_messages, decode_offset_msg_id
from pyrocketmq.remoting.remoting_client import RemotingClient

from .procs import start_broker
from .wire import create_topic, pull, send_v2

LEVELS = " ".join(["1s"] * 17 + ["4s"])
WAIT_S = 30.0


@pytest.fixture
def broker(tmp_path, namesrv):
    proc = start_broker(tmp_path, namesrv.addr, messageDelayLevel=LEVELS)
    yield proc
    proc.stop()


async def _read_all(
    client: RemotingClient, addr: str, topic: str, queue_id: int = 0, group: str = "reader"
) -> list[MessageExt]:
    resp = await client.invoke(addr, pull(topic, queue_id, 0, group=group), 5)
    if resp.code != ResponseCode.SUCCESS:
        return []
    return decode_messages(resp.body)


async def _wait_for(client, addr, topic, count, queue_id=0) -> list[MessageExt]:
    deadline = time.monotonic() + WAIT_S
    while True:
        msgs = await _read_all(client, addr, topic, queue_id)
        if len(msgs) >= count or time.monotonic() > deadline:
            return msgs
        await asyncio.sleep(0.1)


def _send_back(
    offset: int, group: str, delay_level: int = 0, max_times: int | None = None
) -> RemotingCommand:
    fields = {
        "offset": offset,
        "group": group,
        "delayLevel": delay_level,
        "originMsgId": "X",
        "unitMode": False,
    }
    if max_times is not None:
        fields["maxReconsumeTimes"] = max_times
    return RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, fields)


async def _max_offset(client, addr, topic, queue_id=0) -> int:
    resp = await client.invoke(
        addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id}), 5
    )
    return int(resp.ext_fields["offset"])


def test_send_back_goes_through_retry_twice_then_to_the_dlq(broker):
    group = "cg_retry"

    async def run():
        client = RemotingClient()
        addr = broker.addr
        config = SubscriptionGroupConfig(group_name=group, retry_max_times=2)
        r = await client.invoke(
            addr,
            RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.to_json()),
            5,
        )
        assert r.code == ResponseCode.SUCCESS, r
        assert (await client.invoke(addr, create_topic("RetryTopic", 1), 5)).code == 0
        sent = await client.invoke(
            addr, send_v2("RetryTopic", b"fail-me", tags="TagA", props={"KEYS": "k1", "UNIQ_KEY": "UNIQ1"}), 5
        )
        assert sent.code == ResponseCode.SUCCESS
        _, _, first_offset = decode_offset_msg_id(sent.ext_fields["msgId"])

        # 1st failure: %RETRY%group after delay level 3, reconsumeTimes 1
        r = await client.invoke(addr, _send_back(first_offset, group), 5)
        assert r.code == ResponseCode.SUCCESS, r
        [retry1] = await _wait_for(client, addr, f"%RETRY%{group}", 1)
        assert retry1.body == b"fail-me" and retry1.reconsume_times == 1
        p = retry1.properties
        assert p["RETRY_TOPIC"] == "RetryTopic" and p["ORIGIN_MESSAGE_ID"] == sent.ext_fields["msgId"]
        assert p["UNIQ_KEY"] == "UNIQ1" and p["TAGS"] == "TagA" and p["KEYS"] == "k1" and "DELAY" not in p
        assert retry1.store_host == ("127.0.0.1", broker.port)

        # 2nd failure, sent back from the retry topic: reconsumeTimes 2, origin kept
        r = await client.invoke(addr, _send_back(retry1.commitlog_offset, group), 5)
        assert r.code == ResponseCode.SUCCESS, r
        msgs = await _wait_for(client, addr, f"%RETRY%{group}", 2)
        assert [m.reconsume_times for m in msgs] == [1, 2]
        retry2 = msgs[1]
        assert retry2.properties["RETRY_TOPIC"] == "RetryTopic"
        assert retry2.properties["ORIGIN_MESSAGE_ID"] == sent.ext_fields["msgId"]

        # 3rd failure: reconsumeTimes 2 >= retryMaxTimes 2 → %DLQ%group, readable, no delay
        r = await client.invoke(addr, _send_back(retry2.commitlog_offset, group), 5)
        assert r.code == ResponseCode.SUCCESS, r
        [dead] = await _wait_for(client, addr, f"%DLQ%{group}", 1)
        assert dead.body == b"fail-me" and dead.reconsume_times == 3
        assert dead.properties["RETRY_TOPIC"] == "RetryTopic" and "DELAY" not in dead.properties
        assert len(await _read_all(client, addr, f"%RETRY%{group}")) == 2

        # the topics the broker created for the group
        topics = orjson.loads(
            (await client.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG), 5)).body
        )
        table = topics["topicConfigTable"]
        assert table[f"%RETRY%{group}"]["perm"] == 6 and table[f"%RETRY%{group}"]["readQueueNums"] == 1
        assert table[f"%DLQ%{group}"]["readQueueNums"] == 1
        await client.close()

    asyncio.run(run())


def test_header_max_reconsume_times_and_negative_level_go_straight_to_the_dlq(broker):
    async def run():
        client = RemotingClient()
        addr = broker.addr
        assert (await client.invoke(addr, create_topic("DlqTopic", 1), 5)).code == 0
        a = await client.invoke(addr, send_v2("DlqTopic", b"a"), 5)
        b = await client.invoke(addr, send_v2("DlqTopic", b"b"), 5)
        r = await client.invoke(
            addr, _send_back(decode_offset_msg_id(a.ext_fields["msgId"])[2], "cg_dlq", max_times=0), 5
        )
        assert r.code == ResponseCode.SUCCESS
        r = await client.invoke(
            addr, _send_back(decode_offset_msg_id(b.ext_fields["msgId"])[2], "cg_dlq", delay_level=-1), 5
        )
        assert r.code == ResponseCode.SUCCESS
        dead = await _wait_for(client, addr, "%DLQ%cg_dlq", 2)
        assert sorted(m.body for m in dead) == [b"a", b"b"]
        assert await _max_offset(client, addr, "%RETRY%cg_dlq") == 0
        # an offset that holds no message
        r = await client.invoke(addr, _send_back(10**12, "cg_dlq"), 5)
        assert r.code == ResponseCode.SYSTEM_ERROR and "look message by offset failed" in r.remark
        await client.close()

    asyncio.run(run())


def test_plain_send_to_retry_topic_at_max_reconsume_times_goes_to_the_dlq(broker):
    async def run():
        client = RemotingClient()
        addr = broker.addr
        # as the Java orderly consumer resends at max reconsume times: DELAY set, j = l
        cmd = send_v2("%RETRY%cg_plain", b"resent", queue_id=0, props={"DELAY": "3"})
        cmd.ext_fields["j"] = "16"
        cmd.ext_fields["l"] = "16"
        r = await client.invoke(addr, cmd, 5)
        assert r.code == ResponseCode.SUCCESS, r
        [dead] = await _read_all(client, addr, "%DLQ%cg_plain")  # at once: a dead letter is not delayed
        assert dead.body == b"resent" and dead.reconsume_times == 16 and "DELAY" not in dead.properties
        cmd = send_v2("%RETRY%cg_plain", b"retry", queue_id=0)
        cmd.ext_fields["j"] = "3"
        assert (await client.invoke(addr, cmd, 5)).code == ResponseCode.SUCCESS
        [retry] = await _wait_for(client, addr, "%RETRY%cg_plain", 1)
        assert retry.body == b"retry" and retry.reconsume_times == 3
        await client.close()

    asyncio.run(run())


def test_a_delayed_message_is_not_consumable_before_its_time_and_is_after(broker):
    async def run():
        client = RemotingClient()
        addr = broker.addr
        assert (await client.invoke(addr, create_topic("DelayTopic", 2), 5)).code == 0
        sent = await client.invoke(
            addr, send_v2("DelayTopic", b"later", queue_id=1, tags="T1", props={"DELAY": "18"}), 5
        )
        assert sent.code == ResponseCode.SUCCESS
        # held in the schedule queue of level 18, not in the topic (4 s from now)
        assert await _max_offset(client, addr, "DelayTopic", 1) == 0
        assert await _max_offset(client, addr, "SCHEDULE_TOPIC_XXXX", 17) == 1
        resp = await client.invoke(addr, pull("DelayTopic", 1, 0), 5)
        assert resp.code == ResponseCode.PULL_NOT_FOUND
        [m] = await _wait_for(client, addr, "DelayTopic", 1, queue_id=1)
        assert m.body == b"later" and m.topic == "DelayTopic" and m.queue_id == 1
        assert m.tags == "T1" and m.reconsume_times == 0 and "DELAY" not in m.properties
        assert m.properties["REAL_TOPIC"] == "DelayTopic"
        assert m.born_host[0] == "127.0.0.1" and m.store_host == ("127.0.0.1", broker.port)
        info = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 5)
        table = orjson.loads(info.body)["table"]
        assert table["scheduleMessageOffset_18"] == "1,1" and table["scheduleMessageOffset_1"] == "0,0"
        await client.close()

    asyncio.run(run())


def test_delivery_progress_survives_a_restart(tmp_path, namesrv):
    proc = start_broker(tmp_path, namesrv.addr, messageDelayLevel=LEVELS, flushDelayOffsetInterval=200)
    try:
        async def first():
            client = RemotingClient()
            assert (await client.invoke(proc.addr, create_topic("RestartDelay", 1), 5)).code == 0
            await client.invoke(proc.addr, send_v2("RestartDelay", b"once", props={"DELAY": "1"}), 5)
            msgs = await _wait_for(client, proc.addr, "RestartDelay", 1)
            assert [m.body for m in msgs] == [b"once"]
            await client.close()

        asyncio.run(first())
    finally:
        proc.stop()
    doc = orjson.loads((tmp_path / "broker-a" / "store" / "config" / "delayOffset.json").read_bytes())
    assert doc["offsetTable"]["1"] == 1
    proc = start_broker(tmp_path, namesrv.addr, port=proc.port, messageDelayLevel=LEVELS)
    try:
        async def second():
            client = RemotingClient()
            await asyncio.sleep(1.5)  # a level-1 turn or more: nothing may be delivered twice
            assert [m.body for m in await _read_all(client, proc.addr, "RestartDelay")] == [b"once"]
            await client.close()

        asyncio.run(second())
    finally:
        proc.stop()
