"""Queue allocation strategies: which of a topic's queues one consumer of a group takes.

Every strategy is a pure function ``(consumer_group, current_id, queues, consumer_ids) -> queues``
with the results of Apache RocketMQ 4.9's ``AllocateMessageQueueStrategy`` implementations, so
Python and Java consumers of one group split a topic without overlap or gaps:

- :func:`allocate_averagely` (``AllocateMessageQueueAveragely``, the default): consecutive blocks;
  the first ``len(queues) % len(ids)`` consumers take one queue more.
- :func:`allocate_averagely_by_circle` (``AllocateMessageQueueAveragelyByCircle``): queue ``i`` goes
  to consumer ``i % len(ids)``.
- :func:`allocate_consistent_hash` (``AllocateMessageQueueConsistentHash``): an MD5 ring with
  ``virtual_nodes`` points per consumer (key ``clientId-i``); a queue goes to the first point at or
  after the hash of its Java ``toString()``.
- :func:`allocate_by_config` (``AllocateMessageQueueByConfig``): a fixed list, whoever asks.

Invariants: callers pass ``queues`` and ``consumer_ids`` sorted (Java sorts both before
allocating; :func:`pick` does it too); a consumer missing from ``consumer_ids`` gets nothing;
over the members of a group, the averagely strategies and consistent hash assign every queue
exactly once.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Sequence

from pyrocketmq.remoting.body import MessageQueue

Strategy = Callable[[str, str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]


def _index(current_id: str, consumer_ids: Sequence[str], queues: Sequence[MessageQueue]) -> int | None:
    if not current_id or not queues or not consumer_ids:
        return None
    try:
        return list(consumer_ids).index(current_id)
    except ValueError:
        return None


def allocate_averagely(
    group: str, current_id: str, queues: Sequence[MessageQueue], consumer_ids: Sequence[str]
) -> list[MessageQueue]:
    """Consecutive blocks of queues, the first ones one longer when the split is uneven.

    >>> qs = [MessageQueue("T", "b", i) for i in range(8)]
    >>> [q.queue_id for q in allocate_averagely("g", "c1", qs, ["c0", "c1", "c2"])]
    [3, 4, 5]
    """
    index = _index(current_id, consumer_ids, queues)
    if index is None:
        return []
    n, m = len(queues), len(consumer_ids)
    mod = n % m
    if n <= m:
        size = 1
    elif mod > 0 and index < mod:
        size = n // m + 1
    else:
        size = n // m
    start = index * size if (mod > 0 and index < mod) else index * size + mod
    count = min(size, n - start)
    return [queues[(start + i) % n] for i in range(max(0, count))]


def allocate_averagely_by_circle(
    group: str, current_id: str, queues: Sequence[MessageQueue], consumer_ids: Sequence[str]
) -> list[MessageQueue]:
    """Queues dealt out like cards: queue ``i`` to consumer ``i % len(consumer_ids)``.

    >>> qs = [MessageQueue("T", "b", i) for i in range(8)]
    >>> [q.queue_id for q in allocate_averagely_by_circle("g", "c1", qs, ["c0", "c1", "c2"])]
    [1, 4, 7]
    """
    index = _index(current_id, consumer_ids, queues)
    if index is None:
        return []
    m = len(consumer_ids)
    return [queues[i] for i in range(index, len(queues)) if i % m == index]


def java_mq_string(mq: MessageQueue) -> str:
    """Java ``MessageQueue.toString()``, the key a queue is hashed by on the consistent-hash ring."""
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def md5_hash(key: str) -> int:
    """Java ``ConsistentHashRouter.MD5Hash``: the first four digest bytes as an unsigned 32-bit number."""
    return int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "big")


class HashRing:
    """The consistent-hash ring of one set of consumers (points sorted by hash; a later point with
    the same hash replaces an earlier one, as in Java's ``TreeMap.put``)."""

    __slots__ = ("_hashes", "_owners")

    def __init__(self, consumer_ids: Sequence[str], virtual_nodes: int = 10) -> None:
        ring: dict[int, str] = {}
        for cid in consumer_ids:
            for i in range(virtual_nodes):
                ring[md5_hash(f"{cid}-{i}")] = cid
        self._hashes = sorted(ring)
        self._owners = [ring[h] for h in self._hashes]

    def route(self, key: str) -> str | None:
        if not self._hashes:
            return None
        i = bisect.bisect_left(self._hashes, md5_hash(key))
        return self._owners[i if i < len(self._hashes) else 0]


def allocate_consistent_hash(
    group: str,
    current_id: str,
    queues: Sequence[MessageQueue],
    consumer_ids: Sequence[str],
    virtual_nodes: int = 10,
) -> list[MessageQueue]:
    """The queues whose ring position falls to ``current_id``; few move when members change."""
    if _index(current_id, consumer_ids, queues) is None:
        return []
    ring = HashRing(consumer_ids, virtual_nodes)
    return [mq for mq in queues if ring.route(java_mq_string(mq)) == current_id]


def allocate_by_config(configured: Sequence[MessageQueue]) -> Strategy:
    """A strategy that always answers ``configured`` (each consumer is told its queues by hand)."""
    fixed = list(configured)

    def by_config(
        group: str, current_id: str, queues: Sequence[MessageQueue], consumer_ids: Sequence[str]
    ) -> list[MessageQueue]:
        return list(fixed)

    return by_config


STRATEGY_NAMES = ("averagely", "averagely_by_circle", "consistent_hash", "config")


def strategy_for(
    name: str, *, config_queues: Sequence[MessageQueue] = (), virtual_nodes: int = 10
) -> Strategy:
    """The strategy called ``name`` (see :data:`STRATEGY_NAMES`); ValueError for an unknown name.

    >>> strategy_for("averagely") is allocate_averagely
    True
    """
    if name == "averagely":
        return allocate_averagely
    if name == "averagely_by_circle":
        return allocate_averagely_by_circle
    if name == "consistent_hash":
        return lambda g, c, q, ids: allocate_consistent_hash(g, c, q, ids, virtual_nodes)
    if name == "config":
        return allocate_by_config(config_queues)
    raise ValueError(f"unknown allocation strategy {name!r}: use one of {', '.join(STRATEGY_NAMES)}")


def pick(
    strategy: Strategy,
    group: str,
    current_id: str,
    queues: Sequence[MessageQueue],
    consumer_ids: Sequence[str],
) -> list[MessageQueue]:
    """Sort queues and consumer ids as Java does, then let ``strategy`` choose."""
    return strategy(group, current_id, sorted(set(queues)), sorted(set(consumer_ids)))
