"""The Spark data source's blocking calls to the cluster, built on :mod:`pyrocketmq.client`.

No Spark imports: the driver-side reader, the executor tasks and the writer call these.

- :class:`QueueDirectory` (driver): the topics (named, or those matching ``subscribePattern``
  on the name servers), their queues, min / max offsets, offsets by timestamp, the group's
  committed offsets, and commits (UPDATE_CONSUMER_OFFSET).
- :func:`read_range` (executors): the messages of one :class:`~.planning.QueueRange`, pulled in
  order with plain (non-suspended) pulls; offsets below the queue's min are data loss.
- :func:`send_messages` (executors): send with a bounded number of sends in flight.

Clients are cached per process (Spark reuses its Python workers, so a task does not reconnect),
keyed by name servers, group and timeouts, and driven on the client's shared loop thread. Their
instance name is ``spark-<pid>`` so they never share a client instance (and its group table) with
user clients of the same process.

Errors say what to do: an unknown topic is a :class:`~pyrocketmq.client.errors.TopicNotFoundError`
naming the topic and name server; an unreachable name server a
:class:`~pyrocketmq.client.errors.MQConnectionError` naming the ``nameServer`` option; lost
messages a :class:`~.offsets.DataLossError` (with ``failOnDataLoss=true``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import TypeVar

from pyrocketmq.client import (
    Admin,
    ClientSettings,
    HalfMessage,
    Message,
    MQBrokerError,
    MQClientError,
    MQConnectionError,
    MQError,
    MQTimeoutError,
    Producer,
    ProducerSettings,
    PullConsumer,
    PullConsumerSettings,
    PullStatus,
    TopicNotFoundError,
    TransactionProducer,
    TransactionState,
    shared_loop,
)
from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import MessageExt, Prop

from .exactly_once import SinkCheckpoint
from .offsets import DataLossError, Loss, Offsets, data_loss_error
from .options import SinkOptions, SourceOptions, match_topics
from .planning import QueueRange

log = logging.getLogger("pyrocketmq.spark")
T = TypeVar("T")

TRANSIENT_ATTEMPTS = 3
_lock = threading.Lock()
_ClientKey = tuple[str, str, int, int]
"""``(name server, group, and the client's two time-outs in ms)``: one client per distinct key."""
_consumers: dict[_ClientKey, PullConsumer] = {}
_producers: dict[_ClientKey, Producer] = {}
_tx_producers: dict[tuple[_ClientKey, str], TransactionProducer] = {}
R = TypeVar("R")


def _client_settings(name_server: str, request_timeout_ms: int) -> ClientSettings:
    return ClientSettings(
        namesrv_addr=name_server,
        instance_name=f"spark-{os.getpid()}",
        request_timeout=request_timeout_ms / 1000.0,
        connect_timeout=min(3.0, request_timeout_ms / 1000.0),
    )


def _run(coro: Awaitable[T]) -> T:
    return shared_loop().run(coro)  # type: ignore[arg-type]


def consumer_for(name_server: str, group: str, request_timeout_ms: int = 3000,
                 pull_timeout_ms: int = 10_000) -> PullConsumer:
    """The process's started :class:`PullConsumer` for these settings (no assignment, no auto-commit)."""
    key = (name_server, group, request_timeout_ms, pull_timeout_ms)
    with _lock:
        consumer = _consumers.get(key)
        if consumer is None:
            settings = PullConsumerSettings(
                auto_commit=False, long_poll_ms=0, pull_timeout=pull_timeout_ms / 1000.0
            )
            consumer = PullConsumer(
                group, name_server, settings, _client_settings(name_server, request_timeout_ms)
            )
            _run(consumer.start())
            _consumers[key] = consumer
        return consumer


def producer_for(
    name_server: str, group: str, send_timeout_ms: int = 3000, request_timeout_ms: int = 3000
) -> Producer:
    """The process's started :class:`Producer` for these settings."""
    key = (name_server, group, send_timeout_ms, request_timeout_ms)
    with _lock:
        producer = _producers.get(key)
        if producer is None:
            producer = Producer(group, name_server, ProducerSettings(send_timeout=send_timeout_ms / 1000.0),
                                _client_settings(name_server, request_timeout_ms))
            _run(producer.start())
            _producers[key] = producer
        return producer


def transaction_producer_for(opts: SinkOptions) -> TransactionProducer:
    """The process's started :class:`TransactionProducer` of an exactly-once sink: it sends and
    ends half messages, and answers the brokers' check-backs from the query's checkpoint for as
    long as the process lives (see :mod:`.exactly_once`)."""
    if opts.checkpoint_location is None:
        raise MQClientError("an exactly-once sink needs checkpointLocation")
    key = ((opts.name_server, opts.producer_group, opts.send_timeout_ms, opts.request_timeout_ms),
           opts.checkpoint_location)
    with _lock:
        producer = _tx_producers.get(key)
        if producer is None:
            checkpoint = SinkCheckpoint(opts.checkpoint_location)

            def check(msg: MessageExt) -> TransactionState:
                state = checkpoint.answer(msg.properties, msg.properties.get(Prop.UNIQ_KEY) or msg.msg_id)
                log.info("check-back of %s: %s", msg.properties.get(Prop.UNIQ_KEY), state.name)
                return state

            producer = TransactionProducer(
                opts.producer_group, opts.name_server,
                ProducerSettings(send_timeout=opts.send_timeout_ms / 1000.0),
                _client_settings(opts.name_server, opts.request_timeout_ms), check_local_transaction=check,
            )
            _run(producer.start())
            if opts.topic:  # heartbeat the topic's brokers now: they send their check-backs here
                try:
                    _run(producer.instance.update_route(opts.topic))
                except MQError as e:
                    log.warning("no route to topic %s yet (%s): check-backs reach this process after "
                                "its first send", opts.topic, e)
            _tx_producers[key] = producer
        return producer


def _explain(e: MQError, name_server: str) -> MQError:
    if isinstance(e, MQConnectionError | MQTimeoutError) and "name server" in str(e):
        err = type(e)(f"{e}; check the option nameServer={name_server!r} and that the name server runs")
        err.__cause__ = e
        return err
    return e


async def _gather_map(
    queues: Iterable[MessageQueue], fn: Callable[[MessageQueue], Awaitable[int]]
) -> Offsets:
    qs = list(queues)
    values = await asyncio.gather(*(fn(mq) for mq in qs))
    return dict(zip(qs, values, strict=True))


class QueueDirectory:
    """Driver-side facts about the source's queues, and the group's offset commits.

    ``queues`` caches the queue list for ``route_ttl`` seconds and ``bounds`` asks each broker
    once per topic (GET_TOPIC_STATS_INFO), so a streaming query polling for new data every few
    milliseconds costs one request per broker and topic, not two per queue.

    Example::

        d = QueueDirectory(SourceOptions.from_options({"nameServer": ns, "topic": "Orders"}))
        queues = d.queues()
        mins, maxs = d.bounds(queues)
    """

    def __init__(self, opts: SourceOptions, route_ttl: float = 5.0) -> None:
        self.opts = opts
        self.route_ttl = route_ttl
        self._queues: list[MessageQueue] | None = None
        self._queues_at = 0.0
        try:
            self.consumer = consumer_for(
                opts.name_server, opts.group, opts.request_timeout_ms, opts.pull_timeout_ms
            )
        except MQError as e:
            raise _explain(e, opts.name_server) from None

    def _call(self, coro: Awaitable[T]) -> T:
        try:
            return _run(coro)
        except MQError as e:
            raise _explain(e, self.opts.name_server) from None

    def queues(self) -> list[MessageQueue]:
        """Every readable queue of every topic of the source (sorted); a topic without a route
        is a :class:`TopicNotFoundError`. Cached for ``route_ttl`` seconds."""
        now = time.monotonic()
        if self._queues is None or now - self._queues_at >= self.route_ttl:
            self._queues = self._fetch_queues()
            self._queues_at = now
        return list(self._queues)

    async def _topics(self) -> list[str]:
        """The ``topic`` option's topics, or the topics the name servers know now that match
        ``subscribePattern`` (one topic list and one cluster info request)."""
        if self.opts.topic_pattern is None:
            return list(self.opts.topics)
        settings = _client_settings(self.opts.name_server, self.opts.request_timeout_ms)
        async with Admin(self.opts.name_server, settings) as admin:
            known = await admin.topic_list()
            info = await admin.cluster_info()
        reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
        for names in info.cluster_addr_table.values():
            reserved |= set(names)
        return match_topics(self.opts.topic_pattern, known, reserved)

    def _fetch_queues(self) -> list[MessageQueue]:
        pattern = self.opts.topic_pattern

        async def all_queues() -> list[MessageQueue]:
            out: list[MessageQueue] = []
            for topic in await self._topics():
                try:
                    out.extend(await self.consumer.fetch_queues(topic))
                except MQBrokerError as e:
                    if e.code != ResponseCode.TOPIC_NOT_EXIST:
                        raise
                    if pattern is not None:  # listed a moment ago, deleted since: not there any more
                        continue
                    raise TopicNotFoundError(
                        ResponseCode.TOPIC_NOT_EXIST,
                        f"topic {topic!r} is not known to name server {self.opts.name_server}",
                        e.broker_addr,
                    ) from None
            return sorted(set(out))

        return self._call(all_queues())

    def bounds(self, queues: Iterable[MessageQueue]) -> tuple[Offsets, Offsets]:
        """``(min offsets, max offsets)`` of ``queues``: one topic-stats request per broker and
        topic; queues the stats miss are asked one by one."""
        qs = list(queues)

        async def go() -> tuple[Offsets, Offsets]:
            mins: Offsets = {}
            maxs: Offsets = {}
            for topic in sorted({mq.topic for mq in qs}):
                table = await self.consumer.queue_offsets(topic)
                for mq in qs:
                    if mq in table:
                        mins[mq], maxs[mq] = table[mq]
            missing = [mq for mq in qs if mq not in maxs]
            if missing:
                mins.update(await _gather_map(missing, self.consumer.min_offset))
                maxs.update(await _gather_map(missing, self.consumer.max_offset))
            return mins, maxs

        return self._call(go())

    def min_offsets(self, queues: Iterable[MessageQueue]) -> Offsets:
        return self._call(_gather_map(queues, self.consumer.min_offset))

    def max_offsets(self, queues: Iterable[MessageQueue]) -> Offsets:
        return self._call(_gather_map(queues, self.consumer.max_offset))

    def committed(self, queues: Iterable[MessageQueue]) -> Offsets:
        """The group's committed offsets (-1 where none is stored)."""
        return self._call(_gather_map(queues, self.consumer.committed))

    def offsets_for_time(self, times: Mapping[MessageQueue, int]) -> Offsets:
        """Per queue, the first offset whose message was stored at or after the queue's time in
        ``times`` (ms; the queue's max offset when every message is older)."""

        async def one(mq: MessageQueue) -> int:
            consumer, timestamp_ms = self.consumer, times[mq]
            lo, hi = await consumer.min_offset(mq), await consumer.max_offset(mq)
            if hi <= lo:
                return hi
            off = max(lo, min(await consumer.search_offset(mq, timestamp_ms), hi))
            # The broker answers the offset stored *closest* to the time (RocketMQ 4.x), which may
            # be the one just before it: step forward to the first one stored at or after it.
            while off < hi:
                got = await self.consumer.pull(mq, off, 1)
                if not got.messages or got.messages[0].store_timestamp >= timestamp_ms:
                    break
                off = got.messages[0].queue_offset + 1
            return off

        return self._call(_gather_map(times, one))

    def commit(self, offsets: Offsets) -> None:
        """Store ``offsets`` as the group's consumer offsets and wait for the brokers."""
        self._call(self.consumer.commit_sync(dict(offsets)))


def _retrying(fn: Callable[[], Awaitable[T]], what: str) -> T:
    for attempt in range(1, TRANSIENT_ATTEMPTS + 1):
        try:
            return _run(fn())
        except (MQConnectionError, MQTimeoutError) as e:
            if attempt == TRANSIENT_ATTEMPTS:
                raise
            log.warning("%s failed (%s); attempt %d of %d", what, e, attempt + 1, TRANSIENT_ATTEMPTS)
            time.sleep(0.5 * attempt)
    raise AssertionError("unreachable")


def read_range(opts: SourceOptions, r: QueueRange) -> Iterator[MessageExt]:
    """The messages of ``r`` (offsets ``[start, end)``) that match the tag filter, in offset order.

    With ``failOnDataLoss``, offsets below the queue's min offset, or planned offsets the broker
    no longer has, raise :class:`DataLossError`; without, they are skipped with a warning.

    Example::

        for msg in read_range(opts, QueueRange("Orders", "broker-a", 0, 0, 100)):
            print(msg.queue_offset, msg.body)
    """
    consumer = consumer_for(opts.name_server, opts.group, opts.request_timeout_ms, opts.pull_timeout_ms)
    mq = r.mq
    offset = r.start
    timeout = opts.pull_timeout_ms / 1000.0
    while offset < r.end:
        n = min(opts.pull_batch_size, r.end - offset)
        result = _retrying(partial(consumer.pull, mq, offset, n, opts.expression, 0, timeout),
                           f"pull of {mq} at {offset}")
        if result.status is PullStatus.FOUND:
            for msg in result.messages:
                if msg.queue_offset >= r.end:
                    return
                if msg.queue_offset >= offset:
                    yield msg
            if result.next_begin_offset <= offset:
                raise MQBrokerError(ResponseCode.SYSTEM_ERROR, f"pull of {mq} at {offset} did not advance")
            offset = result.next_begin_offset
        elif result.status is PullStatus.NO_MATCHED_MSG:
            if result.next_begin_offset <= offset:
                raise MQBrokerError(ResponseCode.SYSTEM_ERROR, f"pull of {mq} at {offset} did not advance")
            offset = result.next_begin_offset
        elif result.status is PullStatus.OFFSET_ILLEGAL and offset < result.min_offset:
            loss = Loss(mq, offset, min(result.min_offset, r.end))
            if opts.fail_on_data_loss:
                raise data_loss_error([loss], " (found while reading)")
            log.warning("skipping %d lost message(s) of %s: offsets %d..%d are gone", loss.lost, mq, offset,
                        loss.available)
            offset = result.min_offset
        else:
            # NO_NEW_MSG or an offset past the max: the planned offsets are not (or no longer) there.
            if opts.fail_on_data_loss:
                raise DataLossError(
                    f"{mq.topic}/{mq.broker_name}/{mq.queue_id}: offsets {offset}..{r.end} were planned "
                    f"but the broker holds {result.min_offset}..{result.max_offset} "
                    "(was the queue or broker reset?). "
                    "Set failOnDataLoss=false to skip them."
                )
            log.warning(
                "%s: offsets %d..%d are not on the broker (it holds %d..%d); skipping",
                mq,
                offset,
                r.end,
                result.min_offset,
                result.max_offset,
            )
            return


async def _each(items: list[T], fn: Callable[[T], Awaitable[R]], limit: int) -> list[R | BaseException]:
    """``fn`` on every item, at most ``limit`` at once; results (or errors) in item order."""
    sem = asyncio.Semaphore(limit)

    async def one(item: T) -> R:
        async with sem:
            return await fn(item)

    return await asyncio.gather(*(one(i) for i in items), return_exceptions=True)


def _send_all(opts: SinkOptions, messages: Iterable[Message], send: Callable[[Message], Awaitable[R]],
              chunk: int) -> list[R]:
    """``send`` every message, ``maxInFlight`` at once, ``chunk`` messages per round; the first
    error is raised once the sends in flight finish (:class:`_PartlySent` carries what was sent)."""
    done: list[R] = []
    buf: list[Message] = []

    def flush() -> None:
        results = _run(_each(buf, send, opts.max_in_flight))
        failed = [r for r in results if isinstance(r, BaseException)]
        done.extend(r for r in results if not isinstance(r, BaseException))
        if failed:
            raise _PartlySent(done, failed[0])

    for msg in messages:
        buf.append(msg)
        if len(buf) >= chunk:
            flush()
            buf = []
    if buf:
        flush()
    return done


class _PartlySent(Exception):
    def __init__(self, sent: Sequence[object], error: BaseException) -> None:
        super().__init__(f"{len(sent)} sent before an error: {error}")
        self.sent = sent
        self.error = error


def send_messages(opts: SinkOptions, messages: Iterable[Message], chunk: int = 1024) -> int:
    """Send every message (at most ``maxInFlight`` at once); returns how many were sent.

    Raises the first send error after the sends in flight finish; earlier messages stay sent
    (at-least-once: a retried task sends them again).
    """
    producer = producer_for(
        opts.name_server, opts.producer_group, opts.send_timeout_ms, opts.request_timeout_ms
    )
    try:
        return len(_send_all(opts, messages, producer.send, chunk))
    except _PartlySent as e:
        raise e.error from None


def send_halves(opts: SinkOptions, messages: Iterable[Message], chunk: int = 1024) -> list[HalfMessage]:
    """Send every message as a half message and leave it open (the exactly-once sink's tasks).

    On an error the half messages sent so far are rolled back (best effort: the check-back rolls
    back the rest, as their attempt never commits) and the error is raised.
    """
    producer = transaction_producer_for(opts)
    try:
        return _send_all(opts, messages, producer.send_half, chunk)
    except _PartlySent as e:
        end_halves(opts, [h for h in e.sent if isinstance(h, HalfMessage)], TransactionState.ROLLBACK)
        raise e.error from None


def end_halves(opts: SinkOptions, halves: list[HalfMessage], state: TransactionState) -> list[HalfMessage]:
    """End every half message (``maxInFlight`` at once), each once, waiting for the brokers'
    answers; returns those not confirmed (logged), which the check-back settles."""
    producer = transaction_producer_for(opts)

    async def end(h: HalfMessage) -> None:
        await producer.end_half(h, state)

    results = _run(_each(halves, end, opts.max_in_flight))
    failed = [h for h, r in zip(halves, results, strict=True) if isinstance(r, BaseException)]
    for h, r in zip(halves, results, strict=True):
        if isinstance(r, BaseException):
            log.warning("END_TRANSACTION %s of %s failed (the check-back settles it): %s",
                        state.name, h.msg_id, r)
    return failed
