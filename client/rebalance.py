"""Rebalance decisions of a push consumer (Java ``RebalanceImpl``), as pure functions.

A rebalance runs at start, every 20 s and at once when a broker sends NOTIFY_CONSUMER_IDS_CHANGED.
For every subscribed topic (``%RETRY%<group>`` included for clustering consumers) it:

1. computes the queues this consumer should own — :func:`allocate_topic`: all readable queues in
   BROADCASTING; in CLUSTERING, the strategy's share of the sorted queues among the sorted consumer
   ids the broker reports (GET_CONSUMER_LIST_BY_GROUP);
2. compares them with the process-queue table — :func:`plan`: queues no longer allocated are
   removed (their offsets persisted, orderly locks released), queues whose pulls stalled for 120 s
   are replaced, new queues get a process queue and a pull request;
3. starts each new queue where :func:`start_position` says.

The I/O around these steps lives in :mod:`.push_consumer`; nothing here awaits.

Invariants: a queue appears at most once in a plan's ``add`` or ``remove``; ``add`` and
``remove`` never intersect, except for a queue being replaced (``stalled``), which is in both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.names import RETRY_GROUP_TOPIC_PREFIX as RETRY_PREFIX

from .allocate import Strategy, allocate_averagely, pick  # noqa: F401 (doctest)

CLUSTERING = "CLUSTERING"
BROADCASTING = "BROADCASTING"


def retry_topic(group: str) -> str:
    """``%RETRY%<group>``: where a group's failed messages come back.

    >>> retry_topic("cg")
    '%RETRY%cg'
    """
    return RETRY_PREFIX + group


def allocate_topic(
    model: str,
    strategy: Strategy,
    group: str,
    client_id: str,
    queues: Iterable[MessageQueue],
    consumer_ids: Sequence[str] | None,
) -> list[MessageQueue] | None:
    """The queues of one topic this consumer should own; None when it cannot be decided now
    (clustering without a member list), in which case the table is left alone.

    >>> qs = [MessageQueue("T", "b", i) for i in range(4)]
    >>> [q.queue_id for q in allocate_topic("CLUSTERING", allocate_averagely, "g", "c2", qs, ["c2", "c1"])]
    [2, 3]
    """
    qs = sorted(set(queues))
    if model == BROADCASTING:
        return qs
    if not consumer_ids:
        return None
    return pick(strategy, group, client_id, qs, consumer_ids)


@dataclass(frozen=True, slots=True)
class RebalancePlan:
    """What to change in the process-queue table for one topic."""

    add: tuple[MessageQueue, ...] = ()
    remove: tuple[MessageQueue, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.add or self.remove)


def plan(
    topic: str,
    owned: Iterable[MessageQueue],
    allocated: Iterable[MessageQueue],
    stalled: Iterable[MessageQueue] = (),
) -> RebalancePlan:
    """Compare the owned queues of ``topic`` with the allocated ones.

    ``stalled`` are owned queues whose pulls have not run for too long (Java's pull expiry): they
    are removed and, if still allocated, added again with a fresh process queue.

    >>> mq = lambda i: MessageQueue("T", "b", i)
    >>> p = plan("T", [mq(0), mq(1)], [mq(1), mq(2)])
    >>> [q.queue_id for q in p.add], [q.queue_id for q in p.remove]
    ([2], [0])
    """
    mine = {mq for mq in owned if mq.topic == topic}
    want = {mq for mq in allocated if mq.topic == topic}
    stuck = {mq for mq in stalled if mq in mine}
    remove = (mine - want) | stuck
    add = (want - mine) | (stuck & want)
    return RebalancePlan(add=tuple(sorted(add)), remove=tuple(sorted(remove)))


def not_subscribed(owned: Iterable[MessageQueue], topics: set[str]) -> list[MessageQueue]:
    """Owned queues of topics no longer subscribed (Java ``truncateMessageQueueNotMyTopic``)."""
    return sorted(mq for mq in owned if mq.topic not in topics)


def start_position(consume_from: str, stored: int, topic: str) -> int | str:
    """Where a newly owned queue starts: the stored offset when there is one (``stored`` ≥ 0),
    else per ``consume_from`` — an offset, or ``"max"`` / ``"min"`` / ``"timestamp"`` to look up.

    As Java's ``computePullFromWhere``: retry topics start at their beginning under LAST and at
    their end under TIMESTAMP.

    >>> (start_position("last", 17, "T"), start_position("last", -1, "T"),
    ...  start_position("last", -1, "%RETRY%g"))
    (17, 'max', 0)
    >>> start_position("first", -1, "T"), start_position("timestamp", -1, "T")
    ('min', 'timestamp')
    """
    if stored >= 0:
        return stored
    is_retry = topic.startswith(RETRY_PREFIX)
    if consume_from == "first":
        return "min"
    if consume_from == "timestamp":
        return "max" if is_retry else "timestamp"
    return 0 if is_retry else "max"


def rebalance_wait(
    subscribed: Iterable[str], routed: dict[str, list[MessageQueue]], interval: float
) -> float:
    """Seconds to the next rebalance: ``interval``, or 1 s while a subscribed topic has no route yet
    (a topic a producer has just created reaches the name servers within moments).

    >>> rebalance_wait(["T", "%RETRY%g"], {"T": []}, 20.0), rebalance_wait(["T"], {"T": ["q"]}, 20.0)
    (1.0, 20.0)
    """
    waiting = any(not routed.get(t) for t in subscribed if not t.startswith(RETRY_PREFIX))
    return min(1.0, interval) if waiting else interval
