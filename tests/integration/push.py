"""Helpers for push-consumer integration tests: topic setup, a steady producer, collectors, waits.

Every consumer made here gets its own ``instance_name`` (so its own client id); every task started
here is stopped by the test that started it (``Steady.stop``, ``PushConsumer.shutdown``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pyrocketmq.client import (
    Admin,
    ClientSettings,
    ConsumeResult,
    Message,
    Producer,
    PushConsumer,
    PushConsumerSettings,
    RebalanceSettings,
)
from pyrocketmq.remoting.message import MessageExt


async def create_topic(
    namesrv: str, broker: str, topic: str, queues: int = 8, *, order: bool = False
) -> None:
    async with Admin(namesrv) as admin:
        await admin.create_topic(
            topic, broker_addr=broker, read_queues=queues, write_queues=queues, order=order
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                route = await admin.topic_route(topic)
                if route.queue_datas:
                    return
            except Exception:
                if time.monotonic() > deadline:
                    raise
            await asyncio.sleep(0.1)


async def wait_until(cond: Callable[[], bool | Awaitable[bool]], timeout: float, what: str) -> None:
    """Poll ``cond`` until it holds; fail with ``what`` after ``timeout`` seconds (a bound, not a speed)."""
    deadline = time.monotonic() + timeout
    while True:
        ok = cond()
        if not isinstance(ok, bool):
            ok = await ok
        if ok:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.1)


@dataclass
class Collector:
    """A concurrent listener that records every message it gets (and answers SUCCESS)."""

    name: str
    messages: list[MessageExt] = field(default_factory=list)

    def __call__(self, msgs: list[MessageExt], ctx) -> ConsumeResult:
        self.messages.extend(msgs)
        return ConsumeResult.SUCCESS

    def bodies(self, topic: str | None = None) -> list[str]:
        return [m.body.decode() for m in self.messages if topic is None or m.topic == topic]


def consumer(
    namesrv: str,
    group: str,
    name: str,
    topic: str,
    listener,
    *,
    orderly: bool = False,
    settings: PushConsumerSettings | None = None,
) -> PushConsumer:
    s = settings or PushConsumerSettings(consume_from="first", rebalance=RebalanceSettings(interval=2.0))
    c = PushConsumer(group, namesrv, s, ClientSettings(instance_name=name, client_ip="127.0.0.1"))
    c.subscribe(topic, "*")
    c.register_listener(listener, orderly=orderly)
    return c


class Steady:
    """A producer sending ``body_fn(i)`` every ``interval`` seconds until stopped."""

    def __init__(
        self, namesrv: str, topic: str, interval: float = 0.02, *, key_fn=None, body_fn=None
    ) -> None:
        self.producer = Producer(
            "steady_pg", namesrv, client=ClientSettings(instance_name="steady", client_ip="127.0.0.1")
        )
        self.topic, self.interval = topic, interval
        self.key_fn = key_fn
        self.body_fn = body_fn or (lambda i: f"m{i}")
        self.sent: list[str] = []
        self._task: asyncio.Task[None] | None = None
        self._stop = False

    async def start(self) -> Steady:
        await self.producer.start()
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        i = 0
        while not self._stop:
            body = self.body_fn(i)
            key = self.key_fn(i) if self.key_fn else None
            await self.producer.send(Message(self.topic, body.encode()), sharding_key=key)
            self.sent.append(body)
            i += 1
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        self._stop = True
        task, self._task = self._task, None
        if task is not None:
            await task
        await self.producer.shutdown()
