"""Broker traffic counters (messages and bytes in/out, in total and per topic), with a rough rate
for runtime info. Plain integers bumped on the event loop; the metrics collector reads them at
scrape time (:mod:`.metrics`)."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections import defaultdict

from pyrocketmq.metrics import MESSAGE_SIZE_BUCKETS, LatencyRecorder

from .stats_items import GROUP_GET_NUMS, GROUP_GET_SIZE, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, StatsItem, StatsTable


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class BrokerStats:
    def __init__(self) -> None:
        self.put_count = 0
        self.put_bytes = 0
        self.get_count = 0
        self.get_bytes = 0
        self.put_by_topic: dict[tuple[str, str], int] = defaultdict(int)
        """Messages stored, per (topic, message type: ``normal``, ``fifo``, ``delay``, ``transaction``)."""
        self.put_bytes_by_topic: dict[tuple[str, str], int] = defaultdict(int)
        self.get_by_topic: dict[tuple[str, str], int] = defaultdict(int)
        """Messages handed out by pulls, per (topic, consumer group)."""
        self.get_bytes_by_topic: dict[tuple[str, str], int] = defaultdict(int)
        self.commits_by_topic: dict[str, int] = defaultdict(int)
        """Transactional messages committed (END_TRANSACTION), per topic: counted in ``put_by_topic``
        when their half message was sent, as ``transaction``."""
        self.rollbacks_by_topic: dict[str, int] = defaultdict(int)
        self.send_back_by_group: dict[str, int] = defaultdict(int)
        """Messages consumers sent back to ``%RETRY%<group>`` (CONSUMER_SEND_MSG_BACK), per group."""
        self.dead_letter_by_group: dict[tuple[str, str], int] = defaultdict(int)
        """Messages that went to ``%DLQ%<group>`` since the broker started, per (group, origin topic)."""
        self.table = StatsTable()
        """Last minute / hour / day per topic and per ``topic@group`` (VIEW_BROKER_STATS_DATA)."""
        self.sizes: dict[tuple[str, str], LatencyRecorder] = {}
        """Stored sizes of the messages, per (topic, message type): Apache's ``rocketmq_message_size``."""
        self._put_items: dict[str, tuple[StatsItem, StatsItem]] = {}
        self._mark = (time.monotonic(), 0, 0)

    def on_put(self, topic: str, count: int, nbytes: int, message_type: str = "normal") -> None:
        self.put_count += count
        self.put_bytes += nbytes
        key = (topic, message_type)
        self.put_by_topic[key] += count
        self.put_bytes_by_topic[key] += nbytes
        sizes = self.sizes.get(key)
        if sizes is None:
            sizes = self.sizes[key] = LatencyRecorder(MESSAGE_SIZE_BUCKETS)
        if count > 0:  # one observation per message (a batch's at their mean), inlined: every send comes here
            sizes.counts[bisect_left(MESSAGE_SIZE_BUCKETS, nbytes / count)] += count
            sizes.sum += nbytes
            sizes.count += count
        items = self._put_items.get(topic)
        if items is None:  # every send comes here: the topic's two items are looked up once
            now = _now_ms()
            items = self._put_items[topic] = (self.table.item(TOPIC_PUT_NUMS, topic, now),
                                              self.table.item(TOPIC_PUT_SIZE, topic, now))
        items[0].add(count)
        items[1].add(nbytes)

    def on_end_transaction(self, topic: str, commit: bool) -> None:
        (self.commits_by_topic if commit else self.rollbacks_by_topic)[topic] += 1

    def on_send_back(self, group: str, dead_letter: bool, origin_topic: str = "") -> None:
        if dead_letter:
            self.dead_letter_by_group[(group, origin_topic)] += 1
        else:
            self.send_back_by_group[group] += 1

    def on_get(self, topic: str, count: int, nbytes: int, group: str = "") -> None:
        self.get_count += count
        self.get_bytes += nbytes
        self.get_by_topic[(topic, group)] += count
        self.get_bytes_by_topic[(topic, group)] += nbytes
        if group:
            now = _now_ms()
            self.table.add(GROUP_GET_NUMS, f"{topic}@{group}", count, now)
            self.table.add(GROUP_GET_SIZE, f"{topic}@{group}", nbytes, now)

    def sample(self) -> None:
        """The minute/hour/day snapshots that are due (the broker calls this every 10 s)."""
        self.table.sample(_now_ms())

    def _rates(self) -> tuple[float, float]:
        t0, p0, g0 = self._mark
        now = time.monotonic()
        dt = max(now - t0, 1e-3)
        rates = ((self.put_count - p0) / dt, (self.get_count - g0) / dt)
        if dt > 10:
            self._mark = (now, self.put_count, self.get_count)
        return rates

    def put_tps(self) -> float:
        return self._rates()[0]

    def get_tps(self) -> float:
        return self._rates()[1]
