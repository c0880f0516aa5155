"""Every index file of the store, oldest first: builds the entries of new records, answers
queries across files, rolls to a new file when one is full, and drops files below retention.
The file format is in :mod:`.index_file`."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable

from pyrocketmq.remoting.message import KEY_SEPARATOR, Prop

from .index_file import (
    _HEAD_CACHE,
    _TAIL,
    NAME_DIGITS,
    Accept,
    IndexFile,
    IndexFileSizeError,
    _extend,
    _hash_u32,
    _name_ms,
    _positive,
    index_file_name,
    key_hash,
)
from .native import NATIVE, Meta
from .settings import IndexSettings

log = logging.getLogger("pyrocketmq.broker.store")


class IndexService:
    """All index files, oldest first. Typical use (the store does this)::

        index = IndexService(settings.index_dir, settings.index)
        index.load()
        index.build("T", {"UNIQ_KEY": "0A00...", "KEYS": "order-1 user-7"}, phy, store_ts)
        offsets, last_ts, last_phy = index.query("T", "order-1", 32, 0, 2**63 - 1)
    """

    def __init__(self, directory: str, settings: IndexSettings) -> None:
        if settings.max_hash_slot_num < 1 or settings.max_index_num < 2:
            raise ValueError(
                f"maxHashSlotNum must be >= 1 and maxIndexNum >= 2, not "
                f"{settings.max_hash_slot_num} and {settings.max_index_num}"
            )
        self.directory = directory
        self.settings = settings
        self.slot_num = settings.max_hash_slot_num
        self.index_num = settings.max_index_num
        self._files: list[IndexFile] = []
        self._lock = threading.Lock()
        self._prefix_hash: dict[str, int] = {}
        self._head_hash: dict[tuple[str, str], int] = {}
        self.last_phy = -1
        """Commitlog offset of the newest record indexed; -1 when there is none."""

    @property
    def files(self) -> list[IndexFile]:
        return self._files

    def load(self) -> None:
        """Open the files there are; one whose size does not fit the settings is left alone (logged)."""
        if not os.path.isdir(self.directory):
            return
        files = []
        for name in sorted(os.listdir(self.directory)):
            if len(name) != NAME_DIGITS or not name.isdigit():
                continue
            path = os.path.join(self.directory, name)
            try:
                files.append(IndexFile(path, self.slot_num, self.index_num))
            except IndexFileSizeError as e:
                log.error("index file ignored: %s", e)
        self._files = files
        self.last_phy = self._newest_phy()
        if files:
            log.info("loaded %d index file(s); newest record indexed at offset %d", len(files), self.last_phy)

    def _newest_phy(self) -> int:
        for f in reversed(self._files):
            if not f.empty:
                return f.end_phy_offset
        return -1

    def recovery_start(self, start: int, segment_size: int, checkpoint_ts: int,
                       start_by_time: Callable[..., int]) -> int:
        """Where an abnormal recovery that would start at commitlog offset ``start`` must start scanning so
        the index gets every record after the newest one it holds: that record's segment, or the segment
        of the index's checkpoint time ``checkpoint_ts`` if later (``start_by_time``: the commitlog's
        ``recovery_start``; records up to that time were offered to the index and flushed, those after
        ``last_phy`` had no keys). With no index files it is ``start``: the index begins with what is
        re-dispatched."""
        last = self.last_phy
        if last < 0:
            return start
        seg = last - last % segment_size
        if checkpoint_ts > 0:
            seg = max(seg, start_by_time(abnormal=True, checkpoint_min_ts=max(0, checkpoint_ts - 3000)))
        return min(start, seg)

    # -- build ----------------------------------------------------------------------------------
    def build(self, topic: str, properties: dict[str, str], phy: int, store_ts: int) -> None:
        """Index one dispatched record by ``topic#UNIQ_KEY`` and ``topic#k`` for each KEYS entry.

        Records at or before :attr:`last_phy` are skipped (a re-dispatch during recovery).
        """
        if phy <= self.last_phy:
            return
        uniq = properties.get(Prop.UNIQ_KEY)
        keys = properties.get(Prop.KEYS)
        if not uniq and not keys:
            return
        if NATIVE is not None:
            files = self._files
            if files:  # one compiled call hashes the keys and writes them, when they fit the newest file
                prefix = self._prefix(topic)
                written = files[-1].put_one(prefix, properties, phy, store_ts)
                if written is not None:
                    if written:
                        self.last_phy = phy
                    return
            self.build_batch(topic, [(0, 0, properties)], phy, store_ts)  # the first file, or a roll
            return
        prefix = self._prefix(topic)
        hashes = [self._key_hash(topic, prefix, uniq)] if uniq else []
        if keys:
            for k in keys.split(KEY_SEPARATOR):
                if k:
                    hashes.append(self._key_hash(topic, prefix, k))
        if hashes:  # (KEYS of separators only index nothing, and leave last_phy as the batch path does)
            try:
                self._put(hashes, phy, store_ts)
            except OSError as e:  # no new file (disk full…): the message is stored, only unindexed
                log.error("cannot index the record at commitlog offset %d: %s", phy, e)
            self.last_phy = phy

    def build_batch(self, topic: str, metas: list[Meta], phys: int, store_ts: int) -> None:
        """:meth:`build` for the consecutive records of one batch put (``metas`` from the store's
        batch path, the first record at ``phys``): one compiled call hashes every key, one writes them."""
        if NATIVE is None or phys <= self.last_phy:
            for size, _, props in metas:
                self.build(topic, props, phys, store_ts)
                phys += size
            return
        prefix = self._prefix(topic)
        hashes, offsets = NATIVE.index_keys(prefix, metas, phys)
        if hashes:
            try:
                self._fill(len(hashes) // 4, lambda f, done: f.put_flat(hashes, offsets, done, store_ts))
            except OSError as e:  # no new file (disk full…): the messages are stored, only unindexed
                log.error("cannot index the batch at commitlog offset %d: %s", phys, e)
            self.last_phy = int.from_bytes(offsets[-8:], sys.byteorder, signed=True)

    def _prefix(self, topic: str) -> int:
        """The hash of ``topic#``, which every key of the topic extends (remembered per topic)."""
        prefix = self._prefix_hash.get(topic)
        if prefix is None:
            prefix = self._prefix_hash[topic] = _hash_u32(topic + "#")
        return prefix

    def _key_hash(self, topic: str, prefix: int, key: str) -> int:
        # A client's UNIQ_KEY is a fixed per-process head (IP, pid, class-loader hash) and a varying
        # 12-hex-digit tail (time, counter): hash the head once per topic and producer, then only
        # the tail (hashing is the bulk of indexing's cost in Python).
        if len(key) > _TAIL + 4:
            cut = len(key) - _TAIL
            ck = (topic, key[:cut])
            head = self._head_hash.get(ck)
            if head is None:
                if len(self._head_hash) >= _HEAD_CACHE:
                    self._head_hash.clear()
                head = self._head_hash[ck] = _extend(prefix, ck[1])
            return _positive(_extend(head, key[cut:]))
        return _positive(_extend(prefix, key))

    def _put(self, hashes: list[int], phy: int, store_ts: int) -> None:
        self._fill(len(hashes), lambda f, done: f.put_keys(hashes[done:], phy, store_ts))

    def _fill(self, total: int, put: Callable[[IndexFile, int], int]) -> None:
        """``put(file, done)`` writes keys from the ``done``-th on while ``file`` has room and says how
        many it wrote; the newest file first, then new ones until all ``total`` are in."""
        files = self._files
        done = put(files[-1], 0) if files else 0
        while done < total:  # a new file has room for at least one: indexNum >= 2
            done += put(self._roll(), done)

    def _roll(self) -> IndexFile:
        files = self._files
        prev = files[-1] if files else None
        os.makedirs(self.directory, exist_ok=True)
        # Names must sort in creation order: after the newest one even within the same ms or when
        # the clock went back.
        name = index_file_name(time.time_ns() // 1_000_000)
        if prev is not None and name <= prev.name:
            try:
                name = index_file_name(_name_ms(prev.name) + 1)
            except ValueError:  # not a date (renamed by hand): any larger 17-digit name will do
                name = f"{int(prev.name) + 1:0{NAME_DIGITS}d}"
        while os.path.exists(os.path.join(self.directory, name)):
            name = f"{int(name) + 1:0{NAME_DIGITS}d}"
        f = IndexFile(
            os.path.join(self.directory, name),
            self.slot_num,
            self.index_num,
            begin_phy_offset=prev.end_phy_offset if prev else 0,
            begin_timestamp=prev.end_timestamp if prev else 0,
        )
        with self._lock:
            self._files = [*self._files, f]
        log.info("new index file %s", f.path)
        return f

    # -- query ----------------------------------------------------------------------------------
    @property
    def last_update(self) -> tuple[int, int]:
        """``(endTimestamp, endPhyOffset)`` of the newest entry; (0, 0) with none."""
        for f in reversed(self._files):
            if not f.empty:
                return f.end_timestamp, f.end_phy_offset
        return 0, 0

    def query(
        self,
        topic: str,
        key: str,
        max_num: int,
        begin_ts: int,
        end_ts: int,
        accept: Accept | None = None,
    ) -> tuple[list[int], int, int]:
        """``(commitlog offsets, index last update timestamp, its commitlog offset)``.

        The newest ``min(max_num, maxMsgsNumBatch)`` records whose ``topic#key`` hash matches, stored
        within ``[begin_ts, end_ts]`` (to the second) and passing ``accept``; ascending offsets.
        """
        max_num = min(max_num, self.settings.max_msgs_num_batch)
        h = key_hash(topic, key)
        out: list[int] = []
        seen: set[int] = set()
        with self._lock:
            last_ts, last_phy = self.last_update
            for f in reversed(self._files):
                if len(out) >= max_num:
                    break
                if f.empty:
                    continue
                if f.time_matched(begin_ts, end_ts):
                    f.select(h, max_num, begin_ts, end_ts, out, seen, accept)
                if f.begin_timestamp < begin_ts:  # older files end before this one begins
                    break
        out.sort()
        return out, last_ts, last_phy

    # -- recovery, retention, durability --------------------------------------------------------
    def truncate(self, max_phys: int, store_ts_of: Callable[[int], int] | None = None) -> int:
        """Undo entries at or past commitlog offset ``max_phys`` (recovery dropped those records);
        files left empty go. Returns the number of entries undone."""
        undone = 0
        for f in reversed(list(self._files)):
            if f.empty:
                continue  # a file rolled just before the crash; its begin is reset by its first key
            if f.end_phy_offset < max_phys:
                break
            undone += f.truncate(max_phys, store_ts_of)
            if not f.empty:
                break
            with self._lock:
                self._files = [x for x in self._files if x is not f]
            f.destroy()
            log.warning("index file %s dropped: all its records were past the commitlog's end", f.path)
        if undone:
            log.warning("undid %d index entr(ies) at or past commitlog offset %d", undone, max_phys)
        self.last_phy = self._newest_phy()
        return undone

    def delete_expired(self, commitlog_min: int) -> int:
        """Delete the files (never the newest) whose every record is below ``commitlog_min``."""
        with self._lock:
            files = self._files
            gone = [f for f in files[:-1] if f.end_phy_offset < commitlog_min]
            if not gone:
                return 0
            self._files = [f for f in files if f not in gone]
            for f in gone:
                f.destroy()
        for f in gone:
            log.info("retention deleted index file %s", f.path)
        return len(gone)

    def flush(self) -> None:
        for f in self._files:
            f.flush()

    def close(self) -> None:
        with self._lock:
            files, self._files = self._files, []
            for f in files:
                f.close()
