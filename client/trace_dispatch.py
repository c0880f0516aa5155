"""Sending a producer's trace records (``Pub``) to the trace topic in the background, as Apache's
``AsyncTraceDispatcher`` does: records gathered for up to ``FLUSH_S`` (or ``BATCH`` of them) go as one
message through an internal producer, keyed by the traced ids so ``queryMsgTraceById`` finds them.
Losing a trace never fails a send: a full queue drops records (counted), a failed send is logged."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from .message import Message

log = logging.getLogger("pyrocketmq.client")
FLUSH_S = 0.2
BATCH = 32
MAX_QUEUED = 10_000
MAX_BODY = 128 * 1024


class TraceItem(Protocol):
    def encode(self) -> str: ...

    def trace_keys(self) -> list[str]: ...


class _Sender(Protocol):
    """The internal producer (started; it traces nothing itself)."""

    async def send(self, msg: Message) -> Any: ...

    async def shutdown(self) -> None: ...


class TraceDispatcher:
    def __init__(self, producer: _Sender, topic: str) -> None:
        self.topic = topic
        self.queue: asyncio.Queue[TraceItem] = asyncio.Queue(MAX_QUEUED)
        self.dropped = 0
        self._producer: _Sender | None = producer
        self._held: list[TraceItem] = []
        self._task: asyncio.Task[None] | None = asyncio.get_running_loop().create_task(self._run())

    def add(self, record: TraceItem) -> None:
        try:
            self.queue.put_nowait(record)
        except asyncio.QueueFull:
            self.dropped += 1

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._flush_all()
        producer, self._producer = self._producer, None
        if producer is not None:
            await producer.shutdown()

    async def _run(self) -> None:
        while True:
            self._held = [await self.queue.get()]  # a close during the wait below still sends it
            await asyncio.sleep(FLUSH_S)
            batch, self._held = [*self._held, *self._take(BATCH - 1)], []
            await self._send(batch)

    def _take(self, n: int) -> list[TraceItem]:
        out: list[TraceItem] = []
        while len(out) < n and not self.queue.empty():
            out.append(self.queue.get_nowait())
        return out

    async def _flush_all(self) -> None:
        held, self._held = self._held, []
        if held:
            await self._send(held)
        while not self.queue.empty():
            await self._send(self._take(BATCH))

    async def _send(self, records: list[TraceItem]) -> None:
        if self._producer is None:
            return
        body = "".join(r.encode() for r in records).encode()[:MAX_BODY]
        keys = sorted({k for r in records for k in r.trace_keys()})
        try:
            await self._producer.send(Message(self.topic, body, keys=keys))
        except Exception as e:  # noqa: BLE001 — traces are best effort: the traced sends already succeeded
            log.warning("could not send %d trace record(s) to %s: %s", len(records), self.topic, e)
