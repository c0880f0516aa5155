"""The pure pieces of the broker's metrics: rows computed from offsets, queue tops and store times,
readiness, a timing wrapper. No broker state, no Prometheus: unit-tested on plain values."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from pyrocketmq.metrics import LatencyRecorder

_P = ParamSpec("_P")
_R = TypeVar("_R")


def lag_rows(
    offsets: Mapping[str, Mapping[int, int]], max_offset: Callable[[str, int], int]
) -> Iterator[tuple[str, str, int, int, int]]:
    """``(group, topic, queue, committed, lag)`` for every committed offset in ``offsets``
    (``{"topic@group": {queue: offset}}``); lag is ``max_offset(topic, queue) - committed``,
    never negative (a commit may run ahead of a queue truncated by a restore).

    >>> list(lag_rows({"T@g": {0: 3, 1: 9}}, lambda t, q: 10))
    [('g', 'T', 0, 3, 7), ('g', 'T', 1, 9, 1)]
    """
    for key, queues in offsets.items():
        topic, _, group = key.partition("@")
        if not group:
            continue
        for queue, committed in sorted(queues.items()):
            yield group, topic, queue, committed, max(0, max_offset(topic, queue) - max(committed, 0))


@dataclass(slots=True)
class ConsumerState:
    """One group on one topic, summed over its queues, as Apache RocketMQ 5 reports it."""

    lag: int = 0
    """max offset - committed offset"""
    ready: int = 0
    """max offset - pulled offset: stored, not yet pulled"""
    inflight: int = 0
    """pulled offset - committed offset: pulled, not yet committed"""
    queueing_ms: int = 0
    """now - store time of the oldest message not yet pulled"""
    lag_ms: int = 0
    """now - store time of the oldest message not yet committed"""


def consumer_states(
    offsets: Mapping[str, Mapping[int, int]], pulled: Mapping[str, Mapping[int, int]],
    max_offset: Callable[[str, int], int], store_time: Callable[[str, int, int], int], now_ms: int,
) -> dict[tuple[str, str], ConsumerState]:
    """``{(group, topic): ConsumerState}`` for every committed offset in ``offsets`` (keyed
    ``"topic@group"``); a queue never pulled counts as pulled up to its committed offset;
    ``store_time(topic, queue, offset)`` is -1 where no message is.

    >>> s = consumer_states({"T@g": {0: 3, 1: 9}}, {"T@g": {0: 5}}, lambda t, q: 10,
    ...                     lambda t, q, o: 1000 + o, 2000)
    >>> s[("g", "T")]
    ConsumerState(lag=8, ready=6, inflight=2, queueing_ms=995, lag_ms=997)
    """
    out: dict[tuple[str, str], ConsumerState] = {}
    for key, queues in offsets.items():
        topic, _, group = key.partition("@")
        if not group:
            continue
        state = out.setdefault((group, topic), ConsumerState())
        pulls = pulled.get(key, {})
        for queue, committed in queues.items():
            top, committed = max_offset(topic, queue), max(committed, 0)
            pulled_to = min(max(pulls.get(queue, committed), committed), top)
            state.lag += max(0, top - committed)
            state.ready += max(0, top - pulled_to)
            state.inflight += pulled_to - committed if pulled_to > committed else 0
            for offset, attr in ((pulled_to, "queueing_ms"), (committed, "lag_ms")):
                if offset < top and (stored := store_time(topic, queue, offset)) >= 0:
                    setattr(state, attr, max(getattr(state, attr), now_ms - stored))
    return out


def special_topic_totals(
    groups: Iterable[str], queue_max: Iterable[tuple[str, int, int]], prefix: str
) -> dict[str, int]:
    """Messages ever put in ``<prefix><group>`` per group: the sum of its queues' max offsets.
    Every group in ``groups`` gets an entry (0 before its first message).

    >>> special_topic_totals(["a", "b"], [("%DLQ%a", 0, 2), ("%DLQ%c", 0, 1), ("T", 0, 9)], "%DLQ%")
    {'a': 2, 'b': 0, 'c': 1}
    """
    totals = {g: 0 for g in groups}
    for topic, _queue, max_offset in queue_max:
        if topic.startswith(prefix):
            group = topic[len(prefix):]
            totals[group] = totals.get(group, 0) + max_offset
    return dict(sorted(totals.items()))


def scheduled_waiting(
    levels: int, max_offset: Callable[[int], int], delivered: Mapping[int, int]
) -> dict[int, int]:
    """Delayed messages stored but not yet delivered, per level (1-based): the schedule queue's
    max offset minus the level's delivery offset.

    >>> scheduled_waiting(3, lambda q: [5, 0, 2][q], {1: 4, 3: 2})
    {1: 1, 2: 0, 3: 0}
    """
    return {level: max(0, max_offset(level - 1) - delivered.get(level, 0)) for level in range(1, levels + 1)}


def readiness(store_ready: bool, namesrv_configured: int, namesrv_registered: int) -> str | None:
    """Why the broker is not ready, or ``None``: its store is recovered and it is registered with
    at least one name server (a broker configured with none only needs its store).

    >>> readiness(False, 1, 1), readiness(True, 2, 0), readiness(True, 2, 1), readiness(True, 0, 0)
    ('store is recovering', 'registered with none of 2 name server(s)', None, None)
    """
    if not store_ready:
        return "store is recovering"
    if namesrv_configured and not namesrv_registered:
        return f"registered with none of {namesrv_configured} name server(s)"
    return None


def timed(
    fn: Callable[_P, _R], recorder: LatencyRecorder, clock: Callable[[], float] = time.perf_counter
) -> Callable[_P, _R]:
    """``fn`` that also records how long each call took.

    >>> rec = LatencyRecorder((1.0,)); ticks = iter([0.0, 0.5])
    >>> timed(lambda x: x * 2, rec, lambda: next(ticks))(21), rec.count, rec.sum
    (42, 1, 0.5)
    """

    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        started = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            recorder.observe(clock() - started)

    call.__wrapped__ = fn  # type: ignore[attr-defined]  # functools' convention for the wrapped function
    return call
