"""Push consumer retries through ``%RETRY%<group>`` to the DLQ, and orderly consumption while members
change, on real processes (the broker runs with 1-second delay levels).

Orderly: 20 sharding keys, 10 000 messages, one consumer joining and another leaving mid-stream.
Also: a delayed message is not delivered before its level, and flow control caps a queue's cache.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict

import pytest

from pyrocketmq.client import (
    ClientSettings,
    ConsumeResult,
    ConsumeSettings,
    Message,
    Producer,
    PullConsumer,
    PushConsumerSettings,
    RebalanceSettings,
    SyncPushConsumer,
)
from pyrocketmq.remoting.body import MessageQueue

from .procs import start_broker
from .push import consumer, create_topic, wait_until

LEVELS = " ".join(["1s"] * 18)
WAIT = 60.0


@pytest.fixture
def broker(tmp_path, namesrv):
    proc = start_broker(tmp_path, namesrv.addr, messageDelayLevel=LEVELS)
    yield proc
    proc.stop()


def test_failures_come_back_through_retry_then_land_in_the_dlq(namesrv, broker):
    group, topic = "cg_push_retry", "RetryPush"
    attempts: dict[str, list[tuple[int, str, float]]] = defaultdict(list)

    def listener(msgs, ctx):
        for m in msgs:
            body = m.body.decode()
            attempts[body].append((m.reconsume_times, m.topic, time.monotonic()))
            if body == "always-fails":
                raise RuntimeError("an exception counts as RECONSUME_LATER")
            if body == "fails-twice" and m.reconsume_times < 2:
                return ConsumeResult.RECONSUME_LATER
        return ConsumeResult.SUCCESS

    async def run():
        await create_topic(namesrv.addr, broker.addr, topic, 2)
        settings = PushConsumerSettings(consume_from="first", consume=ConsumeSettings(max_reconsume_times=2),
                                        rebalance=RebalanceSettings(interval=2.0))
        c = consumer(namesrv.addr, group, "r0", topic, listener, settings=settings)
        try:
            await c.start()
            async with Producer("pg_retry", namesrv.addr, client=ClientSettings(instance_name="rp")) as p:
                for body in ("ok", "fails-twice", "always-fails"):
                    await p.send(Message(topic, body.encode(), tags="TagA", keys=body))
            await wait_until(lambda: len(attempts["always-fails"]) >= 3 and len(attempts["fails-twice"]) >= 3,
                             WAIT, "three attempts of the failing messages")
            dlq = MessageQueue(f"%DLQ%{group}", "broker-a", 0)

            async def in_dlq() -> list:
                async with PullConsumer("dlq_reader", namesrv.addr) as pc:
                    try:
                        return (await pc.pull(dlq, 0, 32)).messages
                    except Exception:
                        return []

            found: list = []

            async def dlq_has_it() -> bool:
                found[:] = await in_dlq()
                return any(m.body == b"always-fails" for m in found)

            await wait_until(dlq_has_it, WAIT, "the always-failing message in the DLQ")
            await asyncio.sleep(1.5)  # would a 4th attempt come? (it must not)
        finally:
            await c.shutdown()
        assert [a[0] for a in attempts["ok"]] == [0]
        assert [a[0] for a in attempts["fails-twice"]] == [0, 1, 2]
        assert [a[0] for a in attempts["always-fails"]] == [0, 1, 2]
        for body in ("fails-twice", "always-fails"):
            assert {a[1] for a in attempts[body]} == {topic}, "retried messages carry their original topic"
            times = [a[2] for a in attempts[body]]
            assert all(b - a >= 0.5 for a, b in zip(times, times[1:], strict=False)), (
                "retries wait for their delay level"
            )
        assert [m.body for m in found] == [b"always-fails"]
        assert found[0].topic == f"%DLQ%{group}" and found[0].properties.get("RETRY_TOPIC") == topic

    asyncio.run(run())


def test_orderly_keeps_per_key_order_while_a_consumer_joins_and_another_leaves(namesrv, broker):
    group, topic = "cg_orderly", "OrderlyPush"
    keys, total = 20, 10000
    seen: dict[str, list[tuple[int, int]]] = defaultdict(list)  # consumer -> [(key, seq)]
    timeline: list[tuple[int, int]] = []  # every consumer's calls, in the order they happened

    def listener_for(name: str):
        def listener(msgs, ctx):
            for m in msgs:
                k, seq = m.body.decode().split(":")
                seen[name].append((int(k), int(seq)))
                timeline.append((int(k), int(seq)))
            return ConsumeResult.SUCCESS

        return listener

    async def run():
        await create_topic(namesrv.addr, broker.addr, topic, 8)
        settings = lambda: PushConsumerSettings(  # noqa: E731
            consume_from="first",
            rebalance=RebalanceSettings(interval=1.0),
            consume=ConsumeSettings(batch_size=4),
        )
        cs = {n: consumer(namesrv.addr, group, n, topic, listener_for(n), orderly=True, settings=settings())
              for n in ("o1", "o2", "o3")}
        try:
            await cs["o1"].start()
            await cs["o2"].start()
            async with Producer("pg_orderly", namesrv.addr, client=ClientSettings(instance_name="op")) as p:
                for i in range(total):
                    key = i % keys
                    await p.send(Message(topic, f"{key}:{i // keys}".encode()), sharding_key=f"key-{key}")
                    if i == total // 3:
                        await cs["o3"].start()
                    if i == 2 * total // 3:
                        await cs["o1"].shutdown()
            got = lambda: {x for lst in seen.values() for x in lst}  # noqa: E731
            await wait_until(lambda: len(got()) == total, 120.0, "every ordered message consumed")
        finally:
            for c in cs.values():
                await c.shutdown()
        assert all(seen[n] for n in ("o1", "o2", "o3")), "each consumer had a share at some point"
        for name in ("o1", "o2", "o3"):
            per_key: dict[int, list[int]] = defaultdict(list)
            for k, seq in seen[name]:
                per_key[k].append(seq)
            for k, seqs in per_key.items():
                assert seqs == sorted(seqs) and len(seqs) == len(set(seqs)), (
                    f"{name} saw key {k} out of order"
                )
        # across consumers handing queues over, in real time: per key, each new message is the next
        # one sent (a redelivery after a handover repeats earlier ones, never skips ahead)
        firsts: dict[int, list[int]] = defaultdict(list)
        for k, seq in timeline:
            if seq not in firsts[k]:
                firsts[k].append(seq)
        for k in range(keys):
            assert firsts[k] == list(range(total // keys)), f"key {k} consumed out of order"

    asyncio.run(run())


def test_orderly_suspend_retries_locally_then_the_message_goes_to_the_dlq(namesrv, broker):
    """Through the synchronous facade: a plain function on worker threads."""
    group, topic = "cg_orderly_dlq", "OrderlyDlq"
    calls: list[tuple[str, int, float]] = []

    def listener(msgs, ctx):
        for m in msgs:
            calls.append((m.body.decode(), m.reconsume_times, time.monotonic()))
            if m.body == b"poison":
                return ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeResult.SUCCESS

    asyncio.run(create_topic(namesrv.addr, broker.addr, topic, 1))
    settings = PushConsumerSettings(consume_from="first", consume=ConsumeSettings(max_reconsume_times=2),
                                    rebalance=RebalanceSettings(interval=2.0))
    c = SyncPushConsumer(
        group, namesrv.addr, settings, ClientSettings(instance_name="od", client_ip="127.0.0.1")
    )
    c.subscribe(topic, "*")
    c.register_listener(listener, orderly=True)
    with c:
        producer_run = Producer("pg_od", namesrv.addr, client=ClientSettings(instance_name="odp"))

        async def send():
            async with producer_run as p:
                for body in ("before", "poison", "after"):
                    await p.send(Message(topic, body.encode()), sharding_key="one")

        asyncio.run(send())
        deadline = time.monotonic() + WAIT
        while not any(b == "after" for b, _, _ in calls) and time.monotonic() < deadline:
            time.sleep(0.1)
    assert [(b, r) for b, r, _ in calls] == [
        ("before", 0),
        ("poison", 0),
        ("poison", 1),
        ("poison", 2),
        ("after", 0),
    ]
    poison = [t for b, _, t in calls if b == "poison"]
    assert all(y - x >= 0.5 for x, y in zip(poison, poison[1:], strict=False)), (
        "SUSPEND waits before retrying"
    )

    async def dlq() -> list:
        async with PullConsumer("dlq_reader2", namesrv.addr) as pc:
            return (await pc.pull(MessageQueue(f"%DLQ%{group}", "broker-a", 0), 0, 32)).messages

    found: list = []
    deadline = time.monotonic() + WAIT
    while not found and time.monotonic() < deadline:
        try:
            found = asyncio.run(dlq())
        except Exception:
            time.sleep(0.2)
    assert [m.body for m in found] == [b"poison"]


def test_delayed_message_arrives_after_its_level_and_flow_control_caps_the_cache(namesrv, broker):
    """A message sent with delay level 2 (1 s here) reaches the listener no sooner; meanwhile a slow
    listener on a 1-queue topic never has more than the flow-control threshold (+ one pull) cached."""
    group, topic = "cg_delay_flow", "DelayFlow"
    got: dict[str, float] = {}
    peak = 0

    async def run():
        nonlocal peak
        await create_topic(namesrv.addr, broker.addr, topic, 1)
        settings = PushConsumerSettings(consume_from="first", rebalance=RebalanceSettings(interval=2.0),
                                        consume=ConsumeSettings(workers=2))
        settings.flow.max_cached_messages = 50

        async def slow(msgs, ctx):
            for m in msgs:
                got[m.body.decode()] = time.monotonic()
            await asyncio.sleep(0.002)
            return ConsumeResult.SUCCESS

        c = consumer(namesrv.addr, group, "df", topic, slow, settings=settings)
        try:
            await c.start()
            async with Producer("pg_df", namesrv.addr, client=ClientSettings(instance_name="dfp")) as p:
                await p.send([Message(topic, f"bulk{i}".encode()) for i in range(400)])
                sent_at = time.monotonic()
                await p.send(Message(topic, b"delayed", delay_level=2))

            async def watch():
                nonlocal peak
                while True:
                    peak = max([peak, *(pq.msg_count for pq in c.state.table.values())])
                    await asyncio.sleep(0.005)

            watcher = asyncio.create_task(watch())
            try:
                await wait_until(
                    lambda: "delayed" in got and len(got) == 401, WAIT, "all messages, the delayed one too"
                )
            finally:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
        finally:
            await c.shutdown()
        assert got["delayed"] - sent_at >= 0.9
        assert 0 < peak <= 50 + 32

    asyncio.run(run())
