"""Offsets of the Spark source as JSON, and the rules that turn starting/ending options into numbers.

Pure: no Spark, no sockets. The driver-side reader (:mod:`.source`) feeds it broker facts (each
queue's min and max offset, the group's committed offsets) and stores what it returns in Spark's
checkpoint.

The offset JSON (one value per source in Spark's offset log; also the form of the
``startingOffsets`` / ``endingOffsets`` options)::

    {"Orders": {"broker-a": {"0": 12, "1": 7}, "broker-b": {"0": 3}}}

topic → broker name → queue id (a string: JSON keys are strings) → offset. An offset is the
*next* offset to read, exactly what RocketMQ stores as a group's consumer offset; a range
``[start, end)`` holds ``end - start`` consume-queue entries. In options, ``-2`` means the
queue's earliest offset and ``-1`` its latest (the Kafka source's convention).

Invariants:

- :func:`encode_offsets` is canonical (topics, brokers and queue ids sorted; queue ids compared as
  numbers), so equal offsets give byte-equal JSON — Spark compares offsets by their JSON.
- Offsets only move forward: :func:`forward` never returns an offset below the one it was given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from pyrocketmq.client.errors import MQClientError, MQError
from pyrocketmq.remoting.body import MessageQueue

EARLIEST = -2
LATEST = -1

Offsets = dict[MessageQueue, int]
OffsetJson = dict[str, dict[str, dict[str, int]]]
"""The offset JSON: topic → broker name → queue id (a string) → offset."""


class DataLossError(MQError):
    """Messages the query was due to read are gone from the broker (retention deleted their
    commitlog segments, or the queue was reset) and ``failOnDataLoss`` is true.

    The message names the queues, the offsets wanted and the oldest offsets still stored.
    """


class OffsetOptionError(MQClientError):
    """A ``startingOffsets`` / ``endingOffsets`` / ``*OffsetsByTimestamp`` value cannot be used."""


def encode_offsets(offsets: Mapping[MessageQueue, int]) -> OffsetJson:
    """``{MessageQueue: offset}`` → the nested JSON dict (canonical order).

    >>> encode_offsets({MessageQueue("T", "b", 10): 5, MessageQueue("T", "b", 2): 1})
    {'T': {'b': {'2': 1, '10': 5}}}
    """
    out: OffsetJson = {}
    for mq in sorted(offsets, key=lambda m: (m.topic, m.broker_name, m.queue_id)):
        out.setdefault(mq.topic, {}).setdefault(mq.broker_name, {})[str(mq.queue_id)] = int(offsets[mq])
    return out


def decode_offsets(doc: Mapping[str, object], what: str = "offsets") -> Offsets:
    """The nested JSON dict → ``{MessageQueue: offset}``; :class:`OffsetOptionError` when malformed.

    >>> decode_offsets({"T": {"b": {"0": 4}}})
    {MessageQueue(topic='T', broker_name='b', queue_id=0): 4}
    """
    if not isinstance(doc, Mapping):
        raise OffsetOptionError(
            f"{what} must be a JSON object topic -> broker -> queue id -> offset, got {doc!r}"
        )
    out: Offsets = {}
    for topic, brokers in doc.items():
        if not isinstance(brokers, Mapping):
            raise OffsetOptionError(
                f"{what}: topic {topic!r} must map broker names to objects, got {brokers!r}"
            )
        for broker, queues in brokers.items():
            if not isinstance(queues, Mapping):
                raise OffsetOptionError(
                    f"{what}: {topic}/{broker} must map queue ids to offsets, got {queues!r}"
                )
            for qid, off in queues.items():
                try:
                    queue_id = int(qid)
                except (TypeError, ValueError):
                    raise OffsetOptionError(
                        f"{what}: queue id {qid!r} of {topic}/{broker} is not a number"
                    ) from None
                if isinstance(off, bool) or not isinstance(off, int) or off < EARLIEST:
                    raise OffsetOptionError(
                        f"{what}: offset {off!r} of {topic}/{broker}/{qid} must be an integer >= 0 "
                        "(or -2 = earliest, -1 = latest)"
                    )
                out[MessageQueue(str(topic), str(broker), queue_id)] = off
    return out


def dumps(offsets: Mapping[MessageQueue, int]) -> str:
    """The offsets as a JSON string (for options and logs)."""
    return json.dumps(encode_offsets(offsets), separators=(",", ":"))


class OffsetKind(StrEnum):
    EARLIEST = "earliest"
    LATEST = "latest"
    GROUP = "group"
    SPECIFIC = "specific"


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """A parsed ``startingOffsets`` / ``endingOffsets`` value.

    ``specific`` holds the queues a JSON value names (``-2``/``-1`` allowed); queues it does not
    name fall back to ``default`` (earliest for a start, latest for an end).
    """

    kind: OffsetKind
    specific: tuple[tuple[MessageQueue, int], ...] = ()

    @property
    def table(self) -> Offsets:
        return dict(self.specific)


def parse_offset_spec(
    text: str | None, *, default: OffsetKind, what: str, allow_group: bool = True
) -> OffsetSpec:
    """``earliest`` | ``latest`` | ``group`` | JSON → :class:`OffsetSpec`.

    >>> parse_offset_spec("earliest", default=OffsetKind.LATEST, what="startingOffsets").kind
    <OffsetKind.EARLIEST: 'earliest'>
    >>> parse_offset_spec('{"T": {"b": {"0": 3}}}', default=OffsetKind.LATEST, what="x").table
    {MessageQueue(topic='T', broker_name='b', queue_id=0): 3}
    """
    raw = (text or "").strip()
    if not raw:
        return OffsetSpec(default)
    low = raw.lower()
    if low in ("earliest", "latest") or (low == "group" and allow_group):
        return OffsetSpec(OffsetKind(low))
    if raw.startswith("{"):
        try:
            doc = json.loads(raw)
        except ValueError as e:
            raise OffsetOptionError(f"{what} is not valid JSON ({e}): {raw[:200]}") from None
        table = decode_offsets(doc, what)
        return OffsetSpec(OffsetKind.SPECIFIC, tuple(sorted(table.items())))
    words = "'earliest', 'latest'" + (", 'group'" if allow_group else "")
    raise OffsetOptionError(
        f"{what}={raw!r} is not understood: use {words} or JSON like "
        '{"TopicA": {"broker-a": {"0": 42}}} (-2 = earliest, -1 = latest)'
    )


def parse_timestamps(text: str, what: str) -> Offsets:
    """A ``*OffsetsByTimestamp`` value: the offset JSON's shape with ms since the epoch for offsets.

    >>> parse_timestamps('{"T": {"b": {"0": 1700000000000}}}', "startingOffsetsByTimestamp")
    {MessageQueue(topic='T', broker_name='b', queue_id=0): 1700000000000}
    """
    example = '{"TopicA": {"broker-a": {"0": 1700000000000}}}'
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise OffsetOptionError(f"{what} is not valid JSON ({e}): use JSON like {example}") from None
    table = decode_offsets(doc, what) if isinstance(doc, Mapping) else None
    if table is None:
        raise OffsetOptionError(f"{what} must be a JSON object like {example} (ms since the epoch)")
    for mq, ms in table.items():
        if ms < 0:
            raise OffsetOptionError(
                f"{what}: {mq.topic}/{mq.broker_name}/{mq.queue_id} has {ms}; give ms since the epoch (>= 0)"
            )
    return table


def resolve(
    queues: Iterable[MessageQueue],
    spec: OffsetSpec,
    *,
    min_offsets: Mapping[MessageQueue, int],
    max_offsets: Mapping[MessageQueue, int],
    committed: Mapping[MessageQueue, int] | None = None,
    fallback: OffsetKind = OffsetKind.EARLIEST,
) -> Offsets:
    """A concrete offset for every queue in ``queues`` per ``spec``.

    ``group`` takes the committed offset (``fallback`` where none is stored: -1); a JSON value's
    ``-2``/``-1`` become the queue's min/max; queues absent from a JSON value take ``fallback``.
    A concrete offset past the queue's max is clamped to the max (nothing can be read beyond it).

    >>> q = MessageQueue("T", "b", 0)
    >>> resolve([q], OffsetSpec(OffsetKind.LATEST), min_offsets={q: 2}, max_offsets={q: 9})
    {MessageQueue(topic='T', broker_name='b', queue_id=0): 9}
    """
    table = spec.table
    out: Offsets = {}
    for mq in queues:
        lo, hi = min_offsets.get(mq, 0), max_offsets.get(mq, 0)

        def pick(kind: OffsetKind, lo: int = lo, hi: int = hi) -> int:
            return lo if kind is OffsetKind.EARLIEST else hi

        if spec.kind is OffsetKind.SPECIFIC:
            off = table.get(mq)
            if off is None:
                out[mq] = pick(fallback)
            elif off == EARLIEST:
                out[mq] = lo
            elif off == LATEST:
                out[mq] = hi
            else:
                out[mq] = min(off, hi)
        elif spec.kind is OffsetKind.GROUP:
            c = (committed or {}).get(mq, -1)
            out[mq] = min(c, hi) if c >= 0 else pick(fallback)
        else:
            out[mq] = pick(spec.kind)
    return out


@dataclass(frozen=True, slots=True)
class Loss:
    """Offsets ``[wanted, available)`` of ``mq`` are gone: the broker's min offset moved past them."""

    mq: MessageQueue
    wanted: int
    available: int

    @property
    def lost(self) -> int:
        return self.available - self.wanted


def find_losses(start: Mapping[MessageQueue, int], min_offsets: Mapping[MessageQueue, int]) -> list[Loss]:
    """Queues whose start offset is below the broker's min offset (sorted).

    >>> q = MessageQueue("T", "b", 0)
    >>> find_losses({q: 3}, {q: 10})
    [Loss(mq=MessageQueue(topic='T', broker_name='b', queue_id=0), wanted=3, available=10)]
    >>> find_losses({q: 10}, {q: 10})
    []
    """
    return [
        Loss(mq, off, min_offsets[mq])
        for mq, off in sorted(start.items())
        if mq in min_offsets and off < min_offsets[mq]
    ]


def data_loss_error(losses: list[Loss], where: str = "") -> DataLossError:
    """The :class:`DataLossError` describing ``losses`` (first few queues spelled out)."""
    parts = [
        f"{x.mq.topic}/{x.mq.broker_name}/{x.mq.queue_id}: wanted {x.wanted}, oldest stored {x.available}"
        for x in losses[:5]
    ]
    more = f" and {len(losses) - 5} more queue(s)" if len(losses) > 5 else ""
    total = sum(x.lost for x in losses)
    return DataLossError(
        f"{total} message(s) are no longer on the broker{where} ({'; '.join(parts)}{more}): the broker's "
        "retention (fileReservedTime) deleted them before the query read them. Set the option "
        "failOnDataLoss=false to skip to the oldest stored offsets, or restart the query with a new "
        "checkpoint and startingOffsets=earliest."
    )


def find_resets(start: Mapping[MessageQueue, int], max_offsets: Mapping[MessageQueue, int]) -> list[Loss]:
    """Queues whose start offset is past the broker's max offset: the queue went back (its topic
    was deleted and created again, or the broker lost its store). ``available`` is the new max.

    >>> q = MessageQueue("T", "b", 0)
    >>> find_resets({q: 30}, {q: 4})
    [Loss(mq=MessageQueue(topic='T', broker_name='b', queue_id=0), wanted=30, available=4)]
    """
    return [
        Loss(mq, off, max_offsets[mq])
        for mq, off in sorted(start.items())
        if mq in max_offsets and off > max_offsets[mq]
    ]


def reset_error(resets: list[Loss]) -> DataLossError:
    """The :class:`DataLossError` for queues that went back (see :func:`find_resets`)."""
    parts = [
        f"{x.mq.topic}/{x.mq.broker_name}/{x.mq.queue_id}: at {x.wanted}, the broker's end is {x.available}"
        for x in resets[:5]
    ]
    more = f" and {len(resets) - 5} more queue(s)" if len(resets) > 5 else ""
    return DataLossError(
        f"queue offsets went back ({'; '.join(parts)}{more}): the topic was deleted and created again, or "
        "the broker lost its store, so what the query has read is no longer there. Set failOnDataLoss=false "
        "to continue from the queues' current end, or restart the query with a new checkpoint."
    )


def forward(start: Mapping[MessageQueue, int], floor: Mapping[MessageQueue, int]) -> Offsets:
    """``start`` with every queue moved up to ``floor`` where it is below (skipping lost data)."""
    return {mq: max(off, floor.get(mq, off)) for mq, off in start.items()}


def offsets_behind_latest(source_progress: Mapping[str, object]) -> dict[str, str]:
    """The Kafka source's ``minOffsetsBehindLatest`` / ``maxOffsetsBehindLatest`` /
    ``avgOffsetsBehindLatest``, computed from one entry of a progress's ``sources``.

    PySpark's Python stream readers cannot add metrics to ``sources[].metrics``; the progress
    does carry ``endOffset`` (what the batch read up to) and ``latestOffset`` (each queue's max
    offset when the batch was planned), and the numbers follow from them: per queue of
    ``latestOffset``, latest minus end. Empty when the progress has no ``latestOffset`` yet.

    Example::

        offsets_behind_latest(query.lastProgress["sources"][0])
        # {'minOffsetsBehindLatest': '0', 'maxOffsetsBehindLatest': '12', 'avgOffsetsBehindLatest': '3.0'}
    """

    def table(key: str) -> Offsets:
        value = source_progress.get(key)
        if isinstance(value, str):
            value = json.loads(value) if value.strip().startswith("{") else None
        return decode_offsets(value, key) if isinstance(value, Mapping) else {}

    latest, end = table("latestOffset"), table("endOffset")
    behind = [off - end.get(mq, 0) for mq, off in latest.items()]
    if not behind:
        return {}
    return {
        "minOffsetsBehindLatest": str(min(behind)),
        "maxOffsetsBehindLatest": str(max(behind)),
        "avgOffsetsBehindLatest": str(sum(behind) / len(behind)),
    }
