"""QUERY_MESSAGE (12) against a real broker: by KEYS, by UNIQ_KEY (``_UNIQUE_KEY_QUERY``), time
ranges, QUERY_NOT_FOUND, and the index surviving a kill -9."""

from __future__ import annotations

import asyncio

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient

from .procs import start_broker
from .wire import create_topic, send_v2

FOREVER = 2**63 - 1
HEADER = {"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"}


def uniq_key(i: int) -> str:
    return f"7F00000100001234000000{i:06X}0000"  # the shape of a client's UNIQ_KEY (32 hex chars)


def query(
    topic: str, key: str, max_num: int = 32, begin: int = 0, end: int = FOREVER, uniq: bool = False
) -> RemotingCommand:
    cmd = RemotingCommand.request(
        RequestCode.QUERY_MESSAGE,
        {"topic": topic, "key": key, "maxNum": max_num, "beginTimestamp": begin, "endTimestamp": end},
    )
    if uniq:  # what MQAdminImpl adds for queryMessageByUniqKey / viewMessage
        cmd.ext_fields["_UNIQUE_KEY_QUERY"] = "true"
    return cmd


async def _send(client: RemotingClient, addr: str, topic: str, body: bytes, **props: str) -> RemotingCommand:
    resp = await client.invoke(addr, send_v2(topic, body, props=props), 5)
    assert resp.code == ResponseCode.SUCCESS, resp
    return resp


def test_query_by_key_and_by_uniq_key(broker):
    async def run():
        client = RemotingClient()
        addr = broker.addr
        assert (await client.invoke(addr, create_topic("QueryTopic", 2), 5)).code == 0
        sent = []
        for i in range(5):
            props = {"KEYS": f"order-{i} shared", "UNIQ_KEY": uniq_key(i)}
            sent.append(await _send(client, addr, "QueryTopic", f"body-{i}".encode(), **props))
        await _send(client, addr, "OtherTopic", b"other", KEYS="shared")

        resp = await client.invoke(addr, query("QueryTopic", "shared"), 5)
        assert resp.code == ResponseCode.SUCCESS, resp
        assert set(resp.ext_fields) >= HEADER
        msgs = decode_messages(resp.body)
        assert [m.body for m in msgs] == [f"body-{i}".encode() for i in range(5)]
        assert all(m.topic == "QueryTopic" for m in msgs)
        assert [m.offset_msg_id for m in msgs] == [r.ext_fields["msgId"] for r in sent]
        # The index's last update is the newest record indexed: the OtherTopic one.
        other = int(resp.ext_fields["indexLastUpdatePhyoffset"])
        assert other > msgs[-1].commitlog_offset and int(resp.ext_fields["indexLastUpdateTimestamp"]) > 0

        resp = await client.invoke(addr, query("QueryTopic", "order-3"), 5)
        assert [m.body for m in decode_messages(resp.body)] == [b"body-3"]

        # maxNum: the newest ones; with _UNIQUE_KEY_QUERY the broker uses defaultQueryMaxNum (32).
        resp = await client.invoke(addr, query("QueryTopic", "shared", max_num=2), 5)
        assert [m.body for m in decode_messages(resp.body)] == [b"body-3", b"body-4"]
        resp = await client.invoke(addr, query("QueryTopic", "shared", max_num=1, uniq=True), 5)
        assert len(decode_messages(resp.body)) == 5

        resp = await client.invoke(addr, query("QueryTopic", uniq_key(2), uniq=True), 5)
        (m,) = decode_messages(resp.body)
        assert m.body == b"body-2" and m.msg_id == uniq_key(2)

        # Time range: after the last store time, nothing.
        last_ts = max(m.store_timestamp for m in msgs)
        resp = await client.invoke(addr, query("QueryTopic", "shared", begin=last_ts + 1), 5)
        assert resp.code == ResponseCode.QUERY_NOT_FOUND
        resp = await client.invoke(
            addr, query("QueryTopic", "shared", begin=msgs[1].store_timestamp, end=msgs[1].store_timestamp), 5
        )
        assert msgs[1].body in [x.body for x in decode_messages(resp.body)]
        await client.close()

    asyncio.run(run())


def test_not_found_and_bad_header(broker):
    async def run():
        client = RemotingClient()
        resp = await client.invoke(broker.addr, query("NoSuchTopic", "nothing"), 5)
        assert resp.code == ResponseCode.QUERY_NOT_FOUND
        assert resp.remark == "can not find message, maybe time range not correct"
        assert set(resp.ext_fields) >= HEADER  # always there: a Java client unboxes them
        assert not resp.body
        bad = RemotingCommand.request(RequestCode.QUERY_MESSAGE, {"topic": "T", "key": "k"})
        resp = await client.invoke(broker.addr, bad, 5)
        assert resp.code == ResponseCode.SYSTEM_ERROR and "maxNum" in (resp.remark or "")
        assert set(resp.ext_fields) >= HEADER
        await client.close()

    asyncio.run(run())


def test_index_survives_kill9(tmp_path, namesrv):
    broker = start_broker(tmp_path, namesrv.addr)

    async def send_some():
        client = RemotingClient()
        for i in range(20):
            await _send(client, broker.addr, "KillTopic", f"k-{i}".encode(), KEYS=f"key-{i}")
        await client.close()

    async def look_up(addr):
        client = RemotingClient()
        got = []
        for i in range(20):
            resp = await client.invoke(addr, query("KillTopic", f"key-{i}"), 5)
            got.append([m.body for m in decode_messages(resp.body)] if resp.code == 0 else resp.code)
        await client.close()
        return got

    try:
        asyncio.run(send_some())
    finally:
        broker.kill9()
    broker = start_broker(tmp_path, namesrv.addr, port=broker.port)
    try:
        assert asyncio.run(look_up(broker.addr)) == [[f"k-{i}".encode()] for i in range(20)]
        assert "crash recovery" in broker.log_text()
    finally:
        broker.stop()
