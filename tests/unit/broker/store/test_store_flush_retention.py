"""Flush service (async periodic, sync group commit) and retention."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from pyrocketmq.broker.store.checkpoint import Checkpoint
from pyrocketmq.broker.store.flush import Wake
from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.retention import clean_tick
from pyrocketmq.broker.store.settings import StoreSettings
from pyrocketmq.broker.store.values import GetMessageStatus as S

from .storekit import SEGMENT, make_settings, open_store, put, read_queue, segment_paths


def _wait(cond, timeout: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.005)
    return cond()


# -- flush ----------------------------------------------------------------------------------------


def test_group_commit_one_sync_covers_every_waiting_request(tmp_path: Path) -> None:
    store = open_store(make_settings(tmp_path, sync=True))
    try:
        assert store.sync_flush
        answers: list[tuple[int, bool, str]] = []
        for i in range(10):
            r = put(store, body=b"m" * 50)
            store.request_flush(
                r.end_offset, lambda ok, i=i: answers.append((i, ok, threading.current_thread().name))
            )
        assert answers == [] and store.flush_service.pending == 10
        before = store.commit_log.queue.sync_count
        store.flush_service.run_once()
        assert store.commit_log.queue.sync_count == before + 1
        assert [(i, ok) for i, ok, _ in answers] == [(i, True) for i in range(10)]
        # already durable: answered without another sync
        store.request_flush(store.get_max_phy_offset(), lambda ok: answers.append((99, ok, "")))
        store.flush_service.run_once()
        assert store.commit_log.queue.sync_count == before + 1 and answers[-1][:2] == (99, True)
    finally:
        store.shutdown()


def test_group_commit_on_the_flush_thread(tmp_path: Path) -> None:
    store = open_store(make_settings(tmp_path, sync=True))
    store.start()
    try:
        done = threading.Event()
        seen: list[tuple[bool, str]] = []

        def cb(ok: bool) -> None:
            seen.append((ok, threading.current_thread().name))
            done.set()

        r = put(store)
        store.request_flush(r.end_offset, cb)
        assert done.wait(5)
        assert seen == [(True, "FlushService")]
        assert store.commit_log.queue.flushed_where >= r.end_offset
    finally:
        store.shutdown()


def test_async_flush_runs_periodically_and_writes_the_checkpoint(tmp_path: Path) -> None:
    s = make_settings(tmp_path)
    s.flush.flush_interval_commit_log = 20
    s.flush.flush_interval_consume_queue = 20
    store = open_store(s)
    store.start()
    try:
        r = put(store, body=b"a" * 100)
        assert _wait(lambda: store.commit_log.queue.flushed_where == store.get_max_phy_offset())
        cp = Checkpoint(s.checkpoint_path)
        assert _wait(lambda: (cp.load(), cp.physic_msg_timestamp)[1] == r.store_timestamp)
        assert cp.logics_msg_timestamp == r.store_timestamp
    finally:
        store.shutdown()


def test_shutdown_answers_pending_requests(tmp_path: Path) -> None:
    store = open_store(make_settings(tmp_path, sync=True))
    got: list[bool] = []
    store.request_flush(put(store).end_offset, got.append)
    store.shutdown()
    assert got == [True]


def test_a_failed_sync_answers_false(store: MessageStore, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> int:
        raise OSError(5, "EIO")

    monkeypatch.setattr(store.commit_log, "flush", broken)
    got: list[bool] = []
    store.request_flush(put(store).end_offset, got.append)
    store.flush_service.run_once()
    assert got == [False]
    monkeypatch.undo()


# -- retention ------------------------------------------------------------------------------------

HOUR_MS = 3_600_000


def _age(settings: StoreSettings, count: int, hours: float) -> None:
    t = time.time() - hours * 3600
    for p in segment_paths(settings)[:count]:
        os.utime(p, (t, t))


def test_retention_deletes_expired_segments_and_index_files(
    store: MessageStore, settings: StoreSettings
) -> None:
    for i in range(25):
        put(store, body=bytes([i]) * 1000)  # 3 per segment: 9 segments
    _age(settings, 5, 73)
    assert store.clean_expired() == 5
    assert store.get_min_phy_offset() == 5 * SEGMENT
    assert len(segment_paths(settings)) == 4
    cq_dir = os.path.join(settings.consume_queue_dir, "T", "0")
    assert sorted(os.listdir(cq_dir)) == ["00000000000000000200", "00000000000000000400"]
    assert store.get_min_offset_in_queue("T", 0) == 15
    g = store.get_message("g", "T", 0, 0, 32)
    assert (g.status, g.next_begin_offset) == (S.OFFSET_TOO_SMALL, 15)
    assert [m.body[0] for m in read_queue(store)] == list(range(15, 25))
    _age(settings, 100, 100)  # everything is old now: all but the current segment go
    assert store.clean_expired() == 3
    assert [os.path.basename(p) for p in segment_paths(settings)] == [f"{8 * SEGMENT:020d}"]
    assert sorted(os.listdir(cq_dir)) == ["00000000000000000400"]
    assert store.get_min_offset_in_queue("T", 0) == 24
    assert put(store).queue_offset == 25


def test_retention_survives_a_restart(settings: StoreSettings) -> None:
    store = open_store(settings)
    for i in range(25):
        put(store, body=bytes([i]) * 1000)
    _age(settings, 5, 73)
    store.clean_expired()
    store.shutdown()
    store = open_store(settings)
    try:
        assert store.get_min_phy_offset() == 5 * SEGMENT
        assert store.get_min_offset_in_queue("T", 0) == 15 and store.get_max_offset_in_queue("T", 0) == 25
        assert [m.body[0] for m in read_queue(store)] == list(range(15, 25))
    finally:
        store.shutdown()


def test_young_segments_stay_unless_the_disk_is_full(store: MessageStore, settings: StoreSettings) -> None:
    for i in range(10):
        put(store, body=bytes([i]) * 1000)
    assert store.clean_expired() == 0
    store.disk_usage_ratio = lambda: 0.95  # past the forced-clean ratio (0.85)
    assert store.clean_expired() == 3
    assert store.get_min_offset_in_queue("T", 0) == 9
    store.disk_usage_ratio = lambda: 0.5
    assert store.clean_expired(force=True) == 0  # only the current segment is left


def test_the_timer_only_cleans_at_delete_when_or_when_space_runs_short(
    store: MessageStore, settings: StoreSettings
) -> None:
    for i in range(10):
        put(store, body=bytes([i]) * 1000)
    _age(settings, 2, 80)
    hour = time.localtime().tm_hour
    settings.retention.delete_when = f"{(hour + 12) % 24:02d}"
    clean_tick(store)
    assert len(segment_paths(settings)) == 4
    store.disk_usage_ratio = lambda: 0.80  # over diskMaxUsedSpaceRatio (75): expired ones go now
    clean_tick(store)
    assert len(segment_paths(settings)) == 2
    store.disk_usage_ratio = lambda: 0.1
    _age(settings, 1, 80)
    settings.retention.delete_when = f"{(hour + 12) % 24:02d};{hour:02d}"
    clean_tick(store)
    assert len(segment_paths(settings)) == 1


def test_wake_is_an_event_for_one_waiter() -> None:
    w = Wake()
    assert not w.is_set() and w.wait(0.01) is False
    w.set()
    w.set()  # a second set before the wait changes nothing
    assert w.is_set() and w.wait(5) is True
    w.clear()
    started = time.monotonic()
    assert w.wait(0.05) is False and time.monotonic() - started >= 0.04

    woken = []
    t = threading.Thread(target=lambda: woken.append(w.wait(5)))
    t.start()
    time.sleep(0.05)
    w.set()
    t.join(5)
    assert woken == [True]
