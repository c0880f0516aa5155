"""Transactional messages, broker side: the pure decisions and message rewrites, and one check turn
over a real store on ``tmp_path`` (no sockets)."""

from __future__ import annotations

import pytest

from pyrocketmq.broker import transaction
from pyrocketmq.broker.consumer_offset import ConsumerOffsetManager
from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.settings import StoreSettings
from pyrocketmq.broker.store.values import MessageInner
from pyrocketmq.broker.transaction_service import TransactionCheckService, TransactionSettings
from pyrocketmq.remoting.message import MessageExt, SysFlag, decode_properties, encode_properties, pack_host

BASE = dict(resolved=False, times=0, born_ms=0, now_ms=10_000, timeout_ms=6_000, check_max=15)


@pytest.mark.parametrize(
    ("changes", "verdict"),
    [
        ({}, transaction.Verdict.CHECK),
        ({"resolved": True}, transaction.Verdict.RESOLVED),
        ({"resolved": True, "times": 99}, transaction.Verdict.RESOLVED),
        ({"times": 14}, transaction.Verdict.CHECK),
        ({"times": 15}, transaction.Verdict.DISCARD),
        ({"now_ms": 5_999}, transaction.Verdict.WAIT),
        ({"now_ms": 6_000}, transaction.Verdict.CHECK),
        (
            {"born_ms": 20_000},
            transaction.Verdict.CHECK,
        ),  # born in our future: a skewed clock, do not wait forever
        ({"immunity_ms": 60_000}, transaction.Verdict.WAIT),
        ({"immunity_ms": 1_000, "now_ms": 2_000}, transaction.Verdict.CHECK),
        ({"reserved_ms": 5_000}, transaction.Verdict.DISCARD),
        ({"times": 15, "now_ms": 1}, transaction.Verdict.DISCARD),
    ],
)
def test_decide(changes, verdict):
    assert transaction.decide(**{**BASE, **changes}) is verdict


@pytest.mark.parametrize(
    ("ops", "half", "expected"),
    [
        ([], 3, 5),
        ([(5, 1), (6, 2)], 3, 7),
        ([(5, 1), (6, 9), (7, 2)], 3, 6),
        ([(5, None), (6, 0)], 3, 7),  # unreadable op records are stepped over
        ([(5, 3)], 3, 5),
        ([(6, 1)], 3, 5),  # a gap: do not jump it
    ],
)
def test_advance_op_offset(ops, half, expected):
    assert transaction.advance_op_offset(5, ops, half) == expected


def _inner(**kw) -> MessageInner:
    props = {"UNIQ_KEY": "U1", "TRAN_MSG": "true", "PGROUP": "pg", "TAGS": "t", "DELAY": "3"}
    raw = encode_properties(props) + b"\x02CLUSTER\x01c"
    return MessageInner(topic="Real", body=b"b", properties=props, properties_bytes=raw, queue_id=2,
                        sys_flag=SysFlag.TRANSACTION_PREPARED | SysFlag.MULTI_TAGS, **kw)


def test_half_inner_moves_the_message_aside():
    h = transaction.half_inner(_inner())
    assert (h.topic, h.queue_id) == (transaction.HALF_TOPIC, 0)
    assert h.sys_flag == SysFlag.MULTI_TAGS
    props = decode_properties(h.properties_bytes)
    assert props["REAL_TOPIC"] == "Real" and props["REAL_QID"] == "2"
    assert props["PGROUP"] == "pg" and props["TRAN_MSG"] == "true" and props["CLUSTER"] == "c"
    assert "DELAY" not in props


def _half_ext(**kw) -> MessageExt:
    props = {
        "UNIQ_KEY": "U1",
        "TRAN_MSG": "true",
        "PGROUP": "pg",
        "REAL_TOPIC": "Real",
        "REAL_QID": "2",
        "TAGS": "t",
    }
    base = dict(
        topic=transaction.HALF_TOPIC,
        body=b"b",
        properties=props,
        queue_id=0,
        queue_offset=7,
        commitlog_offset=1234,
        born_host=("10.0.0.1", 5),
        store_host=("10.0.0.2", 10911),
        born_timestamp=1,
    )
    base.update(kw)
    return MessageExt(**base)


def test_end_problem_checks_group_and_offsets():
    m = _half_ext()
    ok = dict(producer_group="pg", tran_state_table_offset=7, commit_log_offset=1234)
    assert transaction.end_problem(m, **ok) is None
    assert "group" in transaction.end_problem(m, **{**ok, "producer_group": "other"})
    assert "table offset" in transaction.end_problem(m, **{**ok, "tran_state_table_offset": 8})
    assert "commitlog offset" in transaction.end_problem(m, **{**ok, "commit_log_offset": 1})
    assert "not a half" in transaction.end_problem(_half_ext(topic="Real"), **ok)


def test_committed_inner_restores_the_real_destination():
    c = transaction.committed_inner(_half_ext())
    assert c is not None
    assert (c.topic, c.queue_id) == ("Real", 2)
    assert c.sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_COMMIT
    assert c.prepared_transaction_offset == 1234
    assert set(c.properties) == {"UNIQ_KEY", "PGROUP", "TAGS"}
    assert c.born_host == pack_host("10.0.0.1", 5)
    assert transaction.committed_inner(_half_ext(properties={"PGROUP": "pg"})) is None


def test_op_record_and_check_body():
    op = transaction.op_inner(42, store_host=pack_host("127.0.0.1", 1), born_timestamp=5)
    assert (op.topic, op.queue_id, bytes(op.body), op.properties["TAGS"]) == (
        transaction.OP_TOPIC,
        0,
        b"42",
        "d",
    )
    assert transaction.parse_op_body(b"42") == 42 and transaction.parse_op_body(b"x") is None
    body = transaction.check_body_message(_half_ext())
    assert (body.topic, body.queue_id, body.queue_offset) == ("Real", 2, 7)
    assert transaction.rechecked_inner(_half_ext(), 3).properties["TRANSACTION_CHECK_TIMES"] == "3"


def test_settings_from_broker_conf():
    assert TransactionSettings.from_conf({}) == TransactionSettings(60_000, 6_000, 15)
    s = TransactionSettings.from_conf(
        {"transactionCheckInterval": "100", "transactionTimeOut": "50", "transactionCheckMax": "2"}
    )
    assert (s.check_interval_ms, s.timeout_ms, s.check_max) == (100, 50, 2)
    with pytest.raises(ValueError, match="transactionCheckMax"):
        TransactionSettings.from_conf({"transactionCheckMax": "many"})


# -- one check turn over a real store ------------------------------------------------------------


@pytest.fixture
def store(tmp_path):
    s = MessageStore(
        StoreSettings(store_path_root_dir=str(tmp_path), mapped_file_size_commit_log=1024 * 1024),
        ("127.0.0.1", 10911),
    )
    s.load()
    s.start()
    yield s
    s.shutdown()


def _put_half(store, born_ms: int) -> int:
    r = store.put_message(transaction.half_inner(_inner(born_timestamp=born_ms)))
    return r.queue_offset


def test_check_turns(store, tmp_path):
    offsets = ConsumerOffsetManager(str(tmp_path / "consumerOffset.json"))
    now = [100_000]
    asked: list[MessageExt] = []
    svc = TransactionCheckService(store, offsets, lambda g, m: asked.append(m) or True,
                                  timeout_ms=6_000, check_max=2, clock=lambda: now[0])
    q_resolved = _put_half(store, born_ms=1)
    q_old = _put_half(store, born_ms=2)
    q_young = _put_half(store, born_ms=99_000)
    store.put_message(
        transaction.op_inner(q_resolved, store_host=pack_host("127.0.0.1", 10911), born_timestamp=1)
    )
    assert svc.check_once() == 1
    assert [m.body for m in asked] == [b"b"] and asked[0].properties["TRANSACTION_CHECK_TIMES"] == "1"
    assert asked[0].queue_offset == 3  # the re-stored copy, at the half queue's end
    assert (
        offsets.query(transaction.SYS_GROUP, transaction.HALF_TOPIC, 0) == q_young
    )  # stopped at the young one
    assert offsets.query(transaction.SYS_GROUP, transaction.OP_TOPIC, 0) == 1
    assert q_old == 1
    # time passes: the young one and the re-stored copy are both checked
    now[0] = 200_000
    asked.clear()
    assert svc.check_once() == 2
    assert sorted(m.properties["TRANSACTION_CHECK_TIMES"] for m in asked) == ["1", "2"]
    # the producer answers one of them (op record), the other reaches check_max and is discarded
    answered = next(m for m in asked if m.properties["TRANSACTION_CHECK_TIMES"] == "1")
    store.put_message(
        transaction.op_inner(
            answered.queue_offset, store_host=pack_host("127.0.0.1", 10911), born_timestamp=1
        )
    )
    asked.clear()
    assert svc.check_once() == 0
    moved = store.find_consume_queue(transaction.CHECK_MAX_TOPIC, 0)
    assert moved is not None and moved.max_offset == 1
    assert svc.check_once() == 0 and moved.max_offset == 1


def test_a_backlog_of_old_half_messages_is_asked_about_turn_by_turn(store, tmp_path):
    """After an outage, many unresolved half messages: each producer group gets at most its share of
    check-backs per turn, and the next turn goes on from there (no storm, nothing skipped)."""
    offsets = ConsumerOffsetManager(str(tmp_path / "consumerOffset.json"))
    asked: list[MessageExt] = []
    svc = TransactionCheckService(store, offsets, lambda g, m: asked.append(m) or True,
                                  timeout_ms=6_000, check_max=5, clock=lambda: 10_000_000)
    svc.max_checks_per_group = 4
    for _ in range(10):
        _put_half(store, born_ms=1)
    turns = [svc.check_once() for _ in range(3)]
    assert turns == [
        4,
        4,
        4,
    ]  # the third turn: the last two first asks, then two second asks of the first ones
    times = [m.properties["TRANSACTION_CHECK_TIMES"] for m in asked]
    assert times == ["1"] * 10 + ["2"] * 2


class _Conn:
    def __init__(self, name: str, *, open_: bool = True, fails: bool = False) -> None:
        self.remote_addr, self.is_open, self.fails, self.got = name, open_, fails, []

    def invoke_oneway(self, cmd) -> None:
        from pyrocketmq.remoting.transport import RemotingError

        if self.fails:
            raise RemotingError(f"{self.remote_addr} has no open stream")
        self.got.append(cmd)


def test_a_check_passes_over_producers_that_left_for_one_that_is_there() -> None:
    from pyrocketmq.broker.client_manager import ProducerManager
    from pyrocketmq.broker.processors.transaction import TransactionProcessor

    producers = ProducerManager()
    gone, silent, there = _Conn("gone", open_=False), _Conn("silent", fails=True), _Conn("there")
    for i, conn in enumerate((gone, silent, there)):
        producers.register(f"c{i}", conn, 0, 0, "pg")
    tx = TransactionProcessor(settings=None, topics=None, producers=producers, store=None, stats=None,  # type: ignore[arg-type]
                              store_host=b"")  # fmt: skip
    for _ in range(4):  # whichever producer's turn it is
        assert tx.send_check("pg", _half_ext())
    assert len(there.got) == 4 and not gone.got and not silent.got
    assert there.got[0].ext_fields["msgId"] == "U1"
    producers.unregister(there, "pg")
    assert not tx.send_check("pg", _half_ext())  # nobody left who can answer: the next turn asks again
