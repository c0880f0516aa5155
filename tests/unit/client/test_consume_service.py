"""Consume services without a broker: listener outcomes, send-back fallbacks, orderly suspension.

The services talk to the broker only through ``send_back``; these tests replace it, so what is
checked is the bookkeeping: which messages leave the process queue, which offset is committed,
what is consumed again and when.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from pyrocketmq.client.consume_service import (
    ConcurrentConsumeService,
    ConsumeContext,
    ConsumeResult,
    ListenerRunner,
    OrderlyConsumeService,
)
from pyrocketmq.client.consumer_stats import ConsumerStats
from pyrocketmq.client.offset_store import OffsetStore
from pyrocketmq.client.process_queue import ProcessQueue
from pyrocketmq.client.settings import ConsumeSettings, PushConsumerSettings
from pyrocketmq.client.subscription_state import SubscriptionState
from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.message import MessageExt

MQ = MessageQueue("T", "broker-a", 0)


class FakeConsumer:
    """The consumer's parts as a consume service sees them (ConsumerParts' fields), plus the two
    callbacks an orderly service is given."""

    def __init__(self, model: str = "CLUSTERING", **consume) -> None:
        self.group = "cg"
        self.settings = PushConsumerSettings(message_model=model, consume=ConsumeSettings(**consume))
        self.offset_store = OffsetStore("cg")
        self.stats = ConsumerStats()
        self.state = SubscriptionState("cg", model)
        self.clustering = self.state.clustering
        self.instance = None
        self.tracer = None
        self.batches: list[tuple[MessageQueue, ProcessQueue]] = []

    def after_orderly_batch(self, mq, pq) -> None:
        self.batches.append((mq, pq))

    async def lock_queue(self, mq) -> bool:
        return True


def msgs(*offsets: int) -> list[MessageExt]:
    return [MessageExt(topic="T", queue_offset=o, body=f"m{o}".encode()) for o in offsets]


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (ConsumeResult.SUCCESS, ConsumeResult.SUCCESS),
        ("CONSUME_SUCCESS", ConsumeResult.SUCCESS),
        ("SUCCESS", ConsumeResult.SUCCESS),
        (ConsumeResult.RECONSUME_LATER, ConsumeResult.RECONSUME_LATER),
        (None, ConsumeResult.RECONSUME_LATER),  # Java: null counts as RECONSUME_LATER
        (42, ConsumeResult.RECONSUME_LATER),
        (ValueError("boom"), ConsumeResult.RECONSUME_LATER),
    ],
)
def test_listener_answers(answer, expected):
    def fn(ms, ctx):
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def go():
        r = ListenerRunner(fn, 2)
        try:
            return await r.run(msgs(1), ConsumeContext(MQ), ConsumeResult.RECONSUME_LATER)
        finally:
            r.shutdown()

    assert run(go()) is expected


def test_coroutine_and_one_argument_listeners():
    async def coro(ms):
        return ConsumeResult.SUCCESS

    async def go():
        r = ListenerRunner(coro, 2)
        assert r.executor is None and r.arity == 1
        got = await r.run(msgs(1), ConsumeContext(MQ), ConsumeResult.RECONSUME_LATER)
        r.shutdown()
        t = ListenerRunner(lambda ms: ConsumeResult.SUCCESS, 1)
        got2 = await t.run(msgs(1), ConsumeContext(MQ), ConsumeResult.RECONSUME_LATER)
        t.shutdown()
        return got, got2

    assert run(go()) == (ConsumeResult.SUCCESS, ConsumeResult.SUCCESS)


class ScriptedConcurrent(ConcurrentConsumeService):
    def __init__(self, consumer, listener, back_ok: bool) -> None:
        super().__init__(consumer, listener)
        self.back_ok = back_ok
        self.sent_back: list[tuple[int, int]] = []

    async def send_back(self, msg, delay_level, broker_name, max_times):
        self.sent_back.append((msg.queue_offset, delay_level))
        return self.back_ok


def test_concurrent_success_commits_and_failure_goes_back_to_the_broker():
    async def go():
        c = FakeConsumer()
        svc = ScriptedConcurrent(c, lambda ms, ctx: ConsumeResult.RECONSUME_LATER if ms[0].queue_offset == 11
                                 else ConsumeResult.SUCCESS, back_ok=True)
        pq = ProcessQueue()
        batch = msgs(10, 11, 12)
        pq.put_messages(batch)
        svc.submit(batch, pq, MQ)
        await asyncio.gather(*list(svc.tasks._tasks))
        await svc.stop()
        return c, svc, pq

    c, svc, pq = run(go())
    assert svc.sent_back == [(11, 0)]  # delay level 0: the broker picks 3 + reconsumeTimes
    assert pq.msg_count == 0
    assert c.offset_store.read_memory(MQ) == 13
    assert c.stats.topics["T"].ok == 2 and c.stats.topics["T"].failed == 1


def test_concurrent_failed_send_back_keeps_the_message_and_resubmits_it_locally():
    async def go():
        c = FakeConsumer(resubmit_delay=0.05)
        calls: list[tuple[int, int]] = []

        def listener(ms, ctx):
            calls.append((ms[0].queue_offset, ms[0].reconsume_times))
            return ConsumeResult.SUCCESS if ms[0].reconsume_times >= 1 else ConsumeResult.RECONSUME_LATER

        svc = ScriptedConcurrent(c, listener, back_ok=False)
        pq = ProcessQueue()
        batch = msgs(20, 21)
        pq.put_messages(batch)
        svc.submit(batch, pq, MQ)
        await asyncio.gather(*list(svc.tasks._tasks))
        held = c.offset_store.read_memory(MQ)
        for _ in range(100):
            if pq.msg_count == 0:
                break
            await asyncio.sleep(0.02)
        await svc.stop()
        return c, calls, held, pq

    c, calls, held, pq = run(go())
    assert held == 20  # both failed and stay in the process queue: the offset stays at the first
    assert sorted(calls) == [(20, 0), (20, 1), (21, 0), (21, 1)]
    assert pq.msg_count == 0 and c.offset_store.read_memory(MQ) == 22


def test_broadcasting_failures_are_dropped_not_sent_back():
    async def go():
        c = FakeConsumer("BROADCASTING")
        svc = ScriptedConcurrent(c, lambda ms, ctx: ConsumeResult.RECONSUME_LATER, back_ok=True)
        pq = ProcessQueue()
        batch = msgs(5)
        pq.put_messages(batch)
        svc.submit(batch, pq, MQ)
        await asyncio.gather(*list(svc.tasks._tasks))
        await svc.stop()
        return c, svc

    c, svc = run(go())
    assert svc.sent_back == [] and c.offset_store.read_memory(MQ) == 6


def test_dropped_queue_outcome_does_not_move_the_offset():
    async def go():
        c = FakeConsumer()
        pq = ProcessQueue()

        def listener(ms, ctx):
            pq.dropped = True  # rebalance gave the queue away meanwhile
            return ConsumeResult.SUCCESS

        svc = ScriptedConcurrent(c, listener, back_ok=True)
        batch = msgs(7)
        pq.put_messages(batch)
        svc.submit(batch, pq, MQ)
        await asyncio.gather(*list(svc.tasks._tasks))
        await svc.stop()
        return c

    assert run(go()).offset_store.read_memory(MQ) == -1


def test_consume_timeout_sends_back_and_removes():
    async def go():
        c = FakeConsumer(timeout_minutes=0.0001)
        svc = ScriptedConcurrent(c, lambda ms, ctx: ConsumeResult.SUCCESS, back_ok=True)
        pq = ProcessQueue()
        batch = msgs(1, 2)
        pq.put_messages(batch)
        pq.mark_consume_start(batch[:1], at_ms=0)
        await svc.clean_expired(pq, MQ)
        await svc.stop()
        return c, svc, pq

    c, svc, pq = run(go())
    assert svc.sent_back == [(1, 3)]
    assert pq.msg_count == 1 and c.offset_store.read_memory(MQ) == 2


class ScriptedOrderly(OrderlyConsumeService):
    def __init__(self, consumer, listener, back_ok: bool = True) -> None:
        super().__init__(
            consumer, listener, lock_queue=consumer.lock_queue, on_batch_done=consumer.after_orderly_batch
        )
        self.back_ok = back_ok
        self.sent_back: list[tuple[int, int]] = []

    async def send_back(self, msg, delay_level, broker_name, max_times):
        self.sent_back.append((msg.queue_offset, delay_level))
        return self.back_ok


def test_orderly_suspends_then_sends_to_the_dlq_at_max_and_moves_on():
    async def go():
        c = FakeConsumer("BROADCASTING", max_reconsume_times=2, suspend_ms=10)
        seen: list[tuple[int, int]] = []
        locked_during_call: list[bool] = []
        pq = ProcessQueue()

        def listener(ms, ctx):
            locked_during_call.append(pq.consume_locked)
            seen.append((ms[0].queue_offset, ms[0].reconsume_times))
            return (
                ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
                if ms[0].queue_offset == 1
                else ConsumeResult.SUCCESS
            )

        svc = ScriptedOrderly(c, listener)
        batch = msgs(0, 1, 2)
        svc.submit(batch, pq, MQ, pq.put_messages(batch))
        for _ in range(200):
            if pq.msg_count == 0 and not pq.consuming:
                break
            await asyncio.sleep(0.01)
        await svc.stop()
        return c, svc, pq, seen, locked_during_call

    c, svc, pq, seen, locked = run(go())
    assert seen == [(0, 0), (1, 0), (1, 1), (1, 2), (2, 0)]
    assert svc.sent_back == [(1, -1)]  # delay level -1: straight to the DLQ
    assert c.offset_store.read_memory(MQ) == 3
    assert all(locked) and not pq.consume_locked


def test_orderly_clustering_waits_for_the_broker_lock():
    class Locking(FakeConsumer):
        def __init__(self) -> None:
            super().__init__("CLUSTERING")
            self.lock_calls = 0

        async def lock_queue(self, mq):
            self.lock_calls += 1
            return False

    async def go():
        c = Locking()
        called: list[int] = []
        svc = ScriptedOrderly(c, lambda ms, ctx: called.append(1) or ConsumeResult.SUCCESS)
        pq = ProcessQueue()  # not locked
        batch = msgs(0)
        svc.submit(batch, pq, MQ, pq.put_messages(batch))
        await asyncio.sleep(0.3)
        await svc.stop()
        return c, called

    c, called = run(go())
    assert called == [] and c.lock_calls >= 1


@pytest.mark.parametrize("module", ["allocate", "rebalance", "process_queue"])
def test_decision_modules_are_pure(module):
    tree = ast.parse((Path(__file__).resolve().parents[3] / "client" / f"{module}.py").read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {
        (n.module or "").split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.level == 0
    }
    assert not imported & {"asyncio", "socket", "threading"}


class FallbackInstance:
    """Answers CONSUMER_SEND_MSG_BACK with an error and records the direct send to the retry topic."""

    def __init__(self) -> None:
        self.sent: list = []

    async def master_addr_of(self, topic, broker_name):
        return "127.0.0.1:1"

    async def find_publish_info(self, topic):
        from pyrocketmq.client.route import TopicPublishInfo

        return TopicPublishInfo(topic, [MessageQueue(topic, "broker-a", 0)])

    async def invoke(self, addr, cmd, timeout=None):
        self.sent.append(cmd)
        if cmd.code == 36:
            return cmd.response(1, "send-back refused")
        return cmd.response(0, None, {"msgId": "AB", "queueId": 0, "queueOffset": 3})


@pytest.mark.parametrize(("delay_level", "j", "l_", "delay"), [(0, "3", "16", "5"), (-1, "2", "2", "5")])
def test_send_back_falls_back_to_the_retry_topic(delay_level, j, l_, delay):
    from pyrocketmq.remoting.message import decode_properties

    async def go():
        c = FakeConsumer()
        c.instance = FallbackInstance()
        svc = ConcurrentConsumeService(c, lambda ms: ConsumeResult.SUCCESS)
        msg = MessageExt(topic="T", body=b"x", reconsume_times=2, commitlog_offset=99,
                         properties={"UNIQ_KEY": "U1", "TAGS": "TagA", "MIN_OFFSET": "0"})
        ok = await svc.send_back(msg, delay_level, "broker-a", 16)
        await svc.stop()
        return ok, c.instance.sent

    ok, sent = run(go())
    assert ok
    back, direct = sent
    assert back.ext_fields["offset"] == "99" and back.ext_fields["delayLevel"] == str(delay_level)
    assert back.ext_fields["originMsgId"] == "U1" and back.ext_fields["maxReconsumeTimes"] == "16"
    ext = direct.ext_fields
    assert (ext["b"], ext["a"], ext["j"], ext["l"]) == ("%RETRY%cg", "CLIENT_INNER_PRODUCER", j, l_)
    props = decode_properties(ext["i"].encode())
    assert props["RETRY_TOPIC"] == "T" and props["ORIGIN_MESSAGE_ID"] == "U1" and props["DELAY"] == delay
    assert props["TAGS"] == "TagA" and "MIN_OFFSET" not in props
