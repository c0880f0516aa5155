"""Broker state a failover must carry over, with real processes (controller mode, two SYNC_MASTER
replicas, kill -9 of the master):

- half messages of open transactions: the new master's check-back asks the producer and delivers
  the committed ones (the rolled-back one never);
- timer messages: the ones still waiting are delivered by the new master at their time, and the
  ones delivered before the kill are not delivered again (the timer's progress follows the master).
"""

from __future__ import annotations

import asyncio
import time

from pyrocketmq.client import Message, TransactionProducer, TransactionState
from pyrocketmq.client.settings import ClientSettings
from pyrocketmq.remoting.remoting_client import RemotingClient

from .failover import controller_group, in_sync_with_topic, read_queue, until, view

TOPIC = "StateFailoverTopic"


def test_open_transactions_and_timers_survive_a_master_kill(tmp_path) -> None:
    conf = {"transactionCheckInterval": 1000, "transactionTimeOut": 2000}
    with controller_group(tmp_path, 2, **conf) as (ns, replicas):
        asyncio.run(_scenario(ns, replicas))


async def _scenario(ns, replicas) -> None:
    client = RemotingClient()
    try:
        first, other = await in_sync_with_topic(client, ns.addr, replicas, TOPIC)

        def check(msg) -> TransactionState:
            return TransactionState.ROLLBACK if msg.body == b"tx-rollback" else TransactionState.COMMIT

        settings = ClientSettings(instance_name="txf", client_ip="127.0.0.1")
        async with TransactionProducer(
            "failover_tx_pg", ns.addr, client=settings, check_local_transaction=check
        ) as p:
            for body in (b"tx-commit-1", b"tx-commit-2", b"tx-rollback"):
                r = await p.send_in_transaction(Message(TOPIC, body), lambda m, a: TransactionState.UNKNOWN)
                assert r.status.name == "SEND_OK"
            now = int(time.time() * 1000)
            await p.send(Message(TOPIC, b"timer-early", deliver_time_ms=now + 1000))
            await p.send(Message(TOPIC, b"timer-late", deliver_time_ms=now + 7000))
            await until(
                "the early timer delivered", lambda: _bodies_has(client, replicas[first].addr, b"timer-early")
            )
            await asyncio.sleep(2.5)  # the slave copies the timer's progress (every 2 s)
            replicas[first].kill9()
            await until("the slave elected", lambda: _master_is(client, ns.addr, other), timeout=30)
            await until("both committed transactions and the late timer delivered by the new master",
                        lambda: _has_all(client, replicas[other].addr,
                                         {b"tx-commit-1", b"tx-commit-2", b"timer-late"}), timeout=60)
            await asyncio.sleep(3)  # more check-back and timer turns: nothing else may appear
        bodies = await _bodies(client, replicas[other].addr)
        assert b"tx-rollback" not in bodies
        assert bodies.count(b"timer-early") == 1, "the timer delivered a message again after the failover"
        assert bodies.count(b"timer-late") == 1
    finally:
        await client.close()


async def _bodies(client: RemotingClient, addr: str) -> list[bytes]:
    return [b.encode() for _, b in sorted((await read_queue(client, addr, TOPIC, 0)).items())]


async def _bodies_has(client: RemotingClient, addr: str, body: bytes) -> bool:
    return body in await _bodies(client, addr)


async def _has_all(client: RemotingClient, addr: str, want: set[bytes]) -> bool:
    return want <= set(await _bodies(client, addr))



async def _master_is(client: RemotingClient, ns: str, rid: int) -> bool:
    v = await view(client, ns)
    return v["masterId"] == rid and v["epochStart"] >= 0
