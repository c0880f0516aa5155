"""Offset stores: memory table rules, the local offsets.json file, the remote store's calls."""

from __future__ import annotations

import asyncio

from pyrocketmq.client.offset_store import LocalOffsetStore, RemoteOffsetStore
from pyrocketmq.remoting.body import MessageQueue

A = MessageQueue("T", "broker-a", 0)
B = MessageQueue("T", "broker-a", 1)


def test_local_store_survives_a_restart_in_java_layout(tmp_path):
    async def run():
        s = LocalOffsetStore("cg", tmp_path)
        await s.load()
        assert await s.read_store(A) == -1
        s.update(A, 10)
        s.update(B, 7)
        s.update(A, 5, increase_only=True)
        await s.persist_all({A, B})
        path = tmp_path / "cg" / "offsets.json"
        text = path.read_text()
        assert text.startswith('{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:10')
        s.update(A, 12)
        await s.persist_all({A, B})
        assert (tmp_path / "cg" / "offsets.json.bak").exists()

        again = LocalOffsetStore("cg", tmp_path)
        await again.load()
        assert again.read_memory(A) == 12 and await again.read_store(B) == 7

    asyncio.run(run())


def test_local_store_falls_back_to_the_backup(tmp_path):
    async def run():
        s = LocalOffsetStore("cg", tmp_path)
        s.update(A, 3)
        await s.persist_all({A})
        s.update(A, 4)
        await s.persist_all({A})
        (tmp_path / "cg" / "offsets.json").write_text("{broken")
        again = LocalOffsetStore("cg", tmp_path)
        await again.load()
        assert again.read_memory(A) == 3

    asyncio.run(run())


class FakeBroker:
    def __init__(self) -> None:
        self.stored: dict[MessageQueue, int] = {A: 30}
        self.calls: list[tuple[MessageQueue, int, bool]] = []

    async def query_consumer_offset(self, group, mq):
        return self.stored.get(mq, -1)

    async def update_consumer_offset(self, group, mq, offset, *, oneway=False):
        self.calls.append((mq, offset, oneway))
        self.stored[mq] = offset


def test_remote_store_reads_persists_and_forgets_given_away_queues():
    async def run():
        broker = FakeBroker()
        s = RemoteOffsetStore("cg", broker)
        assert await s.read_store(A) == 30 and s.read_memory(A) == 30
        assert await s.read_store(B) == -1 and s.read_memory(B) == -1
        s.update(B, 4)
        s.update(A, 31, increase_only=True)
        await s.persist_all({A})
        assert broker.calls == [(A, 31, True)]
        assert s.read_memory(B) == -1  # not owned any more: dropped from memory

    asyncio.run(run())
