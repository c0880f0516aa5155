"""Twenty kill -9 of a random replica (the master with probability 0.6) of a three-replica SYNC_MASTER group
under continuous sends. After each kill the group takes writes again (a new master when the master died) and
the victim restarts and rejoins. At the end every acknowledged message is read back at its queue offset, in
send order within its queue; the kill-to-writable times of the master kills are printed."""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time

from pyrocketmq.remoting.remoting_client import RemotingClient

from .failover import Acked, controller_group, count, has_topic, in_sync, produce, read_queue, until, view
from .wire import create_topic

TOPIC = "LoopTopic"
QUEUES = 2
ROUNDS = 20


def test_twenty_random_kills_lose_nothing_acknowledged(tmp_path) -> None:
    seed = int(os.environ.get("FAILOVER_SEED", time.time()))
    print(f"\nseed {seed}")
    with controller_group(tmp_path, 3) as (ns, replicas):
        asyncio.run(_loop(ns, replicas, random.Random(seed)))


async def _loop(ns, replicas, rng: random.Random) -> None:
    client = RemotingClient()
    acked, stop = Acked(), asyncio.Event()
    writable: list[float] = []
    task = None
    try:
        await until("a master with all three in sync", lambda: in_sync(client, ns.addr, 3))
        master = (await view(client, ns.addr))["masterId"]
        assert (await client.invoke(replicas[master].addr, create_topic(TOPIC, QUEUES), 10)).code == 0
        for rid in replicas:
            if rid != master:
                await until(
                    f"the topic on replica {rid}",
                    lambda rid=rid: has_topic(client, replicas[rid].addr, TOPIC),
                )
        task = asyncio.create_task(produce(ns.addr, TOPIC, stop, acked, "l"))
        await until("the first sends", lambda: count(acked, 50))
        for _ in range(ROUNDS):
            master = (await view(client, ns.addr))["masterId"]
            # the master more often than not (the failovers are what is measured), a slave otherwise
            victim = (
                master if rng.random() < 0.6 else rng.choice([r for r in sorted(replicas) if r != master])
            )
            before = len(acked.sent)
            replicas[victim].kill9()
            killed = time.monotonic()
            await until(
                f"sends acknowledged after killing replica {victim}",
                lambda n=before: count(acked, n + 20),
                timeout=30,
            )
            if victim == master:
                writable.append(_first_ok_after(acked, before, replicas[victim].addr, killed))
            replicas[victim].start()
            await until("all three in sync again", lambda: in_sync(client, ns.addr, 3))
        stop.set()
        await task
        task = None
        final = replicas[(await view(client, ns.addr))["masterId"]].addr
        dupes = await _check(client, final, acked)
        assert writable, "no master was killed"
        print(
            f"{ROUNDS} kills ({len(writable)} of the master): kill to writable median "
            f"{statistics.median(writable):.2f} s, max {max(writable):.2f} s; "
            f"{len(acked.sent)} acknowledged, "
            f"none lost; {dupes} unacknowledged attempt(s) also stored"
        )
    finally:
        stop.set()
        if task is not None:
            await task
        await client.close()


def _first_ok_after(acked: Acked, before: int, dead: str, killed: float) -> float:
    """Seconds from the kill to the first acknowledgement by another broker (recorded by ``produce``)."""
    for body, (_, _, addr) in list(acked.sent.items())[before:]:
        if addr != dead:
            return acked.at[body] - killed
    raise AssertionError("no send acknowledged by another broker")


async def _check(client: RemotingClient, addr: str, acked: Acked) -> int:
    """Every acknowledged message at its offset, acknowledged ones in send order per queue; how many
    stored messages were never acknowledged (attempts retried after a kill)."""
    extra = 0
    for q in range(QUEUES):
        stored = await read_queue(client, addr, TOPIC, q)
        mine = sorted(
            (off, int(body.rsplit("-", 1)[1])) for body, (qq, off, _) in acked.sent.items() if qq == q
        )
        for off, seq in mine:
            assert stored.get(off) == f"l-{seq}", (
                f"queue {q} offset {off}: {stored.get(off)!r}, acknowledged l-{seq}"
            )
        seqs = [seq for _, seq in mine]
        assert seqs == sorted(seqs), f"queue {q}: acknowledged messages out of send order"
        extra += len(stored) - len(mine)
    return extra


