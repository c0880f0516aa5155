"""The compiled batch path (``_native.c``) against the pure-Python one it replaces: the same records
byte for byte, the same per-message facts, the same refusals — for batches generated at random
(bodies, flags, properties with any Unicode, v4 and v6 hosts). A machine without the compiled
module skips these (CI fails instead: CI builds it)."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import example, given, settings, strategies as st

from pyrocketmq.broker.store import consume_queue, index_service, native
from pyrocketmq.broker.store.consume_queue import cq_units
from pyrocketmq.broker.store.encode import host_flags
from pyrocketmq.broker.store.index_file import _py_extend
from pyrocketmq.broker.store.values import MessageInner
from pyrocketmq.remoting.batch import encode_batch
from pyrocketmq.remoting.message import (
    MAGIC,
    decode_messages,
    encode_properties,
    encode_record,
    pack_host,
    tags_code,
)

pytestmark = pytest.mark.usefixtures("compiled_store")


text = st.text(
    st.characters(blacklist_characters="\x00\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=12
)
props = st.dictionaries(
    st.one_of(st.just("TAGS"), st.just("KEYS"), st.just("UNIQ_KEY"), text), text, max_size=5
)
items = st.lists(
    st.tuples(st.binary(max_size=300), st.integers(-(2**31), 2**31 - 1), props), min_size=1, max_size=8
)
hosts = st.sampled_from([pack_host("10.1.2.3", 4567), pack_host("::1", 10911)])


def both(data, batch_props=b"CLUSTER\x01C\x02", topic="T", born=None, store=None, max_body=4096):
    born, store = born or pack_host("10.1.2.3", 4567), store or pack_host("10.9.9.9", 10911)
    batch = MessageInner(
        topic,
        data,
        properties_bytes=batch_props,
        queue_id=3,
        born_timestamp=1_700_000_000_123,
        born_host=born,
        store_host=store,
        reconsume_times=2,
    )
    args = (batch, host_flags(0x2, born, store), 1_700_000_000_456, max_body)
    outcome = []
    for fn in (native.py_encode_batch, lambda *a: native.NATIVE.encode_batch(*a, MAGIC)):
        try:
            outcome.append(fn(*args))
        except (ValueError, OverflowError) as e:
            outcome.append((ValueError if isinstance(e, ValueError) else type(e), str(e)))
    return outcome


@settings(max_examples=300, deadline=None)
@given(
    items=items, born=hosts, store=hosts, batch_props=st.sampled_from([b"", b"CLUSTER\x01DefaultCluster\x02"])
)
def test_the_compiled_records_are_the_python_ones(items, born, store, batch_props):
    data = encode_batch(items)
    py, c = both(data, batch_props, born=born, store=store)
    assert c == py
    block, metas = c
    sizes = [m[0] for m in metas]
    other = bytearray(block)
    native.py_patch_offsets(block, 40, 1 << 33, sizes)
    native.NATIVE.patch_offsets(other, 40, 1 << 33)
    assert other == block
    decoded = decode_messages(bytes(block))
    assert [m.body for m in decoded] == [b for b, _, _ in items]
    assert [m.queue_offset for m in decoded] == list(range(40, 40 + len(items)))
    assert native.NATIVE.offset_msg_ids(store, 1 << 33, sizes) == native.py_offset_msg_ids(
        store, 1 << 33, sizes
    )
    for (_, tags, decoded_props), (_, _, given_props) in zip(metas, items, strict=True):
        assert decoded_props == given_props and tags == tags_code(given_props.get("TAGS"))


def _records(msg, topic, properties, sys_flag, store_host, store_ts):
    """The record of one message from the Python encoder and from the compiled one (or their ValueErrors)."""
    out = []
    for fn in (lambda: encode_record(msg, topic, properties, sys_flag, msg.born_host, store_host, store_ts),
               lambda: native.encode_one(msg, topic, properties, sys_flag, store_host, store_ts)):
        try:
            out.append(fn())
        except ValueError as e:
            out.append((ValueError, str(e)))
    return out


@settings(max_examples=300, deadline=None)
@given(
    topic=st.binary(min_size=1, max_size=127),
    body=st.binary(max_size=600),
    flag=st.integers(-(2**31), 2**31 - 1),
    props=props,
    queue_id=st.integers(0, 2**31 - 1),
    sys_flag=st.integers(0, 2**20),
    born=hosts,
    store=hosts,
    born_ts=st.integers(0, 2**62),
    store_ts=st.integers(0, 2**62),
    reconsume=st.integers(0, 2**31 - 1),
    prepared=st.integers(0, 2**62),
)
def test_a_single_record_is_the_python_one(
    topic, body, flag, props, queue_id, sys_flag, born, store, born_ts, store_ts, reconsume, prepared
):
    msg = MessageInner("T", body, flag, queue_id=queue_id, born_timestamp=born_ts, born_host=born,
                       reconsume_times=reconsume, prepared_transaction_offset=prepared)
    py, c = _records(msg, topic, encode_properties(props), host_flags(sys_flag, born, store), store, store_ts)
    assert type(c) is bytearray and c == py
    (decoded,) = decode_messages(bytes(c))
    assert decoded.body == body and decoded.properties == props


def test_a_single_record_is_refused_alike():
    msg = MessageInner(
        "T", memoryview(b"body"), queue_id=1, born_timestamp=1, born_host=pack_host("10.1.2.3", 1)
    )
    ok = dict(
        msg=msg, topic=b"T", properties=b"a\x01b", sys_flag=0, store_host=pack_host("10.1.2.4", 2), store_ts=2
    )
    assert _records(**ok)[0] == _records(**ok)[1]
    for bad in (
        {"topic": b"t" * 128},
        {"properties": b"k\x01" + b"v" * 32766},
        {"sys_flag": 0x10},
        {"sys_flag": 0x20},
    ):
        py, c = _records(**{**ok, **bad})
        assert isinstance(py, tuple) and c == py, (bad, py, c)


def test_the_same_refusals():
    good = encode_batch([(b"x" * 10, 0, {"a": "b"})])
    cases = [good[:-3], good + b"\x00" * 5, struct.pack(">i", 999) + good[4:], b""]
    for data in cases:
        py, c = both(data)
        assert isinstance(py[0], type) and c == py, (data, py, c)
    assert both(good, max_body=5)[0] == both(good, max_body=5)[1] == (
        ValueError, "a message body of 10 bytes is over maxMessageSize 5")
    big = encode_batch([(b"x", 0, {"k": "v" * 32760})])
    py, c = both(big)
    assert py == c and py[0] is OverflowError
    assert both(good, topic="t" * 128)[1][0] is ValueError


@given(st.text(max_size=80), st.integers(0, 2**32 - 1))
def test_java_hash_matches(s, start):
    py_extend = _py_extend
    assert native.NATIVE.java_hash(s, start) == py_extend(start, s)
    if s:
        h = native.NATIVE.java_hash(s)
        assert (h - (1 << 32) if h >= 1 << 31 else h) == tags_code(s)


def test_properties_decode_like_python():
    raw = encode_properties({"a": "b"}) + b"\x02noeq\x02\x01v\x02k\x01\x02x\x01y\x01z\x02\xff\xfe\x01\xc3\xa9"
    data = encode_batch([(b"b", 0, {})])
    # splice the odd properties into the one item (size and props length fixed up)
    body_end = 20 + 1
    item = bytearray(data[:body_end]) + struct.pack(">h", len(raw)) + raw
    struct.pack_into(">i", item, 0, len(item))
    py, c = both(bytes(item))
    assert c == py and py[1][0][2] == {"a": "b", "x": "y\x01z", "\ufffd\ufffd": "é"}


metas_st = st.lists(
    st.tuples(st.integers(36, 5000), st.integers(-(2**63), 2**63 - 1), props), min_size=1, max_size=40
)


@settings(max_examples=60, deadline=None)
@given(metas_st, st.integers(0, 2**40))
def test_the_compiled_consume_queue_units_are_the_python_ones(metas, phys):
    compiled = cq_units(phys, metas)
    keep, consume_queue.NATIVE = consume_queue.NATIVE, None
    try:
        assert compiled == cq_units(phys, metas)
    finally:
        consume_queue.NATIVE = keep


@contextlib.contextmanager
def pure_python(module):
    """``module`` without its compiled helpers for a while (its pure-Python path)."""
    keep, module.NATIVE = module.NATIVE, None
    try:
        yield
    finally:
        module.NATIVE = keep


def _index_files(directory) -> list[bytes]:
    return [p.read_bytes() for p in sorted(directory.iterdir())] if directory.is_dir() else []


@settings(max_examples=60, deadline=None)
@given(st.lists(metas_st, min_size=1, max_size=4), st.integers(1, 9), st.integers(2, 23))
@example(
    batches=[[(36, 0, {"KEYS": " "})]], slot_num=1, index_num=2
)  # KEYS of separators only: nothing indexed
def test_a_batch_indexes_like_its_records_one_by_one(batches, slot_num, index_num):
    """Same index files byte for byte (entries, slot chains, headers, rolls to new files) whether a
    batch is indexed by the compiled build_batch or record by record; few slots force shared chains."""
    import tempfile
    from pathlib import Path

    from pyrocketmq.broker.store.index_service import IndexService
    from pyrocketmq.broker.store.settings import IndexSettings

    settings_ = IndexSettings(max_hash_slot_num=slot_num, max_index_num=index_num)
    with tempfile.TemporaryDirectory() as tmp:
        names = ("batch", "single", "python")
        batch, single, python = (IndexService(f"{tmp}/{n}", settings_) for n in names)
        phys, ts = 1000, 1_700_000_000_000
        for metas in batches:
            batch.build_batch("Topic", metas, phys, ts)
            at = phys
            for size, _, p in metas:
                single.build("Topic", p, at, ts)  # compiled, one record at a time
                with pure_python(index_service):
                    python.build("Topic", p, at, ts)
                at += size
            phys = at
            ts += 1500
            assert batch.last_phy == single.last_phy == python.last_phy
        for svc in (batch, single, python):
            svc.flush()
        files = [_index_files(Path(f"{tmp}/{n}")) for n in names]
        assert files[0] == files[1] == files[2]
        for svc in (batch, single, python):
            svc.close()


pairs = st.lists(
    st.tuples(
        st.one_of(st.sampled_from(["WAIT", "DELAY", "TAGS", "KEYS", "UNIQ_KEY", "XWAIT", ""]), text),
        st.one_of(st.sampled_from(["true", "false", "3", ""]), text, st.just("a\x01b")),
    ),
    max_size=6,
)


@settings(max_examples=500, deadline=None)
@given(pairs, st.booleans(), st.booleans(), st.sampled_from([b"", b"CLUSTER\x01DefaultCluster"]))
def test_a_sends_properties_are_the_python_ones(items, trailing, drop_delay, cluster):
    text = "\x02".join(f"{k}\x01{v}" for k, v in items) + ("\x02" if trailing and items else "")
    for t in (text, None, "", "\x02", "\x01", "WAIT\x01false", "a\x02\x02b\x01c"):
        assert native.NATIVE.send_properties(t, cluster, drop_delay) == native.py_send_properties(
            t, cluster, drop_delay
        )


def test_a_sends_properties():
    raw, stored, props, wait = native.send_properties(
        "TAGS\x01a\x02WAIT\x01false\x02DELAY\x013", b"CLUSTER\x01C", True
    )
    assert (raw, stored, props, wait) == (
        b"TAGS\x01a\x02",
        b"TAGS\x01a\x02CLUSTER\x01C",
        {"TAGS": "a"},
        False,
    )
    assert native.send_properties("KEYS\x01k \u00e9\x02WAIT\x01true", b"", False) == (
        "KEYS\x01k \u00e9\x02".encode(), "KEYS\x01k \u00e9\x02".encode(), {"KEYS": "k \u00e9"}, True)
    with pytest.raises(UnicodeEncodeError):
        native.send_properties("TAGS\x01\ud800", b"", False)
    with pytest.raises(UnicodeEncodeError):
        native.py_send_properties("TAGS\x01\ud800", b"", False)
