"""Restart and crash recovery: torn tails, consume queues behind or ahead, no duplicates."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.settings import StoreSettings
from pyrocketmq.remoting.message import tags_code

from .storekit import (
    SEGMENT,
    check_queue_consistent,
    crash,
    make_settings,
    open_store,
    put,
    read_queue,
    segment_paths,
)


def fill(store: MessageStore, n: int, queues: int = 2, size: int = 700) -> list[tuple[int, int, int, bytes]]:
    """n messages round-robin over queues; returns (queue, queue offset, phys, body)."""
    out = []
    for i in range(n):
        body = bytes([1 + i % 250]) * (size + i % 7)
        r = put(store, "T", i % queues, body, tags=f"t{i % 3}")
        out.append((i % queues, r.queue_offset, r.wrote_offset, body))
    return out


def bodies(store: MessageStore, queue: int) -> list[bytes]:
    return [m.body for m in read_queue(store, "T", queue)]


def expected(sent: list[tuple[int, int, int, bytes]], queue: int, below: int | None = None) -> list[bytes]:
    return [b for q, _, phys, b in sent if q == queue and (below is None or phys < below)]


def test_normal_restart(settings: StoreSettings) -> None:
    store = open_store(settings)
    assert os.path.exists(settings.abort_path)
    sent = fill(store, 30)
    store.shutdown()
    assert not os.path.exists(settings.abort_path)
    store = open_store(settings)
    try:
        for q in (0, 1):
            assert bodies(store, q) == expected(sent, q)
            check_queue_consistent(store, "T", q)
        end = store.get_max_phy_offset()
        r = put(store, "T", 0)
        assert r.queue_offset == 15 and r.wrote_offset in (end, end - end % SEGMENT + SEGMENT)
    finally:
        store.shutdown()


def test_crash_without_damage_loses_nothing(settings: StoreSettings) -> None:
    store = open_store(settings)
    sent = fill(store, 30)
    crash(store)
    store = open_store(settings)
    try:
        for q in (0, 1):
            assert bodies(store, q) == expected(sent, q)
            check_queue_consistent(store, "T", q)
        assert put(store, "T", 1).queue_offset == 15
    finally:
        store.shutdown()


def _damage(kind: str, path: str, rec_pos: int, rec_size: int) -> None:
    with open(path, "r+b") as f:
        if kind == "zero-tail":
            f.seek(rec_pos + 30)
            f.write(bytes(SEGMENT - rec_pos - 30))
        elif kind == "bad-crc":
            f.seek(rec_pos + rec_size - 60)  # inside the body (the topic and properties are shorter)
            b = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([b[0] ^ 0xFF]))
        elif kind == "bad-size":
            f.seek(rec_pos)
            f.write((SEGMENT * 2).to_bytes(4, "big"))
        elif kind == "garbage":
            f.seek(rec_pos + rec_size)
            f.write(b"\xab" * 100)
    if kind == "short-file":
        os.truncate(path, rec_pos + 30)


@pytest.mark.parametrize(
    ("kind", "reason", "last_survives"),
    [
        ("zero-tail", "", False),
        ("short-file", "", False),
        ("bad-crc", "body CRC", False),
        ("bad-size", "does not fit", False),
        ("garbage", "bad magic", True),
    ],
)
def test_crash_with_a_torn_tail(
    settings: StoreSettings, caplog: pytest.LogCaptureFixture, kind: str, reason: str, last_survives: bool
) -> None:
    store = open_store(settings)
    sent = fill(store, 12)  # 5 per segment: the last one is second in the third segment
    q_last, qoff_last, phys_last, body_last = sent[-1]
    size_last = store.look_message(phys_last).store_size  # type: ignore[union-attr]
    assert phys_last % SEGMENT != 0
    crash(store)
    _damage(kind, segment_paths(settings)[-1], phys_last % SEGMENT, size_last)
    caplog.set_level(logging.INFO, "pyrocketmq.broker.store")
    store = open_store(settings)
    try:
        cut = None if last_survives else phys_last
        for q in (0, 1):
            assert bodies(store, q) == expected(sent, q, cut)
            check_queue_consistent(store, "T", q)
        if last_survives:
            assert (
                f"dropped torn record at offset {phys_last + size_last} (" in caplog.text
                and reason in caplog.text
            )
            assert store.get_max_phy_offset() == phys_last + size_last
        else:
            if reason:
                assert f"dropped torn record at offset {phys_last} (" in caplog.text and reason in caplog.text
            assert store.get_max_phy_offset() == phys_last
            assert "dropped logical offsets" in caplog.text  # the queue was ahead of the log
        r = put(store, "T", q_last, b"new")
        assert r.queue_offset == (qoff_last + 1 if last_survives else qoff_last)
        assert r.wrote_offset == store.get_max_phy_offset() - r.wrote_bytes
        assert bodies(store, q_last)[-1] == b"new"
    finally:
        store.shutdown()
    with open(segment_paths(settings)[-1], "rb") as f:  # the tail after the last record is zeros
        data = f.read()
    assert not any(data[(store.get_max_phy_offset() % SEGMENT) :])


def test_torn_record_in_an_older_segment_drops_the_later_ones(
    settings: StoreSettings, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(settings)
    sent = fill(store, 20)
    crash(store)
    paths = segment_paths(settings)
    victim = sent[7][2]  # in the second segment
    _damage("bad-crc", paths[1], victim % SEGMENT, store.commit_log.file_size and len(sent[7][3]) + 100)
    caplog.set_level(logging.WARNING, "pyrocketmq.broker.store")
    store = open_store(settings)
    try:
        assert "segment(s) after offset" in caplog.text
        assert len(segment_paths(settings)) == 2
        for q in (0, 1):
            assert bodies(store, q) == expected(sent, q, victim)
            check_queue_consistent(store, "T", q)
    finally:
        store.shutdown()


def _zero_queue_tail(settings: StoreSettings, topic: str, queue: int, keep_units: int) -> None:
    d = os.path.join(settings.consume_queue_dir, topic, str(queue))
    names = sorted(os.listdir(d))
    unit_file = settings.consume_queue_file_size // 20
    for name in names:
        first = int(name) // 20
        with open(os.path.join(d, name), "r+b") as f:
            if first >= keep_units:
                f.write(bytes(settings.consume_queue_file_size))
            elif first + unit_file > keep_units:
                f.seek((keep_units - first) * 20)
                f.write(bytes((first + unit_file - keep_units) * 20))


def test_crash_with_consume_queues_behind(settings: StoreSettings, caplog: pytest.LogCaptureFixture) -> None:
    store = open_store(settings)
    sent = fill(store, 40)
    crash(store)
    _zero_queue_tail(settings, "T", 0, 7)  # the index was flushed less far than the log
    shutil.rmtree(os.path.join(settings.consume_queue_dir, "T", "1"))  # never flushed at all
    caplog.set_level(logging.WARNING, "pyrocketmq.broker.store")
    store = open_store(settings)
    try:
        assert "rebuilt 40 consume-queue unit(s)" in caplog.text  # no checkpoint yet: all from the log
        for q in (0, 1):
            assert bodies(store, q) == expected(sent, q)
            check_queue_consistent(store, "T", q)
        assert put(store, "T", 1).queue_offset == 20
    finally:
        store.shutdown()


def test_crash_with_consume_queue_ahead_of_the_log(settings: StoreSettings) -> None:
    store = open_store(settings)
    sent = fill(store, 30)
    crash(store)
    # the commitlog lost its last two segments' worth (never flushed) but the index kept its units
    cut = 4 * SEGMENT
    paths = segment_paths(settings)
    for p in paths:
        start = int(os.path.basename(p))
        if start >= cut:
            with open(p, "r+b") as f:
                f.write(bytes(SEGMENT))
    store = open_store(settings)
    try:
        for q in (0, 1):
            assert bodies(store, q) == expected(sent, q, cut)
            check_queue_consistent(store, "T", q)
        kept0 = len(expected(sent, 0, cut))
        assert store.get_max_offset_in_queue("T", 0) == kept0
        r = put(store, "T", 0)
        assert (r.queue_offset, r.wrote_offset) == (kept0, cut)
    finally:
        store.shutdown()


def test_repeated_crashes_never_duplicate(settings: StoreSettings) -> None:
    sent: list[tuple[int, int, int, bytes]] = []
    for _ in range(4):
        store = open_store(settings)
        sent += fill(store, 9, queues=3)
        crash(store)
    store = open_store(settings)
    try:
        for q in range(3):
            msgs = check_queue_consistent(store, "T", q)
            assert [m.body for m in msgs] == expected(sent, q)
    finally:
        store.shutdown()


def test_checkpoint_limits_the_scan(
    settings: StoreSettings, clock: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(settings)
    for i in range(25):
        clock[0] += 10_000  # 10 s apart: the 3 s slack covers one message
        put(store, "T", 0, bytes([i + 1]) * 700)
    store.flush_service.run_once()  # commitlog, queues and checkpoint on disk up to message 24
    assert store.checkpoint.logics_msg_timestamp == clock[0]
    for i in range(25, 30):
        clock[0] += 10_000
        put(store, "T", 0, bytes([i + 1]) * 700)
    crash(store)
    _zero_queue_tail(settings, "T", 0, 25)
    caplog.set_level(logging.INFO, "pyrocketmq.broker.store")
    store = open_store(settings)
    try:
        start = int(caplog.text.split("recovering commitlog (abnormal) from segment ")[1].split()[0][-20:])
        assert start == 4 * SEGMENT  # the segment holding message 24, not the first one
        assert "commitlog recovered: 10 record(s) checked" in caplog.text
        assert "rebuilt 10 consume-queue unit(s)" in caplog.text  # those of the scanned segments
        assert [m.body[0] for m in check_queue_consistent(store, "T", 0)] == list(range(1, 31))
    finally:
        store.shutdown()


def test_store_with_queues_but_no_commitlog(settings: StoreSettings) -> None:
    store = open_store(settings)
    fill(store, 5)
    crash(store)
    shutil.rmtree(settings.commit_log_dir)
    store = open_store(settings)
    try:
        assert store.get_max_offset_in_queue("T", 0) == 0 and bodies(store, 0) == []
        assert put(store, "T", 0).queue_offset == 0
    finally:
        store.shutdown()


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 1500)), min_size=1, max_size=25),
    cut_at=st.floats(0, 1),
    after=st.integers(0, 3),
)
def test_any_torn_point_leaves_a_consistent_prefix(
    sizes: list[tuple[int, int]], cut_at: float, after: int
) -> None:
    root = tempfile.mkdtemp()
    try:
        s = make_settings(Path(root) / "store")
        store = open_store(s)
        sent = []
        for i, (q, n) in enumerate(sizes):
            r = put(store, "T", q, bytes([1 + i % 250]) * n, tags="x")
            sent.append((q, r.wrote_offset, r.wrote_bytes, i))
        crash(store)
        end = sent[-1][1] + sent[-1][2]
        cut = int(end * cut_at)
        for p in segment_paths(s):  # lose everything from `cut` on, in every segment
            start = int(os.path.basename(p))
            if start + SEGMENT > cut:
                with open(p, "r+b") as f:
                    f.seek(max(0, cut - start))
                    f.write(bytes(SEGMENT - max(0, cut - start)))
        store = open_store(s)
        try:
            survivors = [(q, i) for q, phys, size, i in sent if phys + size <= cut]
            for q in range(3):
                got = [m.body[0] - 1 for m in check_queue_consistent(store, "T", q)]
                want = [i % 250 for qq, i in survivors if qq == q]
                assert got == want
            for k in range(after):  # and the store keeps working
                r = put(store, "T", k % 3, b"more")
                assert r.queue_offset == store.get_max_offset_in_queue("T", k % 3) - 1
            for q in range(3):
                check_queue_consistent(store, "T", q)
        finally:
            store.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_torn_consume_queue_units_are_rederived(settings: StoreSettings) -> None:
    store = open_store(settings)
    sent = fill(store, 12, queues=1)
    crash(store)
    # the last unit's page was half written: a right commitlog offset and size, tagsCode lost
    path = os.path.join(settings.consume_queue_dir, "T", "0", f"{200:020d}")
    with open(path, "r+b") as f:
        f.seek(20 + 12)
        f.write(bytes(8))
    store = open_store(settings)
    try:
        cq = store.find_consume_queue("T", 0)
        assert cq is not None
        assert [cq.get(i)[2] for i in range(12)] == [tags_code(f"t{i % 3}") for i in range(12)]  # type: ignore[index]
        assert [m.body for m in check_queue_consistent(store, "T", 0)] == expected(sent, 0)
    finally:
        store.shutdown()
