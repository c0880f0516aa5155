"""Which of a topic's queues a 5.x SendMessage goes to: the endpoint picks it, as RocketMQ 5's proxy does.

The official clients other than Java's leave ``system_properties.queue_id`` unset (or 0), so the
endpoint does not trust it. Like Apache's proxy (``SendMessageActivity.SendMessageQueueSelector``):

* a request of one message with a message group (FIFO) goes to the queue Guava's
  ``Hashing.consistentHash(group.hashCode(), writeQueueCount)`` names, so one group keeps one queue,
  and the same one Apache's proxy would choose given the same count of write queues;
* any other request (no group, or a batch) goes to the next queue of a per-topic round-robin over the
  write queues, starting at a random one.

All messages of one request go to the same queue.
"""

from __future__ import annotations

import random

_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1
_LCG_MULTIPLIER = 2862933555777941757
"""Guava's LinearCongruentialGenerator (Hashing.consistentHash)."""


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as a
    signed 32-bit int."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & _MASK32
    return h - (1 << 32) if h >= 1 << 31 else h


def consistent_hash(key: int, buckets: int) -> int:
    """Guava's ``Hashing.consistentHash(long, int)`` (jump consistent hash): a bucket in
    ``[0, buckets)`` for ``key``, which moves for only ~1/n of keys when the count grows to n."""
    if buckets <= 0:
        raise ValueError(f"buckets must be positive: {buckets}")
    state = key & _MASK64
    candidate = 0
    while True:
        state = (_LCG_MULTIPLIER * state + 1) & _MASK64
        # Java: ((double) ((int) (state >>> 33) + 1)) / 0x1.0p31; the shifted value has 31 bits
        step = ((state >> 33) + 1) / 2.0**31
        jump = int((candidate + 1) / step)  # Java's (int) truncates, and saturates past 2^31-1
        if not 0 <= jump < buckets:
            return candidate
        candidate = jump


def group_queue(group: str, write_queues: int) -> int:
    """The queue a message group's messages go to among ``write_queues`` queues."""
    return consistent_hash(java_string_hash(group), write_queues)


class QueueChooser:
    """The queue of each SendMessage: by group hash for a lone FIFO message, else round-robin per topic."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._next: dict[str, int] = {}

    def choose(self, topic: str, write_queues: int, group: str | None = None) -> int:
        """A queue id in ``[0, write_queues)``; -1 when the topic has no write queue here (the send
        then fails the broker's own checks, or creates the topic and lets the broker pick)."""
        if write_queues <= 0:
            return -1
        if group:
            return group_queue(group, write_queues)
        index = self._next.get(topic)
        if index is None:
            index = self._rng.randrange(write_queues)
        queue = index % write_queues
        self._next[topic] = queue + 1
        return queue
