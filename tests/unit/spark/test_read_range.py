"""How an executor reads one queue range: statuses of the pulls, data loss, filtered offsets.

The consumer is a scripted stand-in (no sockets): each pull answers from a table of what the
"broker" holds, so the offset-below-min rule of ``failOnDataLoss`` is checked exactly.
"""

from __future__ import annotations

import pytest

from pyrocketmq.client.pulling import PullResult, PullStatus
from pyrocketmq.remoting.message import MessageExt, Prop
from pyrocketmq.spark import broker_client
from pyrocketmq.spark.offsets import DataLossError
from pyrocketmq.spark.options import SourceOptions
from pyrocketmq.spark.planning import QueueRange


class FakeQueue:
    """A queue holding offsets ``lo..hi-1``; odd offsets are tagged B, even ones A."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi
        self.pulls: list[tuple[int, int]] = []

    async def pull(self, mq, offset, max_nums, expression="*", suspend_ms=0, timeout=None) -> PullResult:
        self.pulls.append((offset, max_nums))
        if offset < self.lo:
            return PullResult(PullStatus.OFFSET_ILLEGAL, self.lo, self.lo, self.hi)
        if offset >= self.hi:
            return PullResult(PullStatus.NO_NEW_MSG, offset, self.lo, self.hi)
        upto = min(self.hi, offset + max_nums)
        msgs = [MessageExt(topic=mq.topic, queue_id=mq.queue_id, queue_offset=o, body=str(o).encode(),
                           properties={Prop.TAGS: "B" if o % 2 else "A"}) for o in range(offset, upto)]
        wanted = [m for m in msgs if expression == "*" or m.properties[Prop.TAGS] == expression]
        if not wanted:
            return PullResult(PullStatus.NO_MATCHED_MSG, upto, self.lo, self.hi)
        return PullResult(PullStatus.FOUND, upto, self.lo, self.hi, wanted)


@pytest.fixture
def queue(monkeypatch):
    q = FakeQueue(10, 50)
    monkeypatch.setattr(broker_client, "consumer_for", lambda *a, **k: q)
    return q


def _opts(**extra) -> SourceOptions:
    return SourceOptions.from_options(
        {"nameServer": "127.0.0.1:9876", "topic": "T", "pullBatchSize": "8", **extra}
    )


def _read(opts, start, end):
    return [m.queue_offset for m in broker_client.read_range(opts, QueueRange("T", "b", 0, start, end))]


def test_reads_exactly_the_range_in_batches(queue):
    assert _read(_opts(), 12, 30) == list(range(12, 30))
    assert queue.pulls == [(12, 8), (20, 8), (28, 2)]


def test_tag_filter_skips_offsets_without_yielding(queue):
    assert _read(_opts(subExpression="B"), 10, 20) == [11, 13, 15, 17, 19]


def test_offsets_below_min_fail_with_data_loss(queue):
    with pytest.raises(DataLossError, match="T/b/0: wanted 3, oldest stored 10"):
        _read(_opts(), 3, 20)


def test_offsets_below_min_are_skipped_without_fail_on_data_loss(queue):
    assert _read(_opts(failOnDataLoss="false"), 3, 14) == [10, 11, 12, 13]
    # A range wholly below the min yields nothing.
    assert _read(_opts(failOnDataLoss="false"), 0, 5) == []


def test_planned_offsets_the_broker_no_longer_has(queue):
    with pytest.raises(DataLossError, match="offsets 50..60 were planned"):
        _read(_opts(), 45, 60)
    assert _read(_opts(failOnDataLoss="false"), 45, 60) == list(range(45, 50))
