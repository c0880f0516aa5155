"""The key index: Java's keyHash, the file layout, chains, rolls, time ranges, restart, crash
recovery, retention, and the store's query by key on top of it."""

from __future__ import annotations

import logging
import os
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from pyrocketmq.broker.store.index_file import (
    ENTRY_SIZE,
    HEADER_SIZE,
    IndexFile,
    _combine,
    _hash_u32,
    _positive,
    index_file_name,
    index_file_size,
    key_hash,
)
from pyrocketmq.broker.store.index_service import IndexService
from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.settings import IndexSettings, StoreSettings
from pyrocketmq.broker.store.values import MessageInner
from pyrocketmq.remoting.message import SysFlag, decode_message, tags_code

from .storekit import SEGMENT, crash, make_settings, open_store, put, put_batch, segment_paths

FOREVER = 2**63 - 1


def tiny(root: Path | str, slots: int = 8, entries: int = 6, **kw: object) -> StoreSettings:
    """4 KiB commitlog segments; index files of ``slots`` slots and ``entries - 1`` usable entries."""
    s = make_settings(root, **kw)
    s.index.max_hash_slot_num = slots
    s.index.max_index_num = entries
    return s


def die(store: MessageStore) -> None:
    """A killed process: nothing flushed, the abort file stays, written pages stay in the page cache."""
    crash(store)
    store.index.close()


def found(
    store: MessageStore, key: str, topic: str = "T", max_num: int = 32, begin: int = 0, end: int = FOREVER
):
    r = store.query_message(topic, key, max_num, begin, end)
    return [decode_message(b)[0] for b in r.buffers]


def bodies_for(store: MessageStore, key: str, **kw: object) -> list[bytes]:
    return [m.body for m in found(store, key, **kw)]  # type: ignore[arg-type]


# -- keyHash ------------------------------------------------------------------------------------


def test_key_hash_is_abs_of_java_string_hash_code() -> None:
    assert key_hash("TopicTest", "key-7") == abs(tags_code("TopicTest#key-7"))
    # Java: "polygenelubricants".hashCode() == Integer.MIN_VALUE, and Math.abs of it stays negative,
    # so RocketMQ's indexKeyHashMethod maps it to 0.
    assert tags_code("polygenelubricants") == -(2**31)
    assert _positive(_hash_u32("polygenelubricants")) == 0
    # "Aa" and "BB" share a hashCode: so do "T#Aa" and "T#BB" (the store must check the record).
    assert key_hash("T", "Aa") == key_hash("T", "BB")


_SVC = IndexService("/nonexistent", IndexSettings())


@given(st.text(max_size=40), st.text(max_size=100) | st.text("0123456789ABCDEF", min_size=17, max_size=200))
def test_hash_of_prefix_plus_key_is_the_hash_of_the_whole(topic: str, key: str) -> None:
    whole = tags_code(f"{topic}#{key}")
    assert key_hash(topic, key) == (0 if whole == -(2**31) else abs(whole))
    prefix = _hash_u32(topic + "#")
    assert _combine(prefix, key) == key_hash(topic, key)
    # the build path: cached hash of all but the last 12 characters, then the tail
    assert _SVC._key_hash(topic, prefix, key) == key_hash(topic, key)
    assert _SVC._key_hash(topic, prefix, key) == key_hash(topic, key)


# -- one file -------------------------------------------------------------------------------------


def test_file_layout_and_chains_through_prev_index(tmp_path: Path) -> None:
    path = str(tmp_path / index_file_name(1_700_000_000_123))
    assert os.path.basename(path).isdigit() and len(os.path.basename(path)) == 17
    f = IndexFile(path, 4, 8)
    assert os.path.getsize(path) == index_file_size(4, 8) == HEADER_SIZE + 4 * 4 + 8 * ENTRY_SIZE
    # hashes 1, 5, 9 share slot 1 (mod 4); 2 has slot 2
    assert f.put_key(1, 100, 10_000)
    assert f.put_key(5, 200, 11_500)
    assert f.put_key(2, 300, 12_000)
    assert f.put_key(9, 400, 14_999)
    raw = open(path, "rb").read()
    assert struct.unpack_from(">qqqqii", raw, 0) == (10_000, 14_999, 100, 400, 2, 5)
    assert struct.unpack_from(">4i", raw, HEADER_SIZE) == (0, 4, 3, 0)
    entries = [struct.unpack_from(">iqii", raw, HEADER_SIZE + 16 + i * 20) for i in range(5)]
    assert entries == [
        (0, 0, 0, 0),  # entry 0 is never used: prevIndex 0 ends a chain
        (1, 100, 0, 0),
        (5, 200, 1, 1),
        (2, 300, 2, 0),
        (9, 400, 4, 2),
    ]
    out: list[int] = []
    f.select(5, 10, 0, FOREVER, out, set(), None)
    assert out == [200]  # walked 400 → 200 → 100, kept the hash that matches
    out = []
    f.select(9, 10, 0, FOREVER, out, set(), lambda phy: False)
    assert out == []
    f.close()


def test_garbage_slots_and_links_end_a_chain(tmp_path: Path) -> None:
    path = str(tmp_path / "20240101000000000")
    f = IndexFile(path, 2, 8)
    f.put_key(2, 10, 1000)
    f.put_key(4, 20, 1000)
    f.close()
    with open(path, "r+b") as fh:  # slot 0 names entry 7 (never written) ; entry 2 links to itself
        fh.seek(HEADER_SIZE)
        fh.write(struct.pack(">i", 7))
    f = IndexFile(path, 2, 8)
    out: list[int] = []
    f.select(4, 10, 0, FOREVER, out, set(), None)
    assert out == []
    assert f.put_key(6, 30, 1000)  # starts a new chain instead of linking to entry 7
    assert f.entries()[-1] == (6, 30, 0, 0)
    with open(path, "r+b") as fh:
        fh.seek(HEADER_SIZE + 2 * 4 + 3 * ENTRY_SIZE + 16)
        fh.write(struct.pack(">i", 3))  # entry 3 → entry 3: a cycle
    out = []
    f.select(6, 10, 0, FOREVER, out, set(), None)
    assert out == [30]
    f.close()


def test_wrong_size_file_is_left_alone(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    d = tmp_path / "index"
    d.mkdir()
    (d / "20240101000000000").write_bytes(b"\0" * 100)
    svc = IndexService(str(d), IndexSettings(max_hash_slot_num=4, max_index_num=4))
    svc.load()
    assert svc.files == [] and "index file ignored" in caplog.text
    assert (d / "20240101000000000").stat().st_size == 100


# -- the store ------------------------------------------------------------------------------------


def test_keys_and_uniq_key_are_indexed_per_topic(tmp_path: Path) -> None:
    store = open_store(tiny(tmp_path, slots=64, entries=64))
    try:
        put(store, "T", 0, b"a", KEYS="order-1 user-7", UNIQ_KEY="U1")
        put(store, "T", 1, b"b", KEYS="order-2  user-7")
        put(store, "Other", 0, b"c", KEYS="order-1")
        put(store, "T", 0, b"d")  # no keys: not indexed
        assert bodies_for(store, "order-1") == [b"a"]
        assert bodies_for(store, "user-7") == [b"a", b"b"]
        assert bodies_for(store, "U1") == [b"a"]
        assert bodies_for(store, "order-1", topic="Other") == [b"c"]
        assert bodies_for(store, "user") == [] and bodies_for(store, "") == []
        r = store.query_message("T", "order-2", 32, 0, FOREVER)
        (m,) = [decode_message(b)[0] for b in r.buffers]
        assert bytes(r.buffers[0]) == store.look_message_by_offset(m.commitlog_offset)
        assert (r.index_last_update_timestamp, r.index_last_update_phyoffset) == (
            store.look_message(r.index_last_update_phyoffset).store_timestamp,  # type: ignore[union-attr]
            store.index.last_phy,
        )
        # 4 entries for the first message's keys ... 1 + 2 + 1 in all; entry 0 unused
        assert sum(len(f.entries()) for f in store.index.files) == 6
    finally:
        store.shutdown()


def test_full_hash_collisions_are_filtered_by_the_record(tmp_path: Path) -> None:
    store = open_store(tiny(tmp_path, slots=1, entries=64))  # one slot: every key shares one chain
    try:
        put(store, "T", 0, b"aa", KEYS="Aa")
        put(store, "T", 0, b"bb", KEYS="BB")  # same keyHash as "Aa"
        put(store, "Aa", 0, b"t1", KEYS="k")
        put(store, "BB", 0, b"t2", KEYS="k")  # "BB#k" hashes like "Aa#k"
        put(store, "T", 0, b"u", UNIQ_KEY="BB")
        assert bodies_for(store, "Aa") == [b"aa"]
        assert bodies_for(store, "BB") == [b"bb", b"u"]
        assert bodies_for(store, "k", topic="Aa") == [b"t1"]
        assert bodies_for(store, "k", topic="BB") == [b"t2"]
        assert [p for _, _, _, p in store.index.files[0].entries()] == [0, 1, 2, 3, 4]  # one chain
    finally:
        store.shutdown()


def test_rolls_to_a_new_file_when_full_and_queries_across_files(tmp_path: Path, clock: list[int]) -> None:
    s = tiny(tmp_path, slots=4, entries=4)  # 3 entries per file
    store = open_store(s)
    try:
        phys = []
        for i in range(10):
            clock[0] += 1000
            phys.append(put(store, "T", 0, bytes([i]), KEYS=f"k{i % 2}").wrote_offset)
        files = store.index.files
        assert len(files) == 4 and [len(f.entries()) for f in files] == [3, 3, 3, 1]
        names = sorted(os.listdir(s.index_dir))
        assert names == [os.path.basename(f.path) for f in files] and len(set(names)) == 4
        for prev, f in zip(files, files[1:], strict=False):
            assert f.begin_phy_offset > prev.end_phy_offset and f.begin_timestamp > prev.end_timestamp
        assert [b[0] for b in bodies_for(store, "k0")] == [0, 2, 4, 6, 8]
        assert [b[0] for b in bodies_for(store, "k1")] == [1, 3, 5, 7, 9]
        # the newest max_num, in commitlog order
        assert [b[0] for b in bodies_for(store, "k0", max_num=2)] == [6, 8]
        s.index.max_msgs_num_batch = 3  # maxMsgsNumBatch caps maxNum
        assert [b[0] for b in bodies_for(store, "k1", max_num=32)] == [5, 7, 9]
        r = store.query_message("T", "k1", 32, 0, FOREVER)
        assert (r.index_last_update_timestamp, r.index_last_update_phyoffset) == (clock[0], phys[-1])
    finally:
        store.shutdown()


def test_time_range(tmp_path: Path, clock: list[int]) -> None:
    store = open_store(tiny(tmp_path, slots=4, entries=5))
    try:
        t0 = clock[0] = 1_700_000_000_500
        times = []
        for i in range(8):
            clock[0] = t0 + i * 1700  # not on whole seconds: the index keeps seconds, the store checks ms
            times.append(put(store, "T", 0, bytes([i]), KEYS="k").store_timestamp)
        assert len(store.index.files) == 2

        def window(begin: int, end: int) -> list[int]:
            return [b[0] for b in bodies_for(store, "k", begin=begin, end=end)]

        assert window(0, FOREVER) == list(range(8))
        assert window(times[2], times[5]) == [2, 3, 4, 5]
        assert window(times[2] + 1, times[5] - 1) == [3, 4]
        assert window(times[7] + 1, FOREVER) == [] and window(0, times[0] - 1) == []
        assert window(times[4], times[4]) == [4]
        assert store.query_message("T", "k", 32, times[7] + 1, FOREVER).buffers == []
    finally:
        store.shutdown()


def test_batch_transactions_and_switch(tmp_path: Path) -> None:
    store = open_store(tiny(tmp_path, slots=16, entries=64))
    try:
        assert put_batch(
            store, "T", 2, [(bytes([i]), {"KEYS": f"b{i}", "UNIQ_KEY": f"UB{i}"}) for i in range(3)]
        ).ok
        half = MessageInner.build("T", b"half", {"KEYS": "tx"}, sys_flag=SysFlag.TRANSACTION_PREPARED)
        assert store.put_message(half).ok
        assert bodies_for(store, "b1") == [b"\x01"] and bodies_for(store, "UB2") == [b"\x02"]
        assert bodies_for(store, "tx") == []  # not dispatched, not indexed (as in Java)
        store.settings.index.message_index_enable = False
        put(store, "T", 0, b"off", KEYS="later")
        assert bodies_for(store, "later") == []
        assert bodies_for(store, "b0") == [b"\x00"]  # what is indexed stays queryable
    finally:
        store.shutdown()


def test_disabled_index_writes_no_files(tmp_path: Path) -> None:
    s = tiny(tmp_path)
    s.index.message_index_enable = False
    store = open_store(s)
    try:
        put(store, "T", 0, b"x", KEYS="k", UNIQ_KEY="U")
        assert not os.path.exists(s.index_dir) and bodies_for(store, "k") == []
    finally:
        store.shutdown()


# -- restart and recovery -------------------------------------------------------------------------


def test_restart_reloads_the_files(tmp_path: Path) -> None:
    s = tiny(tmp_path, slots=4, entries=4)
    store = open_store(s)
    for i in range(7):
        put(store, "T", 0, bytes([i]), KEYS=f"k{i % 3}", UNIQ_KEY=f"U{i}")
    before = [(f.path, f.entries(), f.end_phy_offset, f.end_timestamp) for f in store.index.files]
    store.shutdown()
    assert store.checkpoint.index_msg_timestamp == store.commit_log.last_store_timestamp
    store = open_store(s)
    try:
        assert [(f.path, f.entries(), f.end_phy_offset, f.end_timestamp) for f in store.index.files] == before
        assert [b[0] for b in bodies_for(store, "k1")] == [1, 4]
        assert bodies_for(store, "U6") == [b"\x06"]
        put(store, "T", 0, b"\x07", KEYS="k1")
        assert [b[0] for b in bodies_for(store, "k1")] == [1, 4, 7]
    finally:
        store.shutdown()


def test_crash_ignores_entries_past_the_recovered_log_and_reuses_their_offsets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = tiny(tmp_path, slots=4, entries=4)  # the dropped entries span files
    store = open_store(s)
    sent = [put(store, "T", 0, bytes([i]) * 700, KEYS=f"k{i}", UNIQ_KEY=f"U{i}") for i in range(12)]
    assert len(store.index.files) == 8  # 2 keys per message, 3 entries per file
    die(store)
    cut = sent[8].wrote_offset  # the commitlog lost messages 8..11 (the index, in the page cache, did not)
    for p in segment_paths(s):
        start = int(os.path.basename(p))
        with open(p, "r+b") as f:
            if start + SEGMENT > cut:
                f.seek(max(0, cut - start))
                f.write(bytes(SEGMENT - max(0, cut - start)))
    caplog.set_level(logging.WARNING, "pyrocketmq.broker.store")
    store = open_store(s)
    try:
        assert store.get_max_phy_offset() == cut
        assert "undid 8 index entr(ies)" in caplog.text
        assert store.index.last_phy == sent[7].wrote_offset
        entries = [e for f in store.index.files for e in f.entries()]
        assert len(entries) == 16 and max(e[1] for e in entries) < cut
        assert len(os.listdir(s.index_dir)) == len(store.index.files) == 6  # emptied files went
        assert bodies_for(store, "k7") == [bytes([7]) * 700]
        assert all(bodies_for(store, k) == [] for k in ("k8", "U8", "k11"))
        # New records land on the dropped offsets: found under their own keys only.
        new = [put(store, "T", 0, bytes([i]) * 700, KEYS=f"n{i}", UNIQ_KEY=f"V{i}") for i in range(8, 12)]
        assert [r.wrote_offset for r in new] == [r.wrote_offset for r in sent[8:]]
        assert bodies_for(store, "n8") == bodies_for(store, "V8") == [bytes([8]) * 700]
        assert all(bodies_for(store, k) == [] for k in ("k8", "U9", "k11"))
    finally:
        store.shutdown()


def test_crash_reindexes_the_records_after_the_index_end(tmp_path: Path, clock: list[int]) -> None:
    s = tiny(tmp_path, slots=8, entries=8)
    store = open_store(s)
    for i in range(6):
        clock[0] += 1000
        put(store, "T", 0, bytes([i]) * 700, KEYS=f"k{i}")
    store.flush_service.run_once()  # index and checkpoint on disk up to message 5
    assert store.checkpoint.index_msg_timestamp == clock[0]
    saved = tmp_path / "index-then"
    shutil.copytree(s.index_dir, saved)
    for i in range(6, 20):
        clock[0] += 1000
        put(store, "T", 0, bytes([i]) * 700, KEYS=f"k{i}", UNIQ_KEY=f"U{i}")
    die(store)
    # The index files lost everything written after the flush (as after a power loss).
    shutil.rmtree(s.index_dir)
    shutil.copytree(saved, s.index_dir)
    store = open_store(s)
    try:
        for i in range(20):
            assert bodies_for(store, f"k{i}") == [bytes([i]) * 700], i
        assert bodies_for(store, "U19") == [bytes([19]) * 700]
        keys = [e for f in store.index.files for e in f.entries()]
        assert len(keys) == 6 + 14 * 2  # re-indexed once each: nothing twice
    finally:
        store.shutdown()


def test_clean_crash_does_not_index_twice(tmp_path: Path) -> None:
    s = tiny(tmp_path, slots=8, entries=16)
    store = open_store(s)
    for i in range(10):
        put(store, "T", 0, bytes([i]) * 500, KEYS=f"k{i}")
    die(store)
    store = open_store(s)
    try:
        assert sum(len(f.entries()) for f in store.index.files) == 10
        assert bodies_for(store, "k9") == [bytes([9]) * 500]
    finally:
        store.shutdown()


def test_duplicate_entries_are_returned_once(tmp_path: Path) -> None:
    store = open_store(tiny(tmp_path, slots=8, entries=16))
    try:
        put(store, "T", 0, b"x", KEYS="k k", UNIQ_KEY="k")
        assert bodies_for(store, "k") == [b"x"]
    finally:
        store.shutdown()


# -- retention ------------------------------------------------------------------------------------


def test_retention_deletes_index_files_below_the_commitlog_min(tmp_path: Path) -> None:
    s = tiny(tmp_path, slots=4, entries=4)
    store = open_store(s)
    try:
        sent = [put(store, "T", 0, bytes([i]) * 1000, KEYS=f"k{i}") for i in range(12)]  # 3 per segment
        assert len(store.index.files) == 4
        old = [f.path for f in store.index.files]
        store.clean_expired(force=True)  # forced: the oldest segments go
        clmin = store.get_min_phy_offset()
        assert clmin > 0
        kept = store.index.files
        assert all(f.end_phy_offset >= clmin for f in kept[:-1]) and kept[-1].path == old[-1]
        assert sorted(os.listdir(s.index_dir)) == sorted(os.path.basename(f.path) for f in kept)
        assert len(kept) < 4
        for i, r in enumerate(sent):
            expect = [bytes([i]) * 1000] if r.wrote_offset >= clmin else []
            assert bodies_for(store, f"k{i}") == expect, i
    finally:
        store.shutdown()


def test_retention_keeps_the_newest_file_even_when_all_is_old(tmp_path: Path) -> None:
    svc = IndexService(str(tmp_path / "index"), IndexSettings(max_hash_slot_num=2, max_index_num=3))
    for i in range(6):
        svc.build("T", {"KEYS": f"k{i}"}, 100 * i, 1000 * i)
    assert len(svc.files) == 3
    assert svc.delete_expired(10**9) == 2
    assert len(svc.files) == 1 and svc.query("T", "k5", 10, 0, FOREVER)[0] == [500]
    svc.close()


def test_settings_from_broker_conf() -> None:
    s = StoreSettings.from_conf(
        {
            "messageIndexEnable": "false",
            "maxHashSlotNum": "10",
            "maxIndexNum": "40",
            "maxMsgsNumBatch": "8",
            "defaultQueryMaxNum": "16",
        }
    )
    assert s.index == IndexSettings(False, 10, 40, 8, 16)
    assert StoreSettings.knows("maxIndexNum") and s.index_dir.endswith("index")
    with pytest.raises(ValueError, match="maxIndexNum"):
        IndexService("/nonexistent", IndexSettings(max_index_num=1))
