"""A slave store fed with a master's commitlog bytes in arbitrary chunks ends up identical."""

from __future__ import annotations

from pathlib import Path

from pyrocketmq.broker.ha.frame import TRANSFER_BATCH_SIZE, master_start_offset

from ..store.storekit import check_queue_consistent, make_settings, open_store, put, read_queue


def _copy(master, slave, start: int, chunk: int) -> int:
    pos = start
    while True:
        data = master.get_commit_log_data(pos, chunk)
        if data is None:
            return pos
        assert slave.append_replica(pos, bytes(data))
        pos += len(data)


def test_replica_matches_master_bytes_and_offsets(tmp_path: Path) -> None:
    master = open_store(make_settings(tmp_path / "m"))
    slave = open_store(make_settings(tmp_path / "s"))
    try:
        for i in range(300):  # several segments, with blanks at their ends
            put(master, "T", i % 3, body=b"m%04d" % i * 40, tags="t", KEYS=f"k{i}")
        start = master_start_offset(0, 0, master.commit_log.file_size)
        end = _copy(master, slave, start, 777)  # records cut anywhere
        assert end == master.get_max_phy_offset() == slave.get_max_phy_offset()
        for q in range(3):
            ours, theirs = read_queue(master, "T", q), read_queue(slave, "T", q)
            assert [(m.queue_offset, m.commitlog_offset, m.body) for m in ours] == [
                (m.queue_offset, m.commitlog_offset, m.body) for m in theirs
            ]
            assert len(check_queue_consistent(slave, "T", q)) == 100
        assert slave.query_message("T", "k7", 10, 0, 2**62).buffers  # indexed too
        # a gap or an overlap is refused and changes nothing
        assert not slave.append_replica(end + 1, b"x")
        assert not slave.append_replica(end - 1, b"x")
        put(master, "T", 0, body=b"late")
        _copy(master, slave, end, TRANSFER_BATCH_SIZE)
        assert read_queue(slave, "T", 0)[-1].body == b"late"
    finally:
        master.shutdown()
        slave.shutdown()


def test_empty_slave_starts_at_the_masters_last_segment(tmp_path: Path) -> None:
    master = open_store(make_settings(tmp_path / "m"))
    slave = open_store(make_settings(tmp_path / "s"))
    try:
        for _i in range(300):
            put(master, "T", 0, body=b"x" * 200)
        start = master_start_offset(0, master.get_max_phy_offset(), master.commit_log.file_size)
        assert start > 0
        assert not slave.append_replica(start + 1, b"x")  # not a segment start
        _copy(master, slave, start, 1000)
        assert slave.get_max_phy_offset() == master.get_max_phy_offset()
        assert slave.get_min_phy_offset() == start
        got = read_queue(slave, "T", 0)
        assert got and got[-1].queue_offset == 299
    finally:
        master.shutdown()
        slave.shutdown()


def test_replica_recovers_and_resumes(tmp_path: Path) -> None:
    master = open_store(make_settings(tmp_path / "m"))
    ss = make_settings(tmp_path / "s")
    slave = open_store(ss)
    try:
        for i in range(50):
            put(master, "T", 0, body=b"y%d" % i)
        half = master.get_max_phy_offset() // 2
        data = bytes(master.get_commit_log_data(0, half))
        assert slave.append_replica(0, data)  # ends inside a record
        slave.shutdown()
        slave = open_store(ss)  # the torn tail is dropped; resume from what recovery kept
        pos = slave.get_max_phy_offset()
        assert pos <= half
        _copy(master, slave, pos, 100)
        assert [m.body for m in read_queue(slave)] == [b"y%d" % i for i in range(50)]
    finally:
        master.shutdown()
        slave.shutdown()


def test_truncate_to_cuts_the_log_units_and_index_while_running(tmp_path: Path) -> None:
    store = open_store(make_settings(tmp_path / "s"))
    try:
        for i in range(20):
            put(store, "T", i % 2, body=b"x" * 100, KEYS=f"k{i}")
        cut = read_queue(store, "T", 0)[5].commitlog_offset  # the 11th record
        end = store.get_max_phy_offset()
        assert store.truncate_to(cut, whole=True) == end - cut
        assert store.get_max_phy_offset() == cut
        assert len(read_queue(store, "T", 0)) == 5 and len(read_queue(store, "T", 1)) == 5
        assert not store.query_message("T", "k15", 10, 0, 2**62).buffers
        put(store, "T", 0, body=b"y" * 100)  # writes go on at the cut
        assert [m.body for m in read_queue(store, "T", 0)][-1] == b"y" * 100
        assert (
            store.truncate_to(store.get_max_phy_offset() + 50, whole=True) == 0
        )  # written here: whole records
    finally:
        store.shutdown()
