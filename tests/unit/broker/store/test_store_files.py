"""MappedFile, MappedFileQueue, checkpoint, atomic config files, settings."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pyrocketmq.broker.store.checkpoint import Checkpoint
from pyrocketmq.broker.store.mapped_file import MappedFile, parse_segment_name, segment_name
from pyrocketmq.broker.store.mapped_file_queue import MappedFileQueue, StoreError
from pyrocketmq.broker.store.settings import FlushDiskType, StoreSettings, parse_delay_levels
from pyrocketmq.server.config_file import load_json, read_with_backup, save_json, write_atomic

# -- MappedFile ----------------------------------------------------------------------------------


def test_segment_names() -> None:
    assert segment_name(4096) == "00000000000000004096"
    assert parse_segment_name("00000000000000004096") == 4096
    assert parse_segment_name("00000000000000004096.tmp") is None


def test_mapped_file_append_view_flush(tmp_path: Path) -> None:
    mf = MappedFile(str(tmp_path / segment_name(8192)), 4096)
    assert os.path.getsize(mf.path) == 4096 and mf.file_from_offset == 8192
    assert mf.append(b"hello") == 0 and mf.append(b"world") == 5
    assert bytes(mf.view(0, 10)) == b"helloworld"
    assert mf.view(8, 5) is None  # not written yet
    assert bytes(mf.view_from(5)) == b"world" and mf.view_from(10) is None
    assert mf.dirty_bytes() == 10 and mf.flush() == 10 and mf.dirty_bytes() == 0
    assert mf.end_offset == 8202
    mf.close()
    assert open(mf.path, "rb").read(10) == b"helloworld"


def test_mapped_file_reopen_keeps_bytes_and_rejects_oversize(tmp_path: Path) -> None:
    p = str(tmp_path / segment_name(0))
    mf = MappedFile(p, 4096, keep_fd=False)
    mf.append(b"abc")
    mf.flush()
    mf.close()
    again = MappedFile(p, 4096)
    assert bytes(again.buffer()[:3]) == b"abc"
    again.close()
    with pytest.raises(ValueError, match="configured segment size"):
        MappedFile(p, 1024)


def test_truncate_to_zeroes_the_tail(tmp_path: Path) -> None:
    mf = MappedFile(str(tmp_path / segment_name(0)), 4096)
    mf.append(b"\xff" * 3000)
    mf.truncate_to(1000)
    assert mf.wrote_position == 1000
    assert bytes(mf.buffer()[999:1001]) == b"\xff\x00"
    mf.close()
    data = open(mf.path, "rb").read()
    assert len(data) == 4096 and data[:1000] == b"\xff" * 1000 and not any(data[1000:])


def test_destroy_with_a_live_view(tmp_path: Path) -> None:
    mf = MappedFile(str(tmp_path / segment_name(0)), 4096)
    mf.append(b"pulled")
    view = mf.view(0, 6)
    mf.destroy()  # a pull is still writing this view out: the mapping must outlive the file
    assert not os.path.exists(mf.path)
    assert bytes(view) == b"pulled"
    with pytest.raises(ValueError):
        mf.view(0, 1)
    mf.destroy()  # idempotent


# -- MappedFileQueue ------------------------------------------------------------------------------


def test_queue_rolls_and_finds(tmp_path: Path) -> None:
    q = MappedFileQueue(str(tmp_path / "q"), 100)
    assert q.max_offset == 0 and q.min_offset == -1 and q.find(0) is None
    for _ in range(25):
        mf = q.last_for_write()
        mf.append(b"0123456789")
    assert [f.file_from_offset for f in q.files] == [0, 100, 200]
    assert q.max_offset == 250 and q.min_offset == 0
    assert q.find(0) is q.files[0] and q.find(199) is q.files[1] and q.find(299) is q.files[2]
    assert q.find(300) is None and q.find(300, return_first_on_not_found=True) is q.files[0]
    assert q.flush() == 250 and q.sync_count == 3
    assert q.flush() == 250 and q.sync_count == 3  # nothing dirty: no sync
    q.close()


def _random_read_advice(path: str) -> bool:
    """Whether this process maps ``path`` with MADV_RANDOM (``rr`` in its smaps VmFlags)."""
    mapping = None
    with open("/proc/self/smaps") as fh:
        for line in fh:
            if "-" in line.split(" ", 1)[0] and ":" not in line.split(" ", 1)[0]:
                mapping = line.rstrip("\n").endswith(path)
            elif mapping and line.startswith("VmFlags:"):
                return "rr" in line.split()
    raise AssertionError(f"{path} is not mapped")


def test_only_the_segment_being_written_is_advised_random(tmp_path: Path) -> None:
    plain = MappedFileQueue(str(tmp_path / "p"), 8192)
    assert not _random_read_advice(plain.last_for_write().path), "only a queue synced often is advised"
    plain.close()
    q = MappedFileQueue(str(tmp_path / "q"), 8192, synced_often=True)
    for _ in range(3):
        q.last_for_write().append(b"x" * 4096)
    first, second = q.files
    assert not _random_read_advice(first.path), "a full segment reads ahead again"
    assert _random_read_advice(second.path), "the written one keeps one-page folios"
    q.close()
    again = MappedFileQueue(str(tmp_path / "q"), 8192, synced_often=True)
    again.load()
    assert [_random_read_advice(f.path) for f in again.files] == [False, True]
    again.close()


def test_queue_first_segment_placed_at_offset(tmp_path: Path) -> None:
    q = MappedFileQueue(str(tmp_path / "q"), 100)
    mf = q.last_for_write(250)
    assert mf.file_from_offset == 200
    q.close()


def test_queue_load_and_truncate_dirty(tmp_path: Path) -> None:
    d = str(tmp_path / "q")
    q = MappedFileQueue(d, 100)
    for _ in range(25):
        q.last_for_write().append(b"x" * 10)
    q.close()
    q = MappedFileQueue(d, 100)
    q.load()
    assert len(q.files) == 3 and all(f.wrote_position == 100 for f in q.files)
    q.truncate_dirty(130)
    assert [f.file_from_offset for f in q.files] == [0, 100]
    assert q.max_offset == 130 and q.files[1].wrote_position == 30
    assert not any(q.files[1].buffer()[30:])
    assert sorted(os.listdir(d)) == [segment_name(0), segment_name(100)]
    q.close()


def test_queue_load_rejects_wrong_sizes_but_extends_a_short_last_segment(tmp_path: Path) -> None:
    d = tmp_path / "q"
    d.mkdir()
    (d / segment_name(0)).write_bytes(b"\x00" * 100)
    (d / segment_name(100)).write_bytes(b"\x01" * 10)
    q = MappedFileQueue(str(d), 100)
    q.load()
    assert os.path.getsize(d / segment_name(100)) == 100
    q.close()
    (d / segment_name(0)).write_bytes(b"\x00" * 50)
    with pytest.raises(StoreError, match="segment size"):
        MappedFileQueue(str(d), 100).load()


def test_queue_delete_expired_by_time_never_the_last(tmp_path: Path) -> None:
    q = MappedFileQueue(str(tmp_path / "q"), 100)
    for _ in range(40):
        q.last_for_write().append(b"x" * 10)
    old = time.time() - 3600
    for f in q.files:
        os.utime(f.path, (old, old))
    now = int(time.time() * 1000)
    assert q.delete_expired_by_time(7_200_000, now, False, 10) == []
    gone = q.delete_expired_by_time(1_000, now, False, 2)
    assert [f.file_from_offset for f in gone] == [0, 100]
    gone = q.delete_expired_by_time(1_000, now, False, 10)
    assert [f.file_from_offset for f in gone] == [200]
    assert [f.file_from_offset for f in q.files] == [300]
    q.close()


# -- checkpoint -----------------------------------------------------------------------------------


def test_checkpoint_layout_and_min_timestamp(tmp_path: Path) -> None:
    cp = Checkpoint(str(tmp_path / "checkpoint"))
    cp.load()
    assert cp.min_timestamp == 0
    cp.physic_msg_timestamp, cp.logics_msg_timestamp, cp.index_msg_timestamp = 10_000, 8_000, 5
    cp.flush()
    raw = (tmp_path / "checkpoint").read_bytes()
    assert len(raw) == 4096
    assert raw[:24] == (10_000).to_bytes(8, "big") + (8_000).to_bytes(8, "big") + (5).to_bytes(8, "big")
    again = Checkpoint(str(tmp_path / "checkpoint"))
    again.load()
    assert again.min_timestamp == 5_000


# -- atomic config files --------------------------------------------------------------------------


def test_save_keeps_a_backup_and_load_falls_back(tmp_path: Path) -> None:
    p = str(tmp_path / "config" / "topics.json")
    assert load_json(p) is None
    save_json(p, {"v": 1})
    save_json(p, {"v": 2})
    assert load_json(p) == {"v": 2}
    assert load_json(p + ".bak") == {"v": 1}
    assert not os.path.exists(p + ".tmp")
    with open(p, "wb") as f:  # a torn main file (e.g. written by another tool)
        f.write(b'{"v": ')
    assert load_json(p) == {"v": 1}
    os.unlink(p)  # crash between the two renames
    assert load_json(p) == {"v": 1}
    assert read_with_backup(p) == open(p + ".bak", "rb").read()


def test_write_atomic_text_and_non_str_keys(tmp_path: Path) -> None:
    p = str(tmp_path / "x.json")
    write_atomic(p, "hello")
    assert open(p).read() == "hello"
    save_json(p, {"offsetTable": {"T@g": {0: 12}}})
    assert load_json(p) == {"offsetTable": {"T@g": {"0": 12}}}


# -- settings -------------------------------------------------------------------------------------


def test_settings_from_conf() -> None:
    s = StoreSettings.from_conf(
        {
            "storePathRootDir": "/data/store",
            "mappedFileSizeCommitLog": "4096",
            "mappedFileSizeConsumeQueue": "210",
            "flushDiskType": "sync_flush",
            "flushIntervalCommitLog": "100",
            "fileReservedTime": "48",
            "deleteWhen": "03;15",
            "checkCRCOnRecover": "false",
            "messageDelayLevel": "1s 1m",
            "brokerName": "ignored",
        }
    )
    assert s.store_path_root_dir == "/data/store" and s.commit_log_dir == "/data/store/commitlog"
    assert s.mapped_file_size_commit_log == 4096
    assert s.consume_queue_file_size == 220  # rounded up to whole units
    assert s.flush.flush_disk_type == FlushDiskType.SYNC_FLUSH and s.sync_flush
    assert s.flush.flush_interval_commit_log == 100 and s.sync_flush_timeout_ms == 5000
    assert s.retention.file_reserved_time == 48 and s.retention.delete_when == "03;15"
    assert s.check_crc_on_recover is False
    assert s.delay_levels_ms == [1000, 60_000]
    assert StoreSettings.knows("diskMaxUsedSpaceRatio") and not StoreSettings.knows("brokerName")


def test_delay_levels() -> None:
    levels = parse_delay_levels(StoreSettings().message_delay_level)
    assert len(levels) == 18 and levels[0] == 1000 and levels[-1] == 7_200_000
    with pytest.raises(ValueError):
        parse_delay_levels("1x")
