"""A plain single send put in one compiled call (``MessageStore._put_plain``, ``_native.put_record``)
against the general put (``_put_general``), the two paths ``put_message`` chooses between: the same
commitlog, consume-queue and index bytes for the same messages, whatever their bodies, properties,
flags and hosts, across segment and consume-queue file ends; and every put that is not plain is
declined with nothing written, so the general put does it. Without the compiled module the plain
path declines everything (CI builds it: fails there)."""

from __future__ import annotations

import os
import random
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.values import MessageInner, PutMessageStatus
from pyrocketmq.remoting.message import SysFlag, encode_properties, pack_host, tags_code

from .storekit import HOST, check_queue_consistent, make_settings, open_store

BORN = pack_host("10.1.2.3", 4567)
STORE = pack_host(*HOST)


pytestmark = pytest.mark.usefixtures("compiled_store")


def _props(props: dict[str, str]) -> bytes:
    """As a send stores them: the producer's pairs, each ended by the separator, then the cluster."""
    raw = encode_properties(props)
    return raw + (b"\x02" if raw else b"") + b"CLUSTER\x01C\x02"


def _inner(topic: str, queue_id: int, body: bytes, props: dict[str, str], *, flag: int = 0, sys_flag: int = 0,
           born: bytes = BORN, born_ts: int = 1_700_000_000_000, reconsume: int = 0) -> MessageInner:
    return MessageInner(topic=topic, body=body, flag=flag, properties=props, properties_bytes=_props(props),
                        queue_id=queue_id, sys_flag=sys_flag, born_timestamp=born_ts, born_host=born,
                        store_host=STORE, reconsume_times=reconsume, tags_code=tags_code(props.get("TAGS")))


def _plain(store: MessageStore, m: MessageInner):
    return store._put_plain(m, store._next_timestamp())


def _general(store: MessageStore, m: MessageInner):
    return store._put_general(m, store._next_timestamp())


def _files(root: Path) -> dict[str, bytes]:
    """Every commitlog, consume-queue and index file under a store root, by relative path (the index
    files' names are times: their order stands for them)."""
    out: dict[str, bytes] = {}
    for sub in ("commitlog", "consumequeue"):
        for d, _, names in os.walk(root / sub):
            for n in names:
                p = Path(d) / n
                out[str(p.relative_to(root))] = p.read_bytes()
    index = root / "index"
    if index.exists():
        for i, n in enumerate(sorted(os.listdir(index))):
            out[f"index#{i}"] = (index / n).read_bytes()
    return out


class _Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        self.now += 1
        return self.now


def _pair(tmp: Path, monkeypatch: pytest.MonkeyPatch, **kw: object) -> tuple[MessageStore, MessageStore]:
    from pyrocketmq.broker.store import message_store as ms_module

    monkeypatch.setattr(ms_module, "_now_ms", _Clock())  # both stores see 1, 2, 3... in turn: reset per put
    stores = []
    for name in ("general", "plain"):
        conf = make_settings(tmp / name, **kw)
        conf.index.max_hash_slot_num, conf.index.max_index_num = 16, 50  # small index files that fill up
        s = open_store(conf)
        s._running = True
        stores.append(s)
    return stores[0], stores[1]


msgs = st.lists(
    st.tuples(
        st.sampled_from(["T", "Topic-ü", "x" * 100]),
        st.integers(0, 2),
        st.binary(max_size=700),
        st.dictionaries(
            st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "a", "é"]),
            st.text(
                st.characters(blacklist_characters="\x00\x01\x02", blacklist_categories=("Cs",)),
                min_size=1,
                max_size=10,
            ),
            max_size=4,
        ),
        st.integers(-(2**31), 2**31 - 1),
        st.sampled_from([BORN, pack_host("::1", 10911)]),
        st.sampled_from([0, SysFlag.MULTI_TAGS, SysFlag.TRANSACTION_COMMIT]),
    ),
    min_size=1,
    max_size=40,
)


def _compare(tmp: Path, monkeypatch: pytest.MonkeyPatch, batch: list, **kw: object) -> int:
    """Put ``batch`` into two stores, generally into one and plainly where it can into the other;
    asserts the same results and files, returns how many puts were plain."""
    from pyrocketmq.broker.store import message_store as ms_module

    general, plain = _pair(tmp, monkeypatch, **kw)
    taken = 0
    try:
        for i, (topic, qid, body, props, flag, born, sys_flag) in enumerate(batch):
            m = _inner(
                topic,
                qid,
                body,
                props,
                flag=flag,
                sys_flag=sys_flag,
                born=born,
                born_ts=1_700_000_000_000 + i,
                reconsume=i % 3,
            )
            start = ms_module._now_ms.now
            a = _general(general, m)
            ms_module._now_ms.now = start
            b = _plain(plain, m)
            if b is None:  # a new queue, a full segment or consume-queue file: the general path
                ms_module._now_ms.now = start
                b = _general(plain, m)
            else:
                taken += 1
            assert a.status == b.status == PutMessageStatus.PUT_OK
            assert (a.wrote_offset, a.wrote_bytes, a.msg_id, a.queue_offset, a.store_timestamp) == (
                b.wrote_offset, b.wrote_bytes, b.msg_id, b.queue_offset, b.store_timestamp)
        assert plain.dispatch.last_timestamp == general.dispatch.last_timestamp
        assert plain.commit_log.last_store_timestamp == general.commit_log.last_store_timestamp
        for t, q in {(x[0], x[1]) for x in batch}:
            assert (
                plain.find_consume_queue(t, q).max_physic_offset
                == general.find_consume_queue(t, q).max_physic_offset
            )
            check_queue_consistent(plain, t, q)
        general.index.flush()
        plain.index.flush()
        assert _files(tmp / "plain") == _files(tmp / "general")
        return taken
    finally:
        general.shutdown()
        plain.shutdown()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=msgs)
def test_plain_puts_write_what_the_general_put_writes(tmp_path_factory, monkeypatch, batch):
    _compare(
        tmp_path_factory.mktemp("pair"), monkeypatch, batch
    )  # 4 KiB segments, 10 units a file: many ends


def test_a_long_run_of_puts_is_mostly_plain_and_the_same(tmp_path, monkeypatch):
    rnd = random.Random(7)
    batch = [
        (
            rnd.choice(["T", "U"]),
            rnd.randrange(3),
            rnd.randbytes(rnd.randrange(300)),
            {
                "UNIQ_KEY": f"K{i}",
                **({"TAGS": rnd.choice("ab")} if i % 2 else {}),
                **({"KEYS": "x y"} if i % 5 == 0 else {}),
            },
            rnd.randrange(1 << 31),
            rnd.choice([BORN, pack_host("::1", 10911)]),
            0,
        )
        for i in range(400)
    ]
    taken = _compare(tmp_path, monkeypatch, batch, mapped_file_size_commit_log=32 << 10,
                     mapped_file_size_consume_queue=50 * 20)
    assert taken > 0.9 * len(batch)


def test_most_puts_of_a_queue_take_the_plain_path(tmp_path, monkeypatch):
    _, store = _pair(tmp_path, monkeypatch, mapped_file_size_commit_log=1 << 20,
                     mapped_file_size_consume_queue=100 * 20)
    try:
        m = _inner("T", 0, b"body", {"UNIQ_KEY": "ABC", "TAGS": "t"})
        assert _plain(store, m) is None  # no consume queue yet
        first = store.put_message(m)
        results = [_plain(store, m) for _ in range(60)]
        assert all(r is not None for r in results)
        assert [r.queue_offset for r in results] == list(range(1, 61))
        assert results[0].wrote_offset == first.wrote_offset + first.wrote_bytes
        got = check_queue_consistent(store, "T", 0)
        assert len(got) == 61 and all(g.body == b"body" and g.tags == "t" for g in got)
        assert got[5].body_crc == zlib.crc32(b"body") & 0x7FFFFFFF
        assert len(store.query_message("T", "ABC", 64, 0, 1 << 62).buffers) == 61  # indexed by their UNIQ_KEY
        assert len(os.listdir(tmp_path / "plain" / "index")) == 2  # (50 entries a file: the second file came)
    finally:
        store.shutdown()


@pytest.mark.parametrize(
    "case",
    ["delay", "timer", "prepared", "rollback", "schedule topic", "too big", "topic too long", "host",
     "transaction offset", "no store host", "properties not encoded"],
)
def test_what_is_not_plain_is_declined_and_nothing_is_written(tmp_path, monkeypatch, case):
    _, store = _pair(tmp_path, monkeypatch, mapped_file_size_commit_log=1 << 20, timer_wheel_enable=True)
    try:
        topic = "SCHEDULE_TOPIC_XXXX" if case == "schedule topic" else "T"
        store.put_message(_inner(topic, 0, b"first", {}))
        props = {"DELAY": "3"} if case == "delay" else {"TIMER_DELAY_SEC": "5"} if case == "timer" else {}
        sys_flag = {"prepared": SysFlag.TRANSACTION_PREPARED, "rollback": SysFlag.TRANSACTION_ROLLBACK}.get(
            case, 0
        )
        body = b"x" * (store.settings.max_message_size + 1) if case == "too big" else b"b"
        m = _inner(topic, 0, body, props, sys_flag=sys_flag)
        if case == "topic too long":
            m.topic = "t" * 128
            store.put_message(_inner(m.topic, 0, b"first", {}))
        if case == "host":
            m.born_host = b"\x00" * 5
        if case == "transaction offset":
            m.prepared_transaction_offset = 7
        if case == "no store host":
            m.store_host = b""
        if case == "properties not encoded":
            m.properties_bytes = None
        before = _files(tmp_path / "plain")
        max_offset = store.commit_log.max_offset
        assert _plain(store, m) is None
        assert store.commit_log.max_offset == max_offset
        assert _files(tmp_path / "plain") == before
    finally:
        store.shutdown()


def test_put_message_takes_the_plain_path_and_every_dispatcher_sees_it(tmp_path, monkeypatch):
    _, store = _pair(tmp_path, monkeypatch, mapped_file_size_commit_log=1 << 20)
    seen: list[tuple[str, int, bool]] = []

    class Other:
        def dispatch(self, req):
            seen.append((req.topic, req.queue_offset, req.write_unit))

        def dispatch_batch(self, batch):
            raise AssertionError("no batch here")

    try:
        store.put_message(_inner("T", 0, b"first", {}))  # makes the queue: the general path
        store.dispatch.add(Other())
        wrote = store.commit_log.max_offset
        r = store.put_message(_inner("T", 0, b"second", {"UNIQ_KEY": "U2"}))
        assert r.ok and r.queue_offset == 1 and r.wrote_offset == wrote
        assert seen == [("T", 1, False)]  # the unit was written by the compiled put, then the chain ran
        assert len(check_queue_consistent(store, "T", 0)) == 2
        assert len(store.query_message("T", "U2", 4, 0, 1 << 62).buffers) == 1
        store._running = False
        assert (
            store.put_message(_inner("T", 0, b"third", {})).status == PutMessageStatus.SERVICE_NOT_AVAILABLE
        )
        assert store.commit_log.max_offset == wrote + r.wrote_bytes
    finally:
        store._running = True
        store.shutdown()


def test_a_full_segment_is_declined_and_the_general_put_rolls_it(tmp_path, monkeypatch):
    _, store = _pair(tmp_path, monkeypatch)  # 4 KiB segments
    try:
        m = _inner("T", 0, b"y" * 900, {"UNIQ_KEY": "K"})
        store.put_message(m)
        declined = 0
        for _ in range(20):
            r = _plain(store, m)
            if r is None:
                declined += 1
                r = _general(store, m)
            assert r.ok
        assert declined >= 3  # a 4 KiB segment takes four of these records
        assert len(check_queue_consistent(store, "T", 0)) == 21
    finally:
        store.shutdown()

