"""What happens to a record once it is in the commitlog: RocketMQ's ``CommitLogDispatcher`` chain.

Every path that lands records in the commitlog (a put, a batch put, a replica append from the
master, crash recovery's re-scan) describes each record as a :class:`DispatchRequest` and hands it
to the same :class:`DispatchChain`; the chain skips what is never dispatched (prepared and
rolled-back transaction records) and runs its dispatchers in order: the consume-queue unit, the
key index, then whoever listens (the broker's long-poll wake-up and the HA notify). A new
consumer of records (pop checkpoints, timers…) is one more dispatcher, not a fifth code path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pyrocketmq.remoting.message import SysFlag

from .consume_queue import ConsumeQueue, cq_units
from .index_service import IndexService
from .native import Meta
from .settings import IndexSettings

NO_DISPATCH = (SysFlag.TRANSACTION_PREPARED, SysFlag.TRANSACTION_ROLLBACK)
"""Transaction types whose records stay out of the consume queues and the index."""

DispatchHook = Callable[[str, int, int, int, dict[str, str]], None]
"""``(topic, queue_id, max_offset_after, tags_code, properties)`` after each consume-queue append."""


@dataclass(slots=True)
class DispatchRequest:
    """One record in the commitlog, as the dispatchers need it."""

    topic: str
    queue_id: int
    queue_offset: int
    phys: int
    size: int
    tags_code: int
    store_timestamp: int
    properties: dict[str, str]
    sys_flag: int = 0
    write_unit: bool = True
    """False when the record's consume-queue unit is there already: a record recovery scans only to
    re-index, or a plain put's (:mod:`.plain_put` writes the unit in the same compiled call)."""
    queue: ConsumeQueue | None = None
    """The record's consume queue when the caller already holds it (the put path)."""


@dataclass(slots=True)
class DispatchBatch:
    """The records of one batch put, consecutive in one queue and in the commitlog (never
    transactional), as the store's batch path describes them: ``metas`` from :mod:`.native`."""

    topic: str
    queue_id: int
    queue_offset: int
    """Of the first record."""
    phys: int
    """Commitlog offset of the first record."""
    metas: list[Meta]
    store_timestamp: int
    sys_flag: int
    queue: ConsumeQueue

    def requests(self) -> list[DispatchRequest]:
        """One request per record (for a dispatcher with no faster way through a batch)."""
        reqs: list[DispatchRequest] = []
        phys = self.phys
        for size, tags, props in self.metas:
            reqs.append(
                DispatchRequest(
                    self.topic,
                    self.queue_id,
                    self.queue_offset + len(reqs),
                    phys,
                    size,
                    tags,
                    self.store_timestamp,
                    props,
                    self.sys_flag,
                    True,
                    self.queue,
                )
            )
            phys += size
        return reqs


class Dispatcher(Protocol):
    def dispatch(self, req: DispatchRequest) -> None: ...
    def dispatch_batch(self, batch: DispatchBatch) -> None: ...


class ConsumeQueueDispatcher:
    """Appends the record's unit to its consume queue (a unit already there is left alone)."""

    def __init__(self, queue_of: Callable[[str, int], ConsumeQueue]) -> None:
        self._queue_of = queue_of
        self.rebuilt = 0
        """Units written by recovery (reported once it ends)."""

    def dispatch(self, req: DispatchRequest) -> None:
        if not req.write_unit:
            return
        cq = req.queue or self._queue_of(req.topic, req.queue_id)
        if cq.put(req.queue_offset, req.phys, req.size, req.tags_code):
            self.rebuilt += 1

    def dispatch_batch(self, batch: DispatchBatch) -> None:
        if not batch.queue.put_units(batch.queue_offset, cq_units(batch.phys, batch.metas)):
            for req in batch.requests():  # a new file, a hole, or a re-dispatch: the careful path
                self.dispatch(req)


class IndexDispatcher:
    """Indexes the record's keys and unique key while ``messageIndexEnable`` is on."""

    def __init__(self, index: IndexService, settings: IndexSettings) -> None:
        self._index = index
        self._settings = settings

    def dispatch(self, req: DispatchRequest) -> None:
        if self._settings.message_index_enable:
            self._index.build(req.topic, req.properties, req.phys, req.store_timestamp)

    def index(self, topic: str, properties: dict[str, str], phys: int, store_timestamp: int) -> None:
        """:meth:`dispatch` of a record given by its fields."""
        if self._settings.message_index_enable:
            self._index.build(topic, properties, phys, store_timestamp)

    def dispatch_batch(self, batch: DispatchBatch) -> None:
        if self._settings.message_index_enable:
            self._index.build_batch(batch.topic, batch.metas, batch.phys, batch.store_timestamp)


class HookDispatcher:
    """Tells a listener the queue grew (long-polling pulls waiting on it, slaves to feed)."""

    def __init__(self, hook: DispatchHook) -> None:
        self.hook = hook

    def dispatch(self, req: DispatchRequest) -> None:
        self.hook(req.topic, req.queue_id, req.queue_offset + 1, req.tags_code, req.properties)

    def dispatch_batch(self, batch: DispatchBatch) -> None:
        """Once per distinct tags code, with the queue's new max offset: a held pull whose filter
        matches any record of the batch wakes, and a batch of one tag costs one call, not one per record."""
        hook = self.hook
        end = batch.queue_offset + len(batch.metas)
        told: set[int] = set()
        for _, tags, props in batch.metas:
            if tags not in told:
                told.add(tags)
                hook(batch.topic, batch.queue_id, end, tags, props)


class DispatchChain:
    """The dispatchers every record goes through, in order; ``last_timestamp`` is the newest
    store timestamp dispatched (the checkpoint's logics time)."""

    def __init__(self, dispatchers: list[Dispatcher] | None = None) -> None:
        self.dispatchers: list[Dispatcher] = list(dispatchers or [])
        self.last_timestamp = 0
        self._arrange()

    def add(self, dispatcher: Dispatcher) -> None:
        self.dispatchers.append(dispatcher)
        self._arrange()

    def remove(self, dispatcher: Dispatcher) -> None:
        self.dispatchers.remove(dispatcher)
        self._arrange()

    def _arrange(self) -> None:
        ds = self.dispatchers
        self._calls = tuple(d.dispatch for d in ds)
        self.units_first = bool(ds) and type(ds[0]) is ConsumeQueueDispatcher
        """The chain starts with the store's consume-queue unit: a put may write a record's unit itself
        and dispatch the record with ``write_unit=False`` (the rest of the chain sees it as usual)."""

    def dispatch(self, req: DispatchRequest) -> None:
        """Run every dispatcher on ``req`` unless its transaction type is never dispatched."""
        if (req.sys_flag & SysFlag.TRANSACTION_MASK) in NO_DISPATCH:
            return
        self.dispatch_checked(req)

    def dispatch_batch(self, batch: DispatchBatch) -> None:
        """Dispatch the records of one batch put, each dispatcher over all of them."""
        for d in self.dispatchers:
            d.dispatch_batch(batch)
        if batch.store_timestamp > self.last_timestamp:
            self.last_timestamp = batch.store_timestamp

    def dispatch_checked(self, req: DispatchRequest) -> None:
        """:meth:`dispatch` for a caller that has already ruled out the undispatched types (the put path)."""
        for call in self._calls:
            call(req)
        if req.store_timestamp > self.last_timestamp:
            self.last_timestamp = req.store_timestamp
