"""Retention: expired commitlog segments go, with the consume-queue and index files below them.

Called by the store's clean thread (``clean_tick``, at the configured hour or when the disk is
full) and by ``MessageStore.clean_expired``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from .commit_log import CommitLog
from .consume_queue import ConsumeQueue
from .host import is_clean_hour
from .index_service import IndexService
from .settings import StoreSettings

log = logging.getLogger("pyrocketmq.broker.store")


class MessageStore(Protocol):
    """What retention uses of the store."""

    settings: StoreSettings
    commit_log: CommitLog
    index: IndexService
    disk_usage_ratio: Callable[[], float]

    def consume_queues(self) -> list[ConsumeQueue]: ...


def clean_expired(store: MessageStore, now_ms: int, force: bool = False) -> int:
    """Delete whole commitlog segments older than ``fileReservedTime`` (oldest first, at most a
    batch, never the current one); with ``force``, or when the disk is fuller than the forced-clean
    ratio, the oldest go even if young. Then drop consume-queue files wholly below the new
    minimum. Returns the number of commitlog segments deleted."""
    r = store.settings.retention
    clean_now = force or (
        r.clean_file_forcibly_enable and store.disk_usage_ratio() > r.disk_space_clean_forcibly_ratio
    )
    gone = store.commit_log.queue.delete_expired_by_time(
        r.file_reserved_time * 3_600_000, now_ms, clean_now, r.delete_files_batch_max
    )
    for mf in gone:
        log.info("retention deleted commitlog segment %s", mf.path)
    clmin = store.commit_log.min_offset
    cq_files = 0
    for cq in list(store.consume_queues()):
        cq_files += cq.delete_expired(clmin)
    if cq_files:
        log.info("retention deleted %d consume-queue file(s) below offset %d", cq_files, clmin)
    store.index.delete_expired(clmin)
    return len(gone)


def clean_tick(store: MessageStore) -> None:
    r = store.settings.retention
    full = store.disk_usage_ratio() > r.disk_max_used_space_ratio / 100
    if full or is_clean_hour(r.delete_when, time.localtime().tm_hour):
        clean_expired(store, int(time.time() * 1000))
