"""POP consumption state (RocketMQ 5's model behind SimpleConsumer and the 5.x PushConsumer), pure.

For each (group, topic, queue) a :class:`QueuePop` keeps three things about the queue's offsets:

- ``base``: every offset below it is done (acknowledged, dead-lettered or filtered out); it is the
  group's consumer offset, the one admin tools show lag against;
- ``next``: the first offset never handed out; each offset in ``[base, next)`` is either in flight
  (leased to a consumer until a deadline) or done (``acked``);
- ``inflight``: offset → :class:`Lease` (deadline, delivery attempt, nonce).

A receive first re-leases expired leases (the delivery attempt grows by one), then hands out new
offsets from ``next``. A receipt handle names the lease by its nonce; an ack or a change of invisible
duration with a nonce that is no longer the lease's is refused (the message was received again by
someone else, or already acknowledged). For FIFO groups a queue gives nothing new while any lease on
it is in flight and unexpired, so the next message of a message group follows only once the previous
one was acknowledged or dead-lettered (RocketMQ 5 likewise holds a FIFO queue for the whole batch).

The table is a plain JSON document (``config/popState.json``): leases keep their wall-clock
deadlines, so after a restart the in-flight messages come back once invisible for their time and the
acknowledged ones do not.
"""

from __future__ import annotations

import base64
import binascii
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Lease:
    deadline_ms: int
    attempt: int
    nonce: str


@dataclass(slots=True)
class QueuePop:
    base: int
    next: int
    acked: set[int] = field(default_factory=set)
    inflight: dict[int, Lease] = field(default_factory=dict)

    def expired(self, now_ms: int) -> list[int]:
        return sorted(o for o, lease in self.inflight.items() if lease.deadline_ms <= now_ms)

    def held(self, now_ms: int) -> bool:
        """A lease is in flight and visible to no one (FIFO: the queue gives nothing else)."""
        return any(lease.deadline_ms > now_ms for lease in self.inflight.values())

    def lease(self, offset: int, now_ms: int, invisible_ms: int, nonce: str) -> Lease:
        """Lease ``offset`` (a new one from ``next``, or an expired one again, one attempt more)."""
        old = self.inflight.get(offset)
        lease = Lease(now_ms + invisible_ms, 1 if old is None else old.attempt + 1, nonce)
        self.inflight[offset] = lease
        if offset >= self.next:
            for skipped in range(self.next, offset):  # filtered out on the way: done
                self.acked.add(skipped)
            self.next = offset + 1
            self._advance()
        return lease

    def skip_to(self, offset: int) -> None:
        """Everything from ``next`` up to ``offset`` was scanned and matched nothing: done."""
        for skipped in range(self.next, offset):
            self.acked.add(skipped)
        self.next = max(self.next, offset)
        self._advance()

    def ack(self, offset: int, nonce: str) -> bool:
        lease = self.inflight.get(offset)
        if lease is None or lease.nonce != nonce:
            return False
        self.done(offset)
        return True

    def done(self, offset: int) -> None:
        self.inflight.pop(offset, None)
        if offset >= self.base:
            self.acked.add(offset)
        self._advance()

    def change(self, offset: int, nonce: str, now_ms: int, invisible_ms: int, new_nonce: str) -> Lease | None:
        """A new deadline (and nonce) for a lease still held under ``nonce``; None when it is not."""
        lease = self.inflight.get(offset)
        if lease is None or lease.nonce != nonce:
            return None
        lease.deadline_ms = now_ms + invisible_ms
        lease.nonce = new_nonce
        return lease

    def restart_at(self, offset: int) -> None:
        """The queue's messages below ``offset`` are gone (retention) or were skipped by an admin."""
        if offset > self.base:
            self.acked = {o for o in self.acked if o >= offset}
            self.inflight = {o: lease for o, lease in self.inflight.items() if o >= offset}
            self.base = offset
            self.next = max(self.next, offset)
            self._advance()

    def _advance(self) -> None:
        while self.base in self.acked:
            self.acked.discard(self.base)
            self.base += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "next": self.next,
            "acked": sorted(self.acked),
            "inflight": {
                str(o): [lease.deadline_ms, lease.attempt, lease.nonce] for o, lease in self.inflight.items()
            },
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QueuePop:
        inflight = {
            int(o): Lease(int(v[0]), int(v[1]), str(v[2])) for o, v in (d.get("inflight") or {}).items()
        }
        return cls(int(d["base"]), int(d["next"]), {int(o) for o in d.get("acked") or ()}, inflight)


Key = tuple[str, str, int]  # (group, topic, queue id)


class PopTable:
    def __init__(self) -> None:
        self.queues: dict[Key, QueuePop] = {}
        self.dirty = False
        self._nonce = itertools.count(1)
        self._epoch = 0

    def get(self, key: Key) -> QueuePop | None:
        return self.queues.get(key)

    def open(self, key: Key, start: int) -> QueuePop:
        q = self.queues.get(key)
        if q is None:
            q = self.queues[key] = QueuePop(start, start)
            self.dirty = True
        return q

    def nonce(self, now_ms: int) -> str:
        """Unique within this table's life and across restarts (the start time leads)."""
        if not self._epoch:
            self._epoch = now_ms
        return f"{self._epoch:x}.{next(self._nonce):x}"

    def inflight_count(self) -> int:
        return sum(len(q.inflight) for q in self.queues.values())

    def groups_of(self, topic: str) -> Iterator[tuple[str, int, QueuePop]]:
        for (group, t, qid), q in self.queues.items():
            if t == topic:
                yield group, qid, q

    def to_dict(self) -> dict[str, Any]:
        return {"version": 1, "queues": [{"group": g, "topic": t, "queueId": q, **pop.to_dict()}
                                         for (g, t, q), pop in sorted(self.queues.items())]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PopTable:
        table = cls()
        for item in d.get("queues") or ():
            table.queues[(str(item["group"]), str(item["topic"]), int(item["queueId"]))] = QueuePop.from_dict(
                item
            )
        return table


class BadHandle(ValueError):
    """A receipt handle this broker did not make."""


@dataclass(frozen=True, slots=True)
class Handle:
    """What a receipt handle carries: the lease it names and the broker that gave it."""

    topic: str
    queue_id: int
    offset: int
    nonce: str
    broker: str

    def encode(self) -> str:
        raw = "\x00".join((self.topic, str(self.queue_id), str(self.offset), self.nonce, self.broker))
        return "P1" + base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Handle:
        if not text.startswith("P1"):
            raise BadHandle(f"receipt handle {text[:40]!r} was not made by this broker")
        body = text[2:]
        try:
            parts = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode().split("\x00")
            topic, qid, offset, nonce, broker = parts
            return cls(topic, int(qid), int(offset), nonce, broker)
        except (ValueError, binascii.Error, UnicodeDecodeError) as e:
            raise BadHandle(f"receipt handle {text[:40]!r} does not decode: {e}") from None
