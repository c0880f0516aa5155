"""Master/slave replication between two pyrocketmq brokers (real processes, the HA port is
``listenPort + 1``): the slave holds the master's commitlog byte for byte, serves pulls, refuses
sends, catches up after kill -9, keeps serving when the master is gone, and copies configs and
consumer offsets; a SYNC_MASTER answers SEND_OK only with a slave holding the message."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from pyrocketmq.client.pull_consumer import PullConsumer
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import RemotingError

from .procs import start_broker
from .wire import create_topic, pull, send_v2

TOPIC = "HaTopic"
QUEUES = 2
DEADLINE = 60.0


async def _until(what: str, check: Callable[[], Awaitable[bool]], timeout: float = DEADLINE) -> None:
    end = time.monotonic() + timeout
    while True:
        try:
            if await check():
                return
        except RemotingError:
            pass
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


def _slave(tmp, namesrv, **extra):
    return start_broker(
        tmp,
        namesrv.addr,
        name="broker-a-slave",
        brokerName="broker-a",
        brokerId=1,
        brokerRole="SLAVE",
        **extra,
    )


async def _raw_queue(client: RemotingClient, addr: str, qid: int) -> bytes:
    """Every record of a queue as the raw bytes a pull returns."""
    out, offset = b"", 0
    while True:
        resp = await client.invoke(addr, pull(TOPIC, qid, offset, max_nums=32), 10)
        if resp.code != ResponseCode.SUCCESS:
            return out
        out += resp.body
        offset = int(resp.ext_fields["nextBeginOffset"])


async def _send(client: RemotingClient, addr: str, n: int, tag: str) -> list[int]:
    codes = []
    for i in range(n):
        resp = await client.invoke(addr, send_v2(TOPIC, f"{tag}-{i}".encode() * 20, queue_id=i % QUEUES), 10)
        codes.append(resp.code)
    return codes


async def _same_queues(client: RemotingClient, master: str, slave: str) -> bool:
    for q in range(QUEUES):
        ours = await _raw_queue(client, master, q)
        if not ours or ours != await _raw_queue(client, slave, q):
            return False
    return True


def test_slave_replicates_serves_and_survives(tmp_path, namesrv) -> None:
    master = start_broker(tmp_path, namesrv.addr, brokerRole="ASYNC_MASTER")
    slave = _slave(tmp_path, namesrv)
    try:
        asyncio.run(_replicates(master, slave, tmp_path, namesrv))
    finally:
        slave.stop()
        master.stop()
    assert "connected to master" in slave.log_text()


async def _replicates(master, slave, tmp_path, namesrv) -> None:
    client = RemotingClient()
    try:
        assert (await client.invoke(master.addr, create_topic(TOPIC, QUEUES), 5)).code == ResponseCode.SUCCESS
        assert set(await _send(client, master.addr, 40, "a")) == {ResponseCode.SUCCESS}
        # identical records (bytes, queue offsets, commitlog offsets) on the slave
        await _until(
            "the slave to hold the master's messages", lambda: _same_queues(client, master.addr, slave.addr)
        )
        # the slave refuses sends
        resp = await client.invoke(slave.addr, send_v2(TOPIC, b"no"), 5)
        assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE
        # consumer offsets reach the slave
        ext = {"consumerGroup": "g1", "topic": TOPIC, "queueId": 1, "commitOffset": 7}
        upd = await client.invoke(
            master.addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, ext), 5
        )
        assert upd.code == ResponseCode.SUCCESS

        async def offset_synced() -> bool:
            q = RemotingCommand.request(
                RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "g1", "topic": TOPIC, "queueId": 1}
            )
            r = await client.invoke(slave.addr, q, 5)
            return r.code == ResponseCode.SUCCESS and int(r.ext_fields["offset"]) == 7

        await _until("the consumer offset to reach the slave", offset_synced)
        # kill -9 of the slave, more messages, restart: it catches up from its own offset
        slave.kill9()
        assert set(await _send(client, master.addr, 30, "b")) == {ResponseCode.SUCCESS}
        slave.start()
        await _until("the restarted slave to catch up", lambda: _same_queues(client, master.addr, slave.addr))
        expected = [await _raw_queue(client, master.addr, q) for q in range(QUEUES)]
    finally:
        await client.close()
    # the master stops: the slave still serves every message, to raw pulls and to a client that
    # finds it through the name server's route
    master.stop()
    client = RemotingClient()
    try:
        assert [await _raw_queue(client, slave.addr, q) for q in range(QUEUES)] == expected
    finally:
        await client.close()
    bodies = sorted(m.body for q in range(QUEUES) for m in decode_messages(expected[q]))
    async with PullConsumer("ha-reader", namesrv.addr) as pc:
        got = []
        for mq in await pc.fetch_queues(TOPIC):
            offset = 0
            while True:
                r = await pc.pull(mq, offset, 32)
                if not r.messages:
                    break
                got += [m.body for m in r.messages]
                offset = r.next_begin_offset
    assert sorted(got) == bodies


def test_sync_master_waits_for_a_slave(tmp_path, namesrv) -> None:
    master = start_broker(tmp_path, namesrv.addr, brokerRole="SYNC_MASTER")
    slave = None
    try:
        async def run() -> None:
            nonlocal slave
            client = RemotingClient()
            try:
                assert (
                    await client.invoke(master.addr, create_topic(TOPIC, QUEUES), 5)
                ).code == ResponseCode.SUCCESS
                # no slave: stored, but answered SLAVE_NOT_AVAILABLE
                resp = await client.invoke(master.addr, send_v2(TOPIC, b"alone"), 10)
                assert resp.code == ResponseCode.SLAVE_NOT_AVAILABLE
                assert resp.ext_fields.get("msgId")
                slave = _slave(tmp_path, namesrv)

                async def sent_ok() -> bool:
                    r = await client.invoke(master.addr, send_v2(TOPIC, b"replicated"), 10)
                    return r.code == ResponseCode.SUCCESS

                await _until("a SYNC_MASTER send acknowledged SEND_OK", sent_ok)
                # once SEND_OK, the slave holds it (both messages)
                await _until(
                    "the slave to hold both", lambda: _same_queues_q0(client, master.addr, slave.addr)
                )
            finally:
                await client.close()

        asyncio.run(run())
    finally:
        if slave is not None:
            slave.stop()
        master.stop()


async def _same_queues_q0(client: RemotingClient, master: str, slave: str) -> bool:
    ours = await _raw_queue(client, master, 0)
    return bool(ours) and ours == await _raw_queue(client, slave, 0)
