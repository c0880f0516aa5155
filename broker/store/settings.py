"""Store settings: small grouped dataclasses, loadable from RocketMQ ``broker.conf`` keys.

``StoreSettings`` holds where files live and how big they are, plus three groups: ``flush``
(durability), ``retention`` (what gets deleted, when) and ``index`` (the message-key index).
:func:`StoreSettings.from_conf` reads the Java key names (``storePathRootDir``,
``mappedFileSizeCommitLog``, ``flushDiskType``, ``maxIndexNum`` …); unknown keys are ignored so one
``broker.conf`` can feed every component.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

CQ_UNIT_SIZE = 20
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class FlushDiskType(StrEnum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


@dataclass(slots=True)
class FlushSettings:
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    """``flushDiskType``: ASYNC_FLUSH (periodic) or SYNC_FLUSH (group commit; sends wait for the disk)."""
    flush_interval_commit_log: int = 500
    """``flushIntervalCommitLog``: ms between commitlog flushes in ASYNC_FLUSH."""
    flush_interval_consume_queue: int = 1000
    """``flushIntervalConsumeQueue``: ms between consume-queue flushes (and checkpoint writes)."""
    sync_flush_timeout: int = 5000
    """``syncFlushTimeout``: ms a SYNC_FLUSH send waits before answering FLUSH_DISK_TIMEOUT (the caller's
    timer)."""
    group_commit_wait_ms: int = 10
    """How long the group-commit loop sleeps when nothing is pending (Java's GroupCommitService: 10 ms)."""


@dataclass(slots=True)
class RetentionSettings:
    file_reserved_time: int = 72
    """``fileReservedTime``: hours a commitlog segment is kept after its last write."""
    delete_when: str = "04"
    """``deleteWhen``: hours of the day (``"04"`` or ``"04;10"``) when expired segments are deleted."""
    disk_max_used_space_ratio: int = 75
    """``diskMaxUsedSpaceRatio``: percent of disk use above which expired segments go at any hour."""
    disk_space_clean_forcibly_ratio: float = 0.85
    """Disk use above which the oldest segments go even if not yet expired (Java's system property)."""
    clean_file_forcibly_enable: bool = True
    """``cleanFileForciblyEnable``: allow the forced deletion above."""
    clean_resource_interval: int = 10_000
    """``cleanResourceInterval``: ms between retention checks."""
    delete_files_batch_max: int = 10
    """Segments deleted per retention pass at most (Java's DELETE_FILES_BATCH_MAX)."""


@dataclass(slots=True)
class IndexSettings:
    message_index_enable: bool = True
    """``messageIndexEnable``: index every message by ``topic#KEYS entry`` and ``topic#UNIQ_KEY``
    (QUERY_MESSAGE). Off: nothing new is indexed; existing index files stay queryable."""
    max_hash_slot_num: int = 5_000_000
    """``maxHashSlotNum``: hash slots per index file (4 bytes each)."""
    max_index_num: int = 5_000_000 * 4
    """``maxIndexNum``: entries per index file (20 bytes each; entry 0 is never used)."""
    max_msgs_num_batch: int = 64
    """``maxMsgsNumBatch``: most messages one query returns, whatever ``maxNum`` asks."""
    default_query_max_num: int = 32
    """``defaultQueryMaxNum``: ``maxNum`` of a query by unique key (``_UNIQUE_KEY_QUERY``)."""


@dataclass(slots=True)
class StoreSettings:
    store_path_root_dir: str = field(default_factory=lambda: os.path.join(os.path.expanduser("~"), "store"))
    """``storePathRootDir``: holds commitlog/, consumequeue/, config/, checkpoint and abort."""
    store_path_commit_log: str | None = None
    """``storePathCommitLog``: the commitlog directory; None = ``<root>/commitlog``."""
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    """``mappedFileSizeCommitLog``: bytes per commitlog segment."""
    mapped_file_size_consume_queue: int = 300_000 * CQ_UNIT_SIZE
    """``mappedFileSizeConsumeQueue``: bytes per consume-queue file (rounded up to whole 20-byte units)."""
    max_message_size: int = 4 * 1024 * 1024
    """``maxMessageSize``: largest record (or batch) accepted, in bytes."""
    check_crc_on_recover: bool = True
    """``checkCRCOnRecover``: verify body CRCs while recovering the commitlog."""
    message_delay_level: str = DEFAULT_DELAY_LEVELS
    """``messageDelayLevel``: delay of each level (1-based), for SCHEDULE_TOPIC_XXXX delivery times."""
    flush_delay_offset_interval: int = 10_000
    """``flushDelayOffsetInterval``: ms between writes of ``delayOffset.json`` and
    ``timerCheckpoint.json`` (the delivery progress)."""
    timer_wheel_enable: bool = True
    """``timerWheelEnable``: keep timer messages (TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS /
    __STARTDELIVERTIME) until due; off, they are delivered at once."""
    timer_max_delay_sec: int = 259_200
    """``timerMaxDelaySec``: the furthest ahead a timer message may be due (3 days, as RocketMQ 5)."""
    recall_message_enable: bool = False
    """``recallMessageEnable``: take recalls of timer messages not yet due (RECALL_MESSAGE, 5.x
    RecallMessage); off, as in Apache RocketMQ 5.3.2+, a recall is refused."""
    access_message_in_memory_max_ratio: int = 40
    """``accessMessageInMemoryMaxRatio``: percent of RAM behind the head still counted as "in memory"."""
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    """``maxTransferBytesOnMessageInMemory``: pull byte limit for hot data."""
    max_transfer_count_on_message_in_memory: int = 32
    """``maxTransferCountOnMessageInMemory``: pull message limit for hot data."""
    max_transfer_bytes_on_message_in_disk: int = 64 * 1024
    """``maxTransferBytesOnMessageInDisk``: pull byte limit for data far behind the head."""
    max_transfer_count_on_message_in_disk: int = 8
    """``maxTransferCountOnMessageInDisk``: pull message limit for data far behind the head."""
    physical_memory_bytes: int = 0
    """RAM size used for the hot/cold decision; 0 = ask the OS."""
    flush: FlushSettings = field(default_factory=FlushSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    index: IndexSettings = field(default_factory=IndexSettings)

    # -- derived --------------------------------------------------------------------------------
    @property
    def commit_log_dir(self) -> str:
        return self.store_path_commit_log or os.path.join(self.store_path_root_dir, "commitlog")

    @property
    def consume_queue_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def config_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "config")

    @property
    def index_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "index")

    @property
    def checkpoint_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "checkpoint")

    @property
    def abort_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "abort")

    @property
    def consume_queue_file_size(self) -> int:
        units = -(-self.mapped_file_size_consume_queue // CQ_UNIT_SIZE)
        return max(1, units) * CQ_UNIT_SIZE

    @property
    def delay_levels_ms(self) -> list[int]:
        return parse_delay_levels(self.message_delay_level)

    @property
    def sync_flush(self) -> bool:
        return self.flush.flush_disk_type == FlushDiskType.SYNC_FLUSH

    @property
    def sync_flush_timeout_ms(self) -> int:
        return self.flush.sync_flush_timeout

    def as_conf(self) -> dict[str, str]:
        """Every ``broker.conf`` key these settings read, with the value in use (Java's spelling)."""
        out: dict[str, str] = {}
        for group in (self, self.flush, self.retention, self.index):
            for f in fields(group):
                if f.name not in _GROUPS:
                    v = getattr(group, f.name)
                    out[_CONF_KEYS.get(f.name, _camel(f.name))] = (
                        str(v).lower() if isinstance(v, bool) else str(getattr(v, "value", v))
                    )
        return out

    @classmethod
    def knows(cls, key: str) -> bool:
        """Whether ``key`` is a ``broker.conf`` key these settings read."""
        return key in _known_keys()

    @classmethod
    def from_conf(cls, conf: dict[str, str]) -> StoreSettings:
        """Settings from ``broker.conf`` keys (Java names); absent keys keep their defaults.

        >>> StoreSettings.from_conf({"storePathRootDir": "/data", "flushDiskType": "SYNC_FLUSH"}).sync_flush
        True
        """
        s = cls()
        for group in (s, s.flush, s.retention, s.index):
            for f in fields(group):
                if f.name in _GROUPS:
                    continue
                key = _CONF_KEYS.get(f.name, _camel(f.name))
                if key in conf:
                    setattr(group, f.name, _convert(getattr(group, f.name), conf[key].strip()))
        return s


_CONF_KEYS = {"check_crc_on_recover": "checkCRCOnRecover"}
_GROUPS = ("flush", "retention", "index")


def _known_keys() -> frozenset[str]:
    names = [
        f.name for g in (StoreSettings, FlushSettings, RetentionSettings, IndexSettings) for f in fields(g)
    ]
    return frozenset(_CONF_KEYS.get(n, _camel(n)) for n in names if n not in _GROUPS)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _convert(current: Any, raw: str) -> Any:
    if isinstance(current, FlushDiskType):
        return FlushDiskType(raw.upper())
    if isinstance(current, bool):
        return raw.lower() == "true"
    if isinstance(current, int):
        return int(raw)
    if isinstance(current, float):
        return float(raw)
    return raw  # strings, and store_path_commit_log whose default is None


def parse_delay_levels(spec: str) -> list[int]:
    """``"1s 5s 1m 2h"`` → ``[1000, 5000, 60000, 7200000]``; level N is index N-1.

    >>> parse_delay_levels("1s 2m")
    [1000, 120000]
    """
    out = []
    for tok in spec.split():
        m = re.fullmatch(r"(\d+)([smhd])", tok)
        if not m:
            raise ValueError(f"bad delay level {tok!r} in messageDelayLevel {spec!r}")
        out.append(int(m.group(1)) * _UNIT_MS[m.group(2)])
    return out
