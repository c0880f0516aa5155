"""Automatic failover in controller mode, with real processes: a name server embedding the
controller and two SYNC_MASTER replicas of one group. Killing the master (kill -9) under continuous
sends elects the slave; every acknowledged message is read back at its queue offset on the new
master; the old master restarts as a slave, its unreplicated tail cut, and ends up holding the
new master's queues exactly."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

from pyrocketmq.remoting.remoting_client import RemotingClient

from .failover import (
    Acked,
    controller_group,
    count,
    has_topic,
    in_sync,
    lost,
    produce,
    read_queue,
    until,
    view,
)
from .procs import free_port
from .wire import create_topic

TOPIC = "FailoverTopic"
QUEUES = 4


def test_sync_master_killed_under_sends_loses_nothing_acknowledged(tmp_path) -> None:
    with controller_group(tmp_path, 2, ns_sets={"metricsPort": (metrics_port := free_port())}) as (
        ns,
        replicas,
    ):
        ns.metrics_port = metrics_port
        asyncio.run(_kill_the_master(tmp_path, ns, replicas))


async def _kill_the_master(tmp_path, ns, replicas) -> None:
    client = RemotingClient()
    try:
        await until("a master with both replicas in sync", lambda: in_sync(client, ns.addr, 2))
        v = await view(client, ns.addr)
        first = v["masterId"]
        other = 3 - first
        master_addr = replicas[first].addr
        resp = await client.invoke(master_addr, create_topic(TOPIC, QUEUES), 10)
        assert resp.code == 0, resp.remark
        await until("the topic on the slave", lambda: has_topic(client, replicas[other].addr, TOPIC))

        acked, stop = Acked(), asyncio.Event()
        new_ok: list[float] = []
        killed_at: list[float] = []

        def on_ok(addr: str) -> None:
            if killed_at and addr == replicas[other].addr and not new_ok:
                new_ok.append(time.monotonic())

        task = asyncio.create_task(produce(ns.addr, TOPIC, stop, acked, "k", on_ok))
        await until("200 acknowledged sends", lambda: count(acked, 200))
        replicas[first].kill9()
        killed_at.append(time.monotonic())
        await until("a send acknowledged by the new master", lambda: _true(bool(new_ok)), timeout=30)
        before = len(acked.sent)
        await until("200 more acknowledged sends", lambda: count(acked, before + 200))
        stop.set()
        await task

        v = await view(client, ns.addr)
        assert v["masterId"] == other and v["epoch"] == 2, v
        metrics = (
            urllib.request.urlopen(f"http://127.0.0.1:{ns.metrics_port}/metrics", timeout=5).read().decode()
        )
        for line in ('pyrocketmq_controller_master_epoch{broker_name="broker-a"} 2.0',
                     f'pyrocketmq_controller_master_replica{{broker_name="broker-a"}} {other}.0',
                     'pyrocketmq_controller_elections_total{broker_name="broker-a"} 2.0',
                     "pyrocketmq_controller_leader 1.0"):
            assert line in metrics, line
        new_master = replicas[other].addr
        missing = await lost(client, new_master, TOPIC, QUEUES, acked)
        assert missing == [], f"{len(missing)} acknowledged message(s) lost, e.g. {missing[:5]}"
        took = new_ok[0] - killed_at[0]
        print(f"\nkill -9 to the first acknowledged send on the new master: {took:.2f} s; "
              f"{len(acked.sent)} acknowledged, {acked.failures} failed attempts")

        # the old master comes back: a slave of the new one, holding exactly its queues
        replicas[first].start()
        await until("the old master back in the in-sync set", lambda: in_sync(client, ns.addr, 2))
        v = await view(client, ns.addr)
        assert v["masterId"] == other, v
        for q in range(QUEUES):
            want = await read_queue(client, new_master, TOPIC, q)
            await until(f"queue {q} replicated to the old master",
                        lambda q=q, want=want: _same(client, replicas[first].addr, q, want))
        assert "following master" in replicas[first].log_text()
    finally:
        await client.close()


def test_a_paused_master_is_replaced_fenced_and_rejoins_as_slave(tmp_path) -> None:
    with controller_group(tmp_path, 2) as (ns, replicas):
        asyncio.run(_pause_the_master(ns, replicas))


async def _pause_the_master(ns, replicas) -> None:
    client = RemotingClient()
    try:
        await until("a master with both replicas in sync", lambda: in_sync(client, ns.addr, 2))
        first = (await view(client, ns.addr))["masterId"]
        other = 3 - first
        resp = await client.invoke(replicas[first].addr, create_topic(TOPIC, QUEUES), 10)
        assert resp.code == 0, resp.remark
        await until("the topic on the slave", lambda: has_topic(client, replicas[other].addr, TOPIC))
        acked, stop = Acked(), asyncio.Event()
        task = asyncio.create_task(produce(ns.addr, TOPIC, stop, acked, "p"))
        await until("100 acknowledged sends", lambda: count(acked, 100))
        os.kill(replicas[first].proc.pid, signal.SIGSTOP)  # alive, silent: only the timeout finds it
        stopped = time.monotonic()
        await until("the slave elected", lambda: _master_is(client, ns.addr, other), timeout=30)
        elected = time.monotonic() - stopped
        os.kill(replicas[first].proc.pid, signal.SIGCONT)
        resumed = len(acked.sent)
        await until("the old master back in the in-sync set as a slave", lambda: in_sync(client, ns.addr, 2))
        await until("100 more acknowledged sends", lambda: count(acked, resumed + 100))
        stop.set()
        await task
        v = await view(client, ns.addr)
        assert v["masterId"] == other, v
        old = replicas[first].addr
        # Fenced: once resumed, the old master acknowledges nothing the new epoch does not start with.
        # A send it stored before the pause may still be answered after it (the slave's
        # acknowledgement waited in its socket): that message sits below the new epoch's start.
        late = [b for b, (_, _, addr) in list(acked.sent.items())[resumed:]
                if addr == old and acked.stored_at[b] >= v["epochStart"]]
        assert late == [], f"the replaced master acknowledged {len(late)} send(s) past the new epoch's start"
        new_master = replicas[other].addr
        missing = await lost(client, new_master, TOPIC, QUEUES, acked)
        assert missing == [], f"{len(missing)} acknowledged message(s) lost, e.g. {missing[:5]}"
        for q in range(QUEUES):
            want = await read_queue(client, new_master, TOPIC, q)
            await until(f"queue {q} the same on the old master",
                        lambda q=q, want=want: _same(client, old, q, want))
        print(
            f"\nSIGSTOP to election: {elected:.2f} s; {len(acked.sent)} acknowledged, "
            f"{acked.failures} failed attempts"
        )
    finally:
        await client.close()


async def _master_is(client: RemotingClient, ns: str, rid: int) -> bool:
    v = await view(client, ns)
    return v["masterId"] == rid and v["epochStart"] >= 0





async def _true(value: bool) -> bool:
    return value


async def _same(client: RemotingClient, addr: str, q: int, want: dict[int, str]) -> bool:
    return await read_queue(client, addr, TOPIC, q) == want


def test_switchover_moves_the_master_with_nothing_acknowledged_lost(tmp_path) -> None:
    with controller_group(tmp_path, 2) as (ns, replicas):
        asyncio.run(_switch(ns, replicas))


def _admin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyrocketmq", "admin", *args], capture_output=True, text=True, timeout=60
    )


async def _switch(ns, replicas) -> None:
    client = RemotingClient()
    acked, stop = Acked(), asyncio.Event()
    task = None
    try:
        await until("a master with both replicas in sync", lambda: in_sync(client, ns.addr, 2))
        first = (await view(client, ns.addr))["masterId"]
        other = 3 - first
        assert (await client.invoke(replicas[first].addr, create_topic(TOPIC, QUEUES), 10)).code == 0
        await until("the topic on the slave", lambda: has_topic(client, replicas[other].addr, TOPIC))
        task = asyncio.create_task(produce(ns.addr, TOPIC, stop, acked, "s"))
        await until("100 acknowledged sends", lambda: count(acked, 100))
        bad = await asyncio.to_thread(
            _admin, "electMaster", "-n", ns.addr, "-a", ns.addr, "-b", "broker-a", "-i", "9"
        )
        assert bad.returncode == 1 and "not in the in-sync set" in bad.stderr, bad.stderr
        done = await asyncio.to_thread(
            _admin, "electMaster", "-n", ns.addr, "-a", ns.addr, "-b", "broker-a", "-i", str(other)
        )
        assert done.returncode == 0 and f"to replica {other}" in done.stdout, done.stderr
        n = len(acked.sent)
        await until("100 sends acknowledged by the new master",
                    lambda: _count_by(acked, replicas[other].addr, n, 100), timeout=30)
        stop.set()
        await task
        task = None
        missing = await lost(client, replicas[other].addr, TOPIC, QUEUES, acked)
        assert missing == [], f"{len(missing)} acknowledged message(s) lost, e.g. {missing[:5]}"
        await until("the old master back in sync as a slave", lambda: in_sync(client, ns.addr, 2))
        shown = await asyncio.to_thread(
            _admin, "getSyncStateSet", "-n", ns.addr, "-a", ns.addr, "-b", "broker-a"
        )
        assert shown.returncode == 0 and json.loads(shown.stdout)["masterId"] == other, (
            shown.stdout + shown.stderr
        )
    finally:
        stop.set()
        if task is not None:
            await task
        await client.close()


async def _count_by(acked: Acked, addr: str, start: int, n: int) -> bool:
    return sum(1 for _, _, a in list(acked.sent.values())[start:] if a == addr) >= n
