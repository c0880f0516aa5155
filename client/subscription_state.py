"""What a consumer subscribes to and owns right now: one state object, no I/O.

:class:`SubscriptionState` is the meeting point of a consumer's parts (as aiokafka's
``SubscriptionState``): the push consumer's rebalance service or the lite pull consumer's
``assign``/``seek`` write the assignment, the fetcher (:mod:`.pull_service`) reads it before every
pull, the push consumer's consume services only see the process queues they are handed. Nothing
here awaits, so every question about it ("do I still own this queue?", "which parked queues can be
unlocked?") is answered in one step, between two awaits of its callers.

- **Subscriptions**: topic → parsed tag expression; clustering push consumers also read
  ``%RETRY%<group>`` (``read_retry``).
  ``sub_version`` is the version sent with them in heartbeats and pulls.
- **Routes**: the queues each subscribed topic has, as last learned from the name server.
- **Assignment**: the process-queue table (one :class:`~.process_queue.ProcessQueue` per owned
  queue) and, in orderly clustering mode, *parked* queues: removed from the table, but still
  locked on the broker until their last listener call ends. *Paused* queues (lite pull consumer)
  stay owned but are not pulled.

Invariants: a queue is in the table or parked, never both; a process queue that left the table is
dropped and never comes back (a queue owned again gets a new one).
"""

from __future__ import annotations

import time

from pyrocketmq.remoting.body import MessageQueue

from .process_queue import ProcessQueue
from .pulling import Subscription, parse_expression
from .rebalance import CLUSTERING, retry_topic


class SubscriptionState:
    """Subscriptions, routes and the assignment of one consumer (see the module docstring).

    Example::

        state = SubscriptionState("cg", "CLUSTERING")
        state.subscribe("T", parse_expression("TagA"))
        state.assign(mq, ProcessQueue())
        state.owns(mq, pq)          # True while pq is the process queue of mq
        state.unassign(mq)          # the process queue, now dropped
    """

    def __init__(self, group: str, message_model: str = CLUSTERING, *, read_retry: bool = True) -> None:
        self.group = group
        self.clustering = message_model == CLUSTERING
        self.read_retry = read_retry and self.clustering
        self.sub_version = int(time.time() * 1000)
        self._subs: dict[str, Subscription] = {}
        self.routes: dict[str, list[MessageQueue]] = {}
        self.table: dict[MessageQueue, ProcessQueue] = {}
        self.parked: dict[MessageQueue, ProcessQueue] = {}
        self.paused: set[MessageQueue] = set()

    # -- subscriptions ------------------------------------------------------------------------------
    def subscribe(self, topic: str, sub: Subscription) -> None:
        self._subs[topic] = sub

    def unsubscribe(self, topic: str) -> None:
        self._subs.pop(topic, None)

    def subscriptions(self) -> dict[str, Subscription]:
        """Every topic read, ``%RETRY%<group>`` included with ``read_retry``."""
        subs = dict(self._subs)
        if self.read_retry:
            subs.setdefault(retry_topic(self.group), parse_expression("*"))
        return subs

    def subscription(self, topic: str) -> Subscription | None:
        if topic in self._subs:
            return self._subs[topic]
        return self.subscriptions().get(topic)

    # -- assignment ---------------------------------------------------------------------------------
    def owns(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """True while ``pq`` is the process queue of ``mq`` (not dropped, not replaced)."""
        return self.table.get(mq) is pq and not pq.dropped

    def assign(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        self.parked.pop(mq, None)
        self.table[mq] = pq

    def unassign(self, mq: MessageQueue, *, park: bool = False) -> ProcessQueue | None:
        """Take ``mq`` out of the table and drop its process queue; ``park`` keeps it until
        :meth:`unlockable` lets it go (orderly clustering: the broker lock is still held)."""
        pq = self.table.pop(mq, None)
        if pq is None:
            return None
        pq.dropped = True
        if park:
            self.parked[mq] = pq
        return pq

    def unpark(self, mq: MessageQueue) -> ProcessQueue | None:
        return self.parked.pop(mq, None)

    def unlockable(self) -> list[MessageQueue]:
        """Parked queues whose last listener call has ended, taken out of the parked set."""
        done = [mq for mq, pq in self.parked.items() if not pq.consume_locked and mq not in self.table]
        for mq in done:
            del self.parked[mq]
        return sorted(done)

    def owned(self) -> set[MessageQueue]:
        """Queues whose offsets are ours to persist: the table and the parked queues."""
        return set(self.table) | set(self.parked)

    def of_topic(self, topic: str) -> dict[MessageQueue, ProcessQueue]:
        return {mq: pq for mq, pq in self.table.items() if mq.topic == topic}

    def stalled(self, expiry_ms: int) -> list[MessageQueue]:
        """Owned queues not pulled for ``expiry_ms``."""
        return [mq for mq, pq in self.table.items() if pq.pull_expired(expiry_ms)]

    def assignment(self) -> list[MessageQueue]:
        return sorted(self.table)

    def pause(self, mq: MessageQueue) -> None:
        self.paused.add(mq)

    def resume(self, mq: MessageQueue) -> None:
        self.paused.discard(mq)

    def clear(self) -> None:
        """Drop every process queue and forget the assignment (shutdown)."""
        for pq in (*self.table.values(), *self.parked.values()):
            pq.dropped = True
        self.table.clear()
        self.parked.clear()
