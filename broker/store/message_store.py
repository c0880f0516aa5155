"""The store facade the broker uses: put, get, offsets, recovery, retention, flush.

Files under ``storePathRootDir``::

    commitlog/<20-digit offset>                 all messages (CommitLog)
    consumequeue/<topic>/<queueId>/<offset>     per-queue index (ConsumeQueue), derived
    index/<yyyyMMddHHmmssSSS>                   key index (IndexFile), derived
    checkpoint                                  durable timestamps (Checkpoint)
    abort                                       exists while the store runs
    config/                                     JSON configs of other components (server.config_file)

Threads: ``put_*``/``get_*``/offset queries/``delete_topics`` are called from ONE thread (the broker's
event loop) and never block on the disk; the flush thread syncs files and runs SYNC_FLUSH callbacks;
the clean thread deletes expired files (segment lists are copy-on-write, so it can run alongside).

Put path: encode the record once, pick the segment (blank + roll if needed), patch QUEUEOFFSET and
PHYSICALOFFSET in the encoded bytes, copy them into the mapping, append the consume-queue unit, index
the keys, call ``on_dispatch``; a plain single send (:mod:`.plain_put`) does the first steps up to
the unit in one compiled call, in place. One ``put_message`` for single messages and one ``put_batch``
for batch sends, each taking the send's one record (:class:`~.values.MessageInner`); the store, not its
caller, picks the compiled or the general path. So when ``put_message`` returns, a pull (or a query by key)
can already read the message.

Recovery (``load``): with no abort file (clean stop) the last 3 commitlog segments are checked;
with one (crash) the scan starts at the segment chosen by the checkpoint, drops the torn tail and
re-dispatches every valid record to the consume queues (units already there are skipped) and to the
index (records after the newest one it holds; the scan starts early enough for that). Then
consume-queue units and index entries pointing at or past the commitlog's end are undone.
Afterwards every acknowledged (durable) message is readable in order, once, in its queue.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import struct
import time
from collections.abc import Callable
from dataclasses import replace

from pyrocketmq.remoting.message import (
    MessageExt,
    Prop,
    SysFlag,
    create_offset_msg_id,
    decode_message,
    pack_host,
)
from pyrocketmq.remoting.names import SCHEDULE_TOPIC, TIMER_TOPIC

from .checkpoint import Checkpoint
from .commit_log import CommitLog
from .consume_queue import FILLER_SIZE, ConsumeQueue, load_consume_queues
from .dispatch import (
    NO_DISPATCH,
    ConsumeQueueDispatcher,
    DispatchBatch,
    DispatchChain,
    DispatchHook,
    DispatchRequest,
    HookDispatcher,
    IndexDispatcher,
)
from .encode import encode_inner, host_flags, tags_code_of, to_schedule_topic
from .flush import CleanService, DurableListener, FlushCallback, FlushService
from .host import disk_usage_ratio, physical_memory
from .index_service import IndexService
from .mapped_file_queue import StoreError
from .native import Meta, encode_batch, offset_msg_ids
from .plain_put import plain_enough, put_in_place
from .reads import offset_by_time, query_by_key, readable_end, scan_units
from .retention import clean_expired, clean_tick
from .settings import CQ_UNIT_SIZE, StoreSettings
from .timer import TimerRefused, hold_for_timer, names_a_timer, timer_due
from .values import GetMessageStatus, GetResult, MessageInner, PutMessageStatus, PutResult, QueryMessageResult

log = logging.getLogger("pyrocketmq.broker.store")
_II = struct.Struct(">iI")



def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MessageStore:
    """See the module docstring. Typical use::

    store = MessageStore(settings, ("10.0.0.9", 10911))
    store.load(); store.start()
    r = store.put_message(MessageInner.build("T", b"hi", {"TAGS": "a"}, queue_id=0))
    g = store.get_message("group", "T", 0, 0, 32, None, None)
    store.shutdown()
    """

    def __init__(self, settings: StoreSettings, store_host: tuple[str, int]) -> None:
        self.settings = settings
        self.store_host = store_host
        self.store_host_bytes = pack_host(*store_host)
        self.commit_log = CommitLog(settings)
        self.checkpoint = Checkpoint(settings.checkpoint_path)
        self.index = IndexService(settings.index_dir, settings.index)
        self._cqs: dict[tuple[str, int], ConsumeQueue] = {}
        self._cq_file_size = settings.consume_queue_file_size
        self._delay_levels = settings.delay_levels_ms
        self._reput = 0
        """Replication: commitlog offset up to which received records are dispatched."""
        self._running = False
        self._loaded = False
        mem = settings.physical_memory_bytes or physical_memory()
        self.memory_window = mem * settings.access_message_in_memory_max_ratio // 100
        """Bytes behind the commitlog head still considered hot (in the page cache)."""
        self._units = ConsumeQueueDispatcher(self._cq)
        self.dispatch = DispatchChain([self._units])
        """Every record landing in the commitlog goes through it (units, index, listeners)."""
        self.dispatch.add(IndexDispatcher(self.index, settings.index))
        self._hook: HookDispatcher | None = None
        self.disk_usage_ratio: Callable[[], float] = self._disk_usage_ratio
        """Fraction of the commitlog's disk in use (replaceable in tests)."""
        self.read_limit: Callable[[], int | None] | None = None
        """Controller mode: the commitlog offset consumers may read up to (every in-sync replica
        holds it; None: everything), RocketMQ 5's confirm offset; unset: no limit."""
        fs = settings.flush
        self.sync_flush = settings.sync_flush
        """SYNC_FLUSH: sends wait for the group commit (fixed for the store's life, as its flush thread
        is)."""
        self.flush_service = FlushService(
            flush_commit_log=self._flush_commit_log, flush_logics=self._flush_logics,
            sync=settings.sync_flush, interval_ms=fs.flush_interval_commit_log,
            logics_interval_ms=fs.flush_interval_consume_queue, group_wait_ms=fs.group_commit_wait_ms,
        )
        self.clean_service = CleanService(lambda: clean_tick(self),
                                          settings.retention.clean_resource_interval)

    # -- lifecycle ------------------------------------------------------------------------------
    def load(self) -> None:
        """Open the files and recover (normally, or from a crash when the abort file is there)."""
        s = self.settings
        os.makedirs(s.store_path_root_dir, exist_ok=True)
        abnormal = os.path.exists(s.abort_path)
        if abnormal:
            log.warning("abort file found: the store did not stop cleanly; running crash recovery")
        self.commit_log.load()
        self._cqs.update(load_consume_queues(self.settings.consume_queue_dir, self._cq_file_size))
        self.index.load()
        self.checkpoint.load()
        for cq in self._cqs.values():
            cq.recover()
        index = self.index
        indexing = s.index.message_index_enable

        start = self.commit_log.recovery_start(abnormal=abnormal,
                                               checkpoint_min_ts=self.checkpoint.min_timestamp)
        scan_from = index.recovery_start(start, self.commit_log.file_size,
                                         self.checkpoint.index_msg_timestamp,
                                         self.commit_log.recovery_start) if abnormal and indexing else start

        def redispatch(msg: MessageExt, phys: int, size: int) -> None:
            # Records before `start` (scanned for the index only) keep their units: re-deriving
            # them could resurrect the queues of a deleted topic.
            self._dispatch_record(msg, phys, size, write_unit=phys >= start)

        self._units.rebuilt = 0
        if abnormal:
            # Units of records from `start` on may be torn or missing (their flush raced the crash):
            # cut them and derive them again from the validated commitlog records.
            for cq in self._cqs.values():
                cq.truncate_dirty(start, routine=True)
        index_before = index.last_phy
        max_phys = self.commit_log.recover(scan_from, abnormal=abnormal,
                                           dispatch=redispatch if abnormal else None)
        if self._units.rebuilt:
            log.warning("rebuilt %d consume-queue unit(s) from the commitlog", self._units.rebuilt)
        if index.last_phy != index_before:
            log.warning("re-indexed the records after commitlog offset %d", index_before)
        # Entries of records the recovery dropped: their offsets will hold other records.
        index.truncate(max_phys, self._store_timestamp_at)
        if not self.commit_log.queue.files:
            for cq in self._cqs.values():
                if cq.max_offset:
                    log.warning("no commitlog: dropping consume queue %s/%d", cq.topic, cq.queue_id)
        for cq in self._cqs.values():
            cq.truncate_dirty(max_phys)
            cq.correct_min_offset(self.commit_log.min_offset)
        # Everything left in the commitlog is dispatched now.
        chain = self.dispatch
        chain.last_timestamp = max(chain.last_timestamp, self.commit_log.last_store_timestamp)
        self._reput = max_phys
        with open(s.abort_path, "wb"):
            pass
        self._loaded = self._running = True

    def _store_timestamp_at(self, phys: int) -> int:
        rec = self.commit_log.get_record(phys)
        return -1 if rec is None else self.commit_log.pickup_store_timestamp(phys, len(rec))

    def start(self) -> None:
        """Start the flush thread and the retention timer."""
        if not self._loaded:
            raise StoreError("load() the store before start()")
        self.flush_service.start()
        self.clean_service.start()

    def shutdown(self) -> None:
        """Stop the threads, flush everything, write the checkpoint, remove the abort file."""
        if not self._loaded:
            return
        self._running = False
        self.clean_service.shutdown()
        self.flush_service.shutdown()  # final flush of commitlog, consume queues, index and checkpoint
        self.commit_log.close()
        for cq in list(self._cqs.values()):
            cq.close()
        self.index.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.settings.abort_path)
        self._loaded = False
        log.info("store shut down at physical offset %d", self.commit_log.max_offset)

    def request_flush(self, phys_offset: int, callback: FlushCallback) -> None:
        """SYNC_FLUSH group commit: ``callback(ok)`` runs on the flush thread once ``phys_offset`` is
        durable."""
        self.flush_service.request_flush(phys_offset, callback)

    def watch_durable(self, listener: DurableListener) -> None:
        """Who hears each sync a :meth:`flush_to` asked for (flush thread) and each cut of the log:
        one per store, the broker's send path."""
        self.flush_service.listener = listener

    def flush_to(self, phys_offset: int) -> None:
        """The group commit without a callback per request: the listener hears the sync."""
        self.flush_service.flush_to(phys_offset)

    def _flush_commit_log(self) -> int:
        ts = self.commit_log.last_store_timestamp  # captured before the sync: covered by it
        off = self.commit_log.flush()
        if ts:
            self.checkpoint.physic_msg_timestamp = ts
        return off

    def _flush_logics(self) -> None:
        ts = self.dispatch.last_timestamp  # captured first: every record up to it is in the files synced
        for cq in list(self._cqs.values()):
            cq.flush()
        self.index.flush()
        if ts:
            self.checkpoint.logics_msg_timestamp = ts
            if self.settings.index.message_index_enable:
                self.checkpoint.index_msg_timestamp = ts
        self.checkpoint.flush()

    # -- consume queues -------------------------------------------------------------------------
    def _cq(self, topic: str, queue_id: int) -> ConsumeQueue:
        key = (topic, queue_id)
        cq = self._cqs.get(key)
        if cq is None:
            cq = self._cqs[key] = ConsumeQueue(
                self.settings.consume_queue_dir, topic, queue_id, self._cq_file_size
            )
        return cq

    def find_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self._cqs.get((topic, queue_id))

    def consume_queues(self) -> list[ConsumeQueue]:
        return list(self._cqs.values())

    # -- put ------------------------------------------------------------------------------------
    def _next_timestamp(self) -> int:
        # Never go back in time within the log: offset-by-time searches rely on the order.
        return max(_now_ms(), self.commit_log.last_store_timestamp)

    def put_message(self, msg: MessageInner) -> PutResult:
        """Append one message and index it. Returns at once; durability is ``request_flush``'s job.

        A message with ``DELAY`` > 0 (and no prepared/rollback transaction bits) is stored in
        ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1`` instead (levels above the highest clamp to it),
        with ``REAL_TOPIC``/``REAL_QID`` naming where the schedule service delivers it when due.
        A timer message (:mod:`.timer`) due later goes to ``rmq_sys_wheel_timer`` queue 0 likewise
        (the result's ``timer_due_ms`` says when it is due).
        """
        if not self._running:
            return PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        now = self._next_timestamp()
        return self._put_plain(msg, now) or self._put_general(msg, now)

    def _put_plain(self, msg: MessageInner, now: int) -> PutResult | None:
        """The common send in one compiled call (:mod:`.plain_put`); None, with nothing written, for
        anything else (a delay, a timer, a half message, a new queue, a full segment...)."""
        cq = self._cqs.get((msg.topic, msg.queue_id))
        if cq is None or not plain_enough(msg, self.settings.timer_wheel_enable):
            return None
        return put_in_place(self.commit_log, cq, self.dispatch, now, self.settings.max_message_size, msg)

    def _put_general(self, msg: MessageInner, now: int) -> PutResult:
        if Prop.DELAY in msg.properties and msg.topic != SCHEDULE_TOPIC:
            msg = to_schedule_topic(msg, self._delay_levels)
        if self.settings.timer_wheel_enable and msg.topic not in (SCHEDULE_TOPIC, TIMER_TOPIC):
            try:
                msg = hold_for_timer(msg, now, self.settings.timer_max_delay_sec)
            except TimerRefused as e:
                log.warning("put refused: %s", e)
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL)
        due = int(msg.properties.get(Prop.TIMER_OUT_MS) or 0) if msg.topic == TIMER_TOPIC else 0
        rec, status = encode_inner(msg, now, self.store_host_bytes)
        if rec is None:
            return PutResult(status)
        size = len(rec)
        if size > self.settings.max_message_size or not self.commit_log.fits_a_segment(size):
            log.warning("put refused: record of %d bytes exceeds maxMessageSize or a segment", size)
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL)
        dispatched = (msg.sys_flag & SysFlag.TRANSACTION_MASK) not in NO_DISPATCH
        cq = self._cq(msg.topic, msg.queue_id) if dispatched else None
        qoff = cq.max_offset if cq is not None else 0
        try:
            phys = self.commit_log.append_one(rec, qoff, now)
        except OSError as e:
            log.error("cannot create a commitlog segment: %s", e)
            return PutResult(PutMessageStatus.CREATE_MAPPED_FILE_FAILED)
        if cq is not None:
            tags = tags_code_of(msg.topic, msg.properties, now, msg.tags_code, self._delay_levels)
            self.dispatch.dispatch_checked(DispatchRequest(
                msg.topic, msg.queue_id, qoff, phys, size, tags, now, msg.properties, msg.sys_flag, True, cq))
        msg_id = create_offset_msg_id(msg.store_host or self.store_host_bytes, phys)
        return PutResult(PutMessageStatus.PUT_OK, phys, size, msg_id, qoff, 1, now, due)

    def timer_problem(self, msg: MessageInner) -> str | None:
        """Why :meth:`put_message` would refuse the timer ``msg`` asks for (RocketMQ 5's "timer message
        illegal"); None when it asks none, or the store keeps it."""
        if not self.settings.timer_wheel_enable or not names_a_timer(msg.properties):
            return None
        try:
            timer_due(msg.properties, int(time.time() * 1000), self.settings.timer_max_delay_sec)
        except TimerRefused as e:
            return str(e)
        return None

    def put_batch(self, batch: MessageInner) -> PutResult:
        """Append a batch send as consecutive records of its queue, in one segment: ``batch`` is the
        send's record, its ``body`` a SEND_BATCH_MESSAGE body and its ``properties_bytes`` the batch's
        own properties, appended to each message's (:mod:`.native`). ValueError if the body is malformed
        or holds a body over ``maxMessageSize``."""
        if not self._running:
            return PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        now = self._next_timestamp()
        store_host = batch.store_host or self.store_host_bytes
        flag = host_flags(batch.sys_flag, batch.born_host, store_host)
        if store_host is not batch.store_host:
            batch = replace(batch, store_host=store_host)
        try:
            block, metas = encode_batch(batch, flag, now, self.settings.max_message_size)
        except OverflowError as e:
            log.warning("batch refused: %s", e)
            return PutResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
        return self._commit_batch(batch.topic, batch.queue_id, block, metas, store_host, flag, now)

    def _commit_batch(self, topic: str, queue_id: int, block: bytearray, metas: list[Meta], store_host: bytes,
                      sys_flag: int, now: int) -> PutResult:
        total = len(block)
        if total > self.settings.max_message_size or not self.commit_log.fits_a_segment(total):
            log.warning("batch refused: %d bytes exceed maxMessageSize or a segment", total)
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL)
        cq = self._cq(topic, queue_id)
        qoff0 = cq.max_offset
        sizes = [m[0] for m in metas]
        try:
            phys0 = self.commit_log.append_block(block, qoff0, now, sizes)
        except OSError as e:
            log.error("cannot create a commitlog segment: %s", e)
            return PutResult(PutMessageStatus.CREATE_MAPPED_FILE_FAILED)
        self.dispatch.dispatch_batch(DispatchBatch(topic, queue_id, qoff0, phys0, metas, now, sys_flag, cq))
        ids = offset_msg_ids(store_host, phys0, sizes)
        return PutResult(PutMessageStatus.PUT_OK, phys0, total, ids, qoff0, len(metas), now)

    # -- get ------------------------------------------------------------------------------------
    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msgs: int,
        max_bytes: int | None = None,
        tag_filter: Callable[[int], bool] | None = None,
        record_filter: Callable[[memoryview], bool] | None = None,
    ) -> GetResult:
        """Up to ``max_msgs`` messages from logical ``offset`` on (RocketMQ's ``getMessage`` rules).

        ``max_bytes`` None applies RocketMQ's own limits per message: 256 KiB / 32 messages while
        the data is within ``accessMessageInMemoryMaxRatio`` of RAM from the head, 64 KiB / 8 beyond;
        an int replaces the byte limit. The first message is returned whatever its size.
        ``tag_filter(tagsCode)`` False skips a message (it still counts as scanned); so does
        ``record_filter(record)`` False, asked of each whole record that passed ``tag_filter``.
        """
        cq = self._cqs.get((topic, queue_id))
        if cq is None:
            return GetResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        min_off = cq.min_offset
        written = cq.max_offset
        max_off = self._readable_max(cq, max(offset, min_off))
        S = GetMessageStatus
        if written == 0:
            return GetResult(S.NO_MESSAGE_IN_QUEUE, 0, min_off, max_off)
        if offset < min_off:
            return GetResult(S.OFFSET_TOO_SMALL, min_off, min_off, max_off)
        if max_off <= offset <= written:  # the end, or written but not yet held by every in-sync replica
            return GetResult(S.OFFSET_OVERFLOW_ONE, offset, min_off, max_off)
        if offset > written:
            return GetResult(S.OFFSET_OVERFLOW_BADLY, max_off, min_off, max_off)
        units = cq.units_from(offset)
        if units is None:
            log.warning("consume queue %s/%d: no unit at offset %d (min %d, max %d)", topic, queue_id, offset,
                        min_off, max_off)
            return GetResult(S.OFFSET_FOUND_NULL, cq.roll_next_file(offset), min_off, max_off)
        units = units[: (max_off - offset) * CQ_UNIT_SIZE]

        scan = scan_units(units, self.commit_log, self.settings, self.memory_window, max_msgs, max_bytes,
                          tag_filter, record_filter)
        return GetResult(
            scan.status,
            offset + scan.scanned,
            min_off,
            max_off,
            scan.buffers,
            scan.count,
            scan.total,
            suggest_pull_from_slave=self.commit_log.max_offset - scan.max_phy_pulling > self.memory_window,
        )

    # -- offsets and lookups --------------------------------------------------------------------
    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """The end of what consumers may read (see :attr:`read_limit`)."""
        cq = self._cqs.get((topic, queue_id))
        return self._readable_max(cq, cq.min_offset) if cq else 0

    def _readable_max(self, cq: ConsumeQueue, lo: int) -> int:
        """``cq``'s max offset, or in controller mode the end of its records within :attr:`read_limit`
        (searched from ``lo`` on)."""
        hi = cq.max_offset
        if self.read_limit is None or (limit := self.read_limit()) is None or cq.max_physic_offset <= limit:
            return hi
        return readable_end(cq.get, min(lo, hi), hi, limit)

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self._cqs.get((topic, queue_id))
        return cq.min_offset if cq else 0

    # -- replication ----------------------------------------------------------------------------
    def get_commit_log_data(self, phys: int, max_size: int) -> memoryview | None:
        """Up to ``max_size`` written bytes from ``phys`` to the end of its segment (the master side
        of HA), or None when nothing is there yet (or it was deleted)."""
        mf = self.commit_log.queue.find(phys)
        if mf is None:
            return None
        try:
            view = mf.view_from(phys - mf.file_from_offset)
        except ValueError:
            return None
        if not view:
            return None
        return view[:max_size]

    def append_replica(self, phys: int, data: bytes | memoryview) -> bool:
        """Append commitlog bytes received from the master, which must start exactly at this
        store's max offset (or anywhere, on an empty store: the master picks a segment start), then
        dispatch every record now complete into the consume queues and the index as a local put
        would. False (nothing written) on a gap or overlap: the caller drops the connection."""
        if not self._running:
            return False
        cl = self.commit_log
        if cl.queue.files:
            if phys != cl.max_offset:
                log.warning("replica data at %d but the commitlog ends at %d", phys, cl.max_offset)
                return False
        else:
            if phys % cl.file_size:
                log.warning("replica data at %d does not start a segment of an empty store", phys)
                return False
            self._reput = phys
        cl.append_raw(phys, data)
        for msg, pos, size in cl.complete_records(self._reput):
            self._dispatch_record(msg, pos, size)
            self._reput = pos + size
        return True

    def _dispatch_record(self, msg: MessageExt, phys: int, size: int, *, write_unit: bool = True) -> None:
        """Dispatch a record read back from the commitlog (replication, recovery)."""
        tags = tags_code_of(msg.topic, msg.properties, msg.store_timestamp, None, self._delay_levels)
        self.dispatch.dispatch(DispatchRequest(
            msg.topic, msg.queue_id, msg.queue_offset, phys, size, tags, msg.store_timestamp, msg.properties,
            msg.sys_flag, write_unit,
        ))

    @property
    def on_dispatch(self) -> DispatchHook | None:
        """The listener told of every consume-queue append (the broker's long-poll wake-up)."""
        return self._hook.hook if self._hook is not None else None

    @on_dispatch.setter
    def on_dispatch(self, hook: DispatchHook | None) -> None:
        if self._hook is not None:
            self.dispatch.remove(self._hook)
            self._hook = None
        if hook is not None:
            self._hook = HookDispatcher(hook)
            self.dispatch.add(self._hook)

    def get_max_phy_offset(self) -> int:
        return self.commit_log.max_offset

    def get_min_phy_offset(self) -> int:
        return self.commit_log.min_offset

    def _unit_time(self, cq: ConsumeQueue, offset: int) -> int:
        unit = cq.get(offset)
        if unit is None or unit[1] == FILLER_SIZE:
            return -1
        return self.commit_log.pickup_store_timestamp(unit[0], unit[1])

    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        """STORETIMESTAMP (ms) of the message at logical ``offset``, -1 when there is none."""
        cq = self._cqs.get((topic, queue_id))
        if cq is None or not cq.min_offset <= offset < cq.max_offset:
            return -1
        return self._unit_time(cq, offset)

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        cq = self._cqs.get((topic, queue_id))
        return -1 if cq is None else self.get_message_store_timestamp(topic, queue_id, cq.min_offset)

    def get_offset_by_time(self, topic: str, queue_id: int, ts_ms: int) -> int:
        """Logical offset whose store time is ``ts_ms`` (the first such), else the closer neighbour
        (the earlier one on a tie); before everything → min offset, after → the last message; 0 if empty."""
        cq = self._cqs.get((topic, queue_id))
        if cq is None or cq.max_offset <= cq.min_offset:
            return 0
        return offset_by_time(cq.min_offset, cq.max_offset, lambda off: self._unit_time(cq, off), ts_ms)

    def look_message_by_offset(self, phys_offset: int) -> bytes | None:
        """One whole stored record (a copy), or None when nothing valid is there."""
        rec = self.commit_log.get_record(phys_offset)
        return None if rec is None else bytes(rec)

    def look_message(self, phys_offset: int) -> MessageExt | None:
        """The decoded record at ``phys_offset`` (send-back, transactions, scheduled delivery)."""
        rec = self.commit_log.get_record(phys_offset)
        return None if rec is None else decode_message(rec)[0]

    def query_message(
        self, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int
    ) -> QueryMessageResult:
        """Records of ``topic`` whose KEYS contain ``key`` or whose UNIQ_KEY is ``key``, stored within
        ``[begin_ts, end_ts]`` (ms): the newest ``min(max_num, maxMsgsNumBatch)``, ascending offsets.

        Each index hit is checked against the record itself (hashes collide; an entry may outlive
        its record), so every buffer returned really matches.

        >>> r = store.query_message("T", "order-1", 32, 0, 2**63 - 1)   # doctest: +SKIP
        >>> [decode_message(b)[0].keys for b in r.buffers]                # doctest: +SKIP
        [['order-1']]
        """
        return query_by_key(self.commit_log, self.index, topic, key, max_num, begin_ts, end_ts)

    # -- topics and retention -------------------------------------------------------------------
    def delete_topics(self, topics: set[str]) -> None:
        """Drop the consume queues of ``topics`` (the commitlog keeps their records until retention)."""
        for key in [k for k in self._cqs if k[0] in topics]:
            cq = self._cqs.pop(key)
            cq.destroy()
            log.info("deleted consume queue %s/%d", key[0], key[1])
        for t in topics:
            shutil.rmtree(os.path.join(self.settings.consume_queue_dir, t), ignore_errors=True)

    def _disk_usage_ratio(self) -> float:
        return disk_usage_ratio(self.settings.commit_log_dir, self.settings.store_path_root_dir)

    def clean_expired(self, now_ms: int | None = None, force: bool = False) -> int:
        """Retention (:func:`.retention.clean_expired`); the number of commitlog segments deleted."""
        return clean_expired(self, _now_ms() if now_ms is None else now_ms, force)

    # -- controller mode ------------------------------------------------------------------------
    def truncate_to(self, offset: int, *, whole: bool = False) -> int:
        """Cut the log while running at ``offset`` (at most at the last whole record dispatched), with
        the units and index entries of what is cut; the bytes dropped. ``whole``: the log ends on a
        whole record (written here as master), whatever replication left before."""
        if whole:
            self._reput = self.commit_log.max_offset
        offset = min(offset, self._reput)
        dropped = self.commit_log.max_offset - offset
        if dropped > 0:
            self.commit_log.queue.truncate_dirty(offset, live=True)
            for cq in list(self._cqs.values()):
                cq.truncate_dirty(offset, live=True)
            self.index.truncate(offset, self._store_timestamp_at)
            self.flush_service.rewind(offset)
        self._reput = offset
        return max(0, dropped)
