"""Hostile and careless requests against real name-server and broker processes: each gets a clear
refusal or a closed connection, a well-behaved client is served throughout, nothing hostile is
stored, and after a restart the broker's topics, groups, offsets and messages are intact."""

from __future__ import annotations

import asyncio
import json
import socket
import struct

from pyrocketmq.remoting.body import ConsumerData, HeartbeatData, SubscriptionData
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient

from . import wire

GOOD_GROUP = "good-group"


def _req(code: int, body: bytes | None = None, **ext: object) -> RemotingCommand:
    return RemotingCommand.request(code, {k: str(v) for k, v in ext.items()}, body)


def _heartbeat(group: str, topic: str) -> RemotingCommand:
    data = HeartbeatData(client_id="c1", consumer_data_set=[
        ConsumerData(group_name=group, subscription_data_set=(SubscriptionData.build(topic, "*", 1),))])
    return RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.to_json())


HOSTILE = [
    (
        "queue id beyond an Integer",
        _req(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            consumerGroup=GOOD_GROUP,
            topic="Kept",
            queueId=2**31,
            commitOffset=1,
        ),
    ),
    (
        "negative offset",
        _req(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            consumerGroup=GOOD_GROUP,
            topic="Kept",
            queueId=0,
            commitOffset=-5,
        ),
    ),
    (
        "perm that is no permission",
        _req(
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            topic="Evil",
            defaultTopic="TBW102",
            readQueueNums=4,
            writeQueueNums=4,
            perm=2**40,
            topicFilterType="SINGLE_TAG",
        ),
    ),
    (
        "a path for a topic",
        _req(
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            topic="../../etc",
            defaultTopic="TBW102",
            readQueueNums=4,
            writeQueueNums=4,
            perm=6,
            topicFilterType="SINGLE_TAG",
        ),
    ),
    ("deleting a system topic", _req(RequestCode.DELETE_TOPIC_IN_BROKER, topic="RMQ_SYS_TRANS_HALF_TOPIC")),
    ("a path for a group", _heartbeat("../../g", "Kept")),
    (
        "a group with a huge retry count",
        _req(
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
            json.dumps({"groupName": "g2", "retryQueueNums": 2**40}).encode(),
        ),
    ),
    ("a body cut short", _req(RequestCode.LOCK_BATCH_MQ, b'{"consumerGroup":"g","mqSet":[')),
]


def test_hostile_requests_are_refused_and_nothing_survives_a_restart(tmp_path, namesrv):
    from .procs import start_broker

    broker = start_broker(tmp_path, namesrv.addr)

    def fresh(fn):  # one client per event loop
        async def run():
            client = RemotingClient()
            try:
                return await fn(client)
            finally:
                await client.close()
        return lambda: asyncio.run(run())

    @fresh
    async def setup(client: RemotingClient) -> None:
        assert (
            await client.invoke(broker.addr, wire.create_topic("Kept", 1), 5)
        ).code == ResponseCode.SUCCESS
        assert (
            await client.invoke(broker.addr, _heartbeat(GOOD_GROUP, "Kept"), 5)
        ).code == ResponseCode.SUCCESS
        for i in range(3):
            assert (await client.invoke(broker.addr, wire.send_v2("Kept", f"m{i}".encode()), 5)).code == 0
        commit = _req(RequestCode.UPDATE_CONSUMER_OFFSET, consumerGroup=GOOD_GROUP, topic="Kept", queueId=0,
                      commitOffset=2)
        assert (await client.invoke(broker.addr, commit, 5)).code == ResponseCode.SUCCESS

    @fresh
    async def attack(client: RemotingClient) -> dict[str, tuple[int, str]]:
        out = {}
        for label, cmd in HOSTILE:
            resp = await client.invoke(broker.addr, cmd, 5)
            out[label] = (resp.code, resp.remark or "")
            ping = await client.invoke(broker.addr, _req(RequestCode.GET_BROKER_RUNTIME_INFO), 5)
            assert ping.code == ResponseCode.SUCCESS, f"not served after {label}"
        for target in (broker.port, namesrv.port):  # malformed frames: that connection closed, no one else
            with socket.create_connection(("127.0.0.1", target), timeout=5) as s:
                s.sendall(struct.pack(">iI", 10, 0xFFFFFFFF) + b"xxxxxx")  # a header longer than its frame
                assert s.recv(10) == b""
        return out

    @fresh
    async def state(client: RemotingClient) -> tuple[int, int, int, int]:
        query = _req(RequestCode.QUERY_CONSUMER_OFFSET, consumerGroup=GOOD_GROUP, topic="Kept", queueId=0)
        offset = int((await client.invoke(broker.addr, query, 5)).ext_fields["offset"])
        top = int(
            (
                await client.invoke(broker.addr, _req(RequestCode.GET_MAX_OFFSET, topic="Kept", queueId=0), 5)
            ).ext_fields["offset"]
        )
        route = (
            await client.invoke(namesrv.addr, _req(RequestCode.GET_ROUTEINFO_BY_TOPIC, topic="Kept"), 5)
        ).code
        evil = (
            await client.invoke(namesrv.addr, _req(RequestCode.GET_ROUTEINFO_BY_TOPIC, topic="Evil"), 5)
        ).code
        return offset, top, route, evil

    try:
        setup()
        refusals = attack()
        assert broker.stop() == 0
        broker.start()
        for _ in range(50):
            after = state()
            if after[2] == ResponseCode.SUCCESS:
                break
    finally:
        broker.stop()
    assert all(code != ResponseCode.SUCCESS for code, _ in refusals.values()), refusals
    assert refusals["deleting a system topic"][0] == ResponseCode.NO_PERMISSION
    assert after == (2, 3, ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST)
    config = tmp_path / "broker-a" / "store" / "config"
    stored = " ".join(p.read_text() for p in config.glob("*.json"))
    assert "Evil" not in stored and "../" not in stored and "2199023255552" not in stored
    assert "RMQ_SYS_TRANS_HALF_TOPIC" in (config / "topics.json").read_text()
