"""Planning reads: per-queue offset ranges, and admission control for micro-batches.

Pure: no Spark, no sockets.

- A :class:`QueueRange` is one queue's ``[start, end)``; Spark reads one range per task (the
  partition objects of :mod:`.source` carry one range each, so they pickle small).
- :func:`admit` is the admission control behind ``maxRecordsPerBatch`` (Spark's
  ``latestOffset(start, ReadMaxRows(n))``): it splits a budget of ``n`` offsets over the queues in
  proportion to their backlog, so no queue starves. Each consume-queue offset is one message, so a
  batch never holds more than ``n`` rows (fewer when a tag filter drops some).
- :func:`wait_for_more` is the rule behind ``minOffsetsPerTrigger`` / ``maxTriggerDelay`` (the
  Kafka source's): hold the next batch back while fewer offsets than the minimum are new, until
  the delay has passed since the last batch.

Invariants: ``start <= admit(...) <= latest`` for every queue; the admitted total is
``min(n, backlog)``; the split depends only on its inputs (replaying a batch plans it again the
same way).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyrocketmq.remoting.body import MessageQueue

from .offsets import Offsets


@dataclass(frozen=True, slots=True, order=True)
class QueueRange:
    """Offsets ``[start, end)`` of one queue: what one Spark task reads.

    >>> r = QueueRange("Orders", "broker-a", 0, 10, 25)
    >>> r.count, r.mq
    (15, MessageQueue(topic='Orders', broker_name='broker-a', queue_id=0))
    """

    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int

    @property
    def mq(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker_name, self.queue_id)

    @property
    def count(self) -> int:
        return max(0, self.end - self.start)


def plan_ranges(start: Mapping[MessageQueue, int], end: Mapping[MessageQueue, int],
                max_per_range: int | None = None) -> list[QueueRange]:
    """The non-empty ranges between two offset tables, sorted; ranges longer than
    ``max_per_range`` are cut into pieces (more tasks for one busy queue).

    A queue that is in ``end`` but not in ``start`` appeared since the last batch; its first
    range comes in the next batch (see :func:`admit`), so it is skipped here.

    >>> a, b = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
    >>> plan_ranges({a: 0, b: 5}, {a: 3, b: 5})
    [QueueRange(topic='T', broker_name='b', queue_id=0, start=0, end=3)]
    >>> [(r.start, r.end) for r in plan_ranges({a: 0}, {a: 5}, max_per_range=2)]
    [(0, 2), (2, 4), (4, 5)]
    """
    out: list[QueueRange] = []
    for mq in sorted(end):
        s = start.get(mq)
        e = end[mq]
        if s is None or e <= s:
            continue
        step = max_per_range if max_per_range and max_per_range > 0 else e - s
        for lo in range(s, e, step):
            out.append(QueueRange(mq.topic, mq.broker_name, mq.queue_id, lo, min(e, lo + step)))
    return out


def backlog(start: Mapping[MessageQueue, int], latest: Mapping[MessageQueue, int]) -> int:
    """Offsets between ``start`` and ``latest`` over the queues both know."""
    return sum(max(0, latest[mq] - off) for mq, off in start.items() if mq in latest)


def admit(start: Mapping[MessageQueue, int], latest: Mapping[MessageQueue, int], max_records: int | None,
          new_queue_start: Mapping[MessageQueue, int] | None = None) -> Offsets:
    """The end offsets of the next batch: ``latest``, capped to ``max_records`` offsets in total.

    The budget is split in proportion to each queue's backlog (largest remainders get the
    leftover units, ties broken by queue order). Queues in ``start`` but not in ``latest`` (their
    broker is briefly gone from the route) keep their offset; queues in ``latest`` but not in
    ``start`` are new and enter at ``new_queue_start`` (their min offset) with no records yet.

    >>> a, b = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
    >>> admit({a: 0, b: 0}, {a: 30, b: 10}, 8) == {a: 6, b: 2}
    True
    >>> admit({a: 0, b: 0}, {a: 30, b: 10}, None)[a]
    30
    """
    if max_records is not None and max_records < 0:
        raise ValueError(f"max_records must be >= 0, got {max_records}")
    avail = {mq: max(0, latest[mq] - off) if mq in latest else 0 for mq, off in start.items()}
    total = sum(avail.values())
    out: Offsets = {}
    if max_records is None or total <= max_records:
        take = avail
    else:
        take = {}
        remainders: list[tuple[int, MessageQueue]] = []
        for mq in sorted(avail):
            share, rem = divmod(avail[mq] * max_records, total)
            take[mq] = share
            remainders.append((rem, mq))
        left = max_records - sum(take.values())
        # Largest remainder first; ties in queue order (a stable sort over the sorted queues).
        for rem, mq in sorted(remainders, key=lambda x: -x[0]):
            if left <= 0:
                break
            if take[mq] < avail[mq] and rem > 0:
                take[mq] += 1
                left -= 1
    for mq, off in start.items():
        out[mq] = off + take.get(mq, 0)
    for mq in latest:
        if mq not in out:
            out[mq] = (new_queue_start or {}).get(mq, latest[mq])
    return dict(sorted(out.items()))


def wait_for_more(available: int, min_records: int | None, waited_ms: float, max_delay_ms: int) -> bool:
    """Whether to hold the next micro-batch back: ``available`` new offsets are fewer than
    ``min_records`` and only ``waited_ms`` of ``max_delay_ms`` passed since the last batch (or the
    query's start). (With nothing new, not waiting still makes no batch: the end is the start.)

    >>> wait_for_more(3, 10, 500, 2000), wait_for_more(3, 10, 2000, 2000), wait_for_more(10, 10, 0, 2000)
    (True, False, False)
    >>> wait_for_more(3, None, 0, 2000)
    False
    """
    if min_records is None or available >= min_records:
        return False
    return waited_ms < max_delay_ms
