"""Consumers and delayed messages through a failover: a push consumer of a group reading while
the SYNC_MASTER is killed continues on the new master from the group's committed offsets (they
follow the master to its slave every 2 s), so it gets every acknowledged message with duplicates
only from its last seconds before the kill; delayed messages waiting on the dead master are
delivered by the new one. A lite pull consumer whose route timer would only run in ten minutes
finds the new master by itself when its pulls fail."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from pyrocketmq.client import Message, Producer, PullConsumer
from pyrocketmq.client.settings import ClientSettings
from pyrocketmq.remoting.remoting_client import RemotingClient

from .failover import Acked, controller_group, has_topic, in_sync, produce, until, view
from .push import consumer
from .wire import create_topic

TOPIC = "ConsumeFailoverTopic"
QUEUES = 4
DELAYED = 20


def test_a_push_consumer_and_delayed_messages_survive_a_master_kill(tmp_path) -> None:
    with controller_group(tmp_path, 2) as (ns, replicas):
        asyncio.run(_scenario(ns, replicas))


async def _scenario(ns, replicas) -> None:
    client = RemotingClient()
    acked, stop = Acked(), asyncio.Event()
    got: list[tuple[str, float]] = []

    def listener(msgs, ctx):
        now = time.monotonic()
        got.extend((m.body.decode(), now) for m in msgs)
        from pyrocketmq.client import ConsumeResult
        return ConsumeResult.SUCCESS

    task = None
    c = consumer(ns.addr, "failover_cg", "fc", TOPIC, listener)
    try:
        await until("a master with both replicas in sync", lambda: in_sync(client, ns.addr))
        first = (await view(client, ns.addr))["masterId"]
        other = 3 - first
        assert (await client.invoke(replicas[first].addr, create_topic(TOPIC, QUEUES), 10)).code == 0
        await until("the topic on the slave", lambda: has_topic(client, replicas[other].addr, TOPIC))
        await c.start()
        task = asyncio.create_task(produce(ns.addr, TOPIC, stop, acked, "c"))
        await until("300 consumed", lambda: _true(len(got) >= 300), timeout=60)
        await asyncio.sleep(6)  # the consumer commits its offsets (every 5 s), the slave copies them
        delayed = []
        async with Producer(
            "delay_pg", ns.addr, client=ClientSettings(instance_name="dp", client_ip="127.0.0.1")
        ) as p:
            for i in range(DELAYED):
                r = await p.send(Message(TOPIC, f"delayed-{i}".encode(), delay_level=2))  # 5 s
                assert r.status.name == "SEND_OK"
                delayed.append(f"delayed-{i}")
        await asyncio.sleep(2.5)  # the slave has the schedule's offsets
        replicas[first].kill9()
        killed = time.monotonic()
        n = len(acked.sent)
        await until("200 sends on the new master", lambda: _true(len(acked.sent) >= n + 200), timeout=30)
        stop.set()
        await task
        task = None
        want = set(acked.sent) | set(delayed)
        try:
            await until("every acknowledged and delayed message consumed",
                        lambda: _true(want <= {b for b, _ in got}), timeout=90)
        except AssertionError as e:
            seen = {b for b, _ in got}
            lost_delayed = sorted(set(delayed) - seen)
            lost_acked = sorted(set(acked.sent) - seen)
            raise AssertionError(
                f"{e}: {len(lost_acked)} of {len(acked.sent)} acknowledged missing "
                f"(first {lost_acked[:5]}), {len(lost_delayed)} of {DELAYED} delayed missing; "
                f"{len(got)} consumed, the last {time.monotonic() - got[-1][1]:.1f} s ago"
                if got
                else str(e)
            ) from None
        dupes = len(got) - len({b for b, _ in got})
        recent = sum(1 for _, t in got if killed - 10 <= t <= killed)
        assert dupes <= recent, (
            f"{dupes} duplicates, more than the {recent} consumed in the 10 s before the kill"
        )
        print(f"\npush consumer through a master kill: {len(want)} messages, {dupes} duplicate(s) "
              f"(consumed in the 10 s before the kill: {recent}); {DELAYED} delayed messages delivered")
    finally:
        stop.set()
        if task is not None:
            await task
        await c.shutdown()
        await client.close()




async def _true(value: bool) -> bool:
    return value


def test_a_lite_pull_consumer_finds_the_new_master_without_its_route_timer(tmp_path) -> None:
    with controller_group(tmp_path, 2) as (ns, replicas):
        asyncio.run(_lite_scenario(ns, replicas))


async def _lite_scenario(ns, replicas) -> None:
    topic = "LiteFailoverTopic"
    client = RemotingClient()
    acked, stop = Acked(), asyncio.Event()
    seen: set[str] = set()

    async def polled(pc: PullConsumer, want: Callable[[], bool]) -> bool:
        seen.update(m.body.decode() for m in await pc.poll(timeout=0.5))
        return want()

    task = None
    # the 30 s route refresh pushed out of the test's reach: only a refresh after a failed pull helps
    settings = ClientSettings(instance_name="fl", client_ip="127.0.0.1", poll_namesrv_interval=600)
    pc = PullConsumer("failover_lite", ns.addr, client=settings)
    try:
        await until("a master with both replicas in sync", lambda: in_sync(client, ns.addr))
        first = (await view(client, ns.addr))["masterId"]
        other = 3 - first
        assert (await client.invoke(replicas[first].addr, create_topic(topic, QUEUES), 10)).code == 0
        await until("the topic on the slave", lambda: has_topic(client, replicas[other].addr, topic))
        await pc.start()
        await pc.assign(await pc.fetch_queues(topic))
        await pc.seek_to_begin()
        task = asyncio.create_task(produce(ns.addr, topic, stop, acked, "l"))
        await until("100 polled", lambda: polled(pc, lambda: len(seen) >= 100), timeout=60)
        replicas[first].kill9()
        n = len(acked.sent)
        await until("100 sends on the new master", lambda: _true(len(acked.sent) >= n + 100), timeout=30)
        stop.set()
        await task
        task = None
        try:
            await until("every acknowledged message polled from the new master",
                        lambda: polled(pc, lambda: set(acked.sent) <= seen), timeout=60)
        except AssertionError as e:
            missing = sorted((acked.sent[b][:2], b) for b in set(acked.sent) - seen)
            raise AssertionError(
                f"{e}: {len(missing)} of {len(acked.sent)} missing, (queue, offset) of the first: "
                f"{missing[:5]}"
            ) from None
    finally:
        stop.set()
        if task is not None:
            await task
        await pc.shutdown()
        await client.close()
