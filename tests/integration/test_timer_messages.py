"""Timer messages (RocketMQ 5's any-millisecond delivery) through a real broker process: sent by our
producer with ``deliver_time_ms``, each reaches a push consumer no earlier than its time and soon
after it; one still pending when the broker stops is delivered after the restart, and the ones
already delivered are not delivered again; a timer too far ahead is refused with the reason."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import pytest

from pyrocketmq.client import ConsumeResult, Message, MQBrokerError, Producer

from .procs import start_broker
from .push import consumer, create_topic, wait_until

TOPIC = "TimerTopic"


@dataclass
class Arrivals:
    at: dict[str, list[int]] = field(default_factory=dict)

    def __call__(self, msgs, ctx) -> ConsumeResult:
        now = time.time_ns() // 1_000_000
        for m in msgs:
            self.at.setdefault(m.body.decode(), []).append(now)
        return ConsumeResult.SUCCESS


def test_timer_messages_arrive_at_their_millisecond_and_survive_a_broker_restart(tmp_path, namesrv):
    broker = start_broker(tmp_path, namesrv.addr, timerMaxDelaySec=60, flushDelayOffsetInterval=500)
    arrivals = Arrivals()
    due: dict[str, int] = {}

    async def send_and_watch():
        await create_topic(namesrv.addr, broker.addr, TOPIC, queues=4)
        c = consumer(namesrv.addr, "GID_TIMER", "timer-c", TOPIC, arrivals)
        await c.start()
        try:
            async with Producer("timer_pg", namesrv.addr) as p:
                await p.send(Message(TOPIC, b"warm-up"))
                await wait_until(lambda: "warm-up" in arrivals.at, 30, "the consumer running")
                base = time.time_ns() // 1_000_000
                for name, after in (
                    ("t1500", 1500),
                    ("t300", 300),
                    ("t2200", 2200),
                    ("t900", 900),
                    ("t777", 777),
                    ("pending", 8_000),
                ):
                    due[name] = base + after
                    await p.send(Message(TOPIC, name.encode(), deliver_time_ms=due[name]))
                with pytest.raises(MQBrokerError, match="timer message illegal.*timerMaxDelaySec"):
                    await p.send(Message(TOPIC, b"too-far", deliver_time_ms=base + 61_000))
            await wait_until(
                lambda: all(k in arrivals.at for k in ("t300", "t777", "t900", "t1500", "t2200")),
                30,
                "the short timers delivered",
            )
            assert "pending" not in arrivals.at
            await c.persist_offsets(sync=True)
        finally:
            await c.shutdown()

    try:
        asyncio.run(send_and_watch())
    except BaseException:
        broker.stop()
        raise
    late = {k: arrivals.at[k][0] - due[k] for k in ("t300", "t777", "t900", "t1500", "t2200")}
    print(f"timer lateness (ms, consumer arrival − due time): {late}")
    assert broker.stop() == 0
    assert all(v >= 0 for v in late.values()), late  # never early
    assert max(late.values()) < 2_500, late  # a bound for the test, not a speed claim

    broker = start_broker(
        tmp_path, namesrv.addr, port=broker.port, timerMaxDelaySec=60, flushDelayOffsetInterval=500
    )
    try:
        async def after_restart():
            c = consumer(namesrv.addr, "GID_TIMER", "timer-c2", TOPIC, arrivals)
            await c.start()
            try:
                await wait_until(
                    lambda: "pending" in arrivals.at, 30, "the pending timer delivered after the restart"
                )
                await asyncio.sleep(1.0)
            finally:
                await c.shutdown()

        asyncio.run(after_restart())
    finally:
        broker.stop()
    assert arrivals.at["pending"][0] >= due["pending"]
    assert {k: len(v) for k, v in arrivals.at.items()} == dict.fromkeys(
        ("warm-up", "t300", "t777", "t900", "t1500", "t2200", "pending"), 1)
