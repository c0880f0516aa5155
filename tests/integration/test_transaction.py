"""Transactional messages end to end: our TransactionProducer against a real broker process.

The broker runs with a short check interval and transaction timeout and few checks; the tests wait
for conditions under a deadline and assert on what is stored where, never on how fast.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from pyrocketmq.client import (
    ClientSettings,
    Message,
    TopicNotFoundError,
    TransactionProducer,
    TransactionState,
)
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import MessageExt, SysFlag, decode_messages, decode_offset_msg_id
from pyrocketmq.remoting.remoting_client import RemotingClient

from .procs import start_broker
from .wire import pull

WAIT_S = 40.0
TX_CONF = {"transactionCheckInterval": 500, "transactionTimeOut": 2500, "transactionCheckMax": 3}


@pytest.fixture
def broker(tmp_path, namesrv):
    proc = start_broker(tmp_path, namesrv.addr, **TX_CONF)
    yield proc
    proc.stop()


def _client(namesrv_addr: str) -> ClientSettings:
    return ClientSettings(namesrv_addr=namesrv_addr, heartbeat_interval=0.5)


async def _read_topic(addr: str, topic: str, queues: int = 8) -> list[MessageExt]:
    client = RemotingClient()
    try:
        out: list[MessageExt] = []
        for qid in range(queues):
            resp = await client.invoke(addr, pull(topic, qid, 0, group="tx-reader", max_nums=32), 5)
            if resp.code == ResponseCode.SUCCESS:
                out.extend(decode_messages(resp.body))
        return out
    finally:
        await client.close()


async def _wait_for(addr: str, topic: str, pred) -> list[MessageExt]:
    deadline = time.monotonic() + WAIT_S
    while True:
        msgs = await _read_topic(addr, topic)
        if pred(msgs) or time.monotonic() > deadline:
            return msgs
        await asyncio.sleep(0.2)


async def _learn_route(producer: TransactionProducer, topic: str) -> None:
    """Wait until the name server has ``topic``'s route again (a restarted broker registers anew)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            await producer.fetch_publish_queues(topic)
            return
        except TopicNotFoundError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


def _bodies(msgs: list[MessageExt]) -> list[bytes]:
    return sorted(m.body for m in msgs)


def test_commit_is_consumable_once_and_rollback_never(namesrv, broker):
    asyncio.run(_commit_is_consumable_once_and_rollback_never(namesrv, broker))


async def _commit_is_consumable_once_and_rollback_never(namesrv, broker):
    topic = "TxCommit"
    p = TransactionProducer("tx-pg-1", namesrv.addr, client=_client(namesrv.addr))
    await p.start()
    try:
        r1 = await p.send_in_transaction(Message(topic, b"committed"), lambda m, a: TransactionState.COMMIT)

        async def rollback(m, a):
            return TransactionState.ROLLBACK

        r2 = await p.send_in_transaction(Message(topic, b"rolled-back"), rollback)
        assert (r1.local_state, r2.local_state) == (TransactionState.COMMIT, TransactionState.ROLLBACK)
        msgs = await _wait_for(broker.addr, topic, lambda ms: len(ms) >= 1)
        assert _bodies(msgs) == [b"committed"]
        m = msgs[0]
        assert m.sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_COMMIT
        assert m.prepared_transaction_offset == decode_offset_msg_id(r1.offset_msg_id)[2]
        assert "TRAN_MSG" not in m.properties and "REAL_TOPIC" not in m.properties
        assert m.properties["PGROUP"] == "tx-pg-1"
        assert m.msg_id == r1.msg_id
        # both half messages resolved: the op queue names both, no check ever comes
        ops = await _wait_for(broker.addr, "RMQ_SYS_TRANS_OP_HALF_TOPIC", lambda ms: len(ms) >= 2)
        assert sorted(int(o.body) for o in ops) == sorted([r1.queue_offset, r2.queue_offset])
        assert all(o.tags == "d" for o in ops)
    finally:
        await p.shutdown()
    assert _bodies(await _read_topic(broker.addr, topic)) == [b"committed"]


def test_unknown_is_decided_by_the_check(namesrv, broker):
    asyncio.run(_unknown_is_decided_by_the_check(namesrv, broker))


async def _unknown_is_decided_by_the_check(namesrv, broker):
    topic = "TxCheck"
    checked: list[str] = []

    def check(msg: MessageExt) -> TransactionState:
        checked.append(msg.body.decode())
        assert msg.topic == topic
        return TransactionState.COMMIT if msg.body == b"check-commit" else TransactionState.ROLLBACK

    p = TransactionProducer(
        "tx-pg-2", namesrv.addr, client=_client(namesrv.addr), check_local_transaction=check
    )
    await p.start()
    try:
        unknown = lambda m, a: TransactionState.UNKNOWN  # noqa: E731
        await p.send_in_transaction(Message(topic, b"check-commit"), unknown)
        await p.send_in_transaction(Message(topic, b"check-rollback"), unknown)

        def raising(m, a):
            raise RuntimeError("the local transaction broke")

        r = await p.send_in_transaction(Message(topic, b"check-after-error"), raising)
        assert r.local_state is TransactionState.UNKNOWN
        msgs = await _wait_for(broker.addr, topic, lambda ms: len(ms) >= 1)
        deadline = time.monotonic() + WAIT_S
        while not {"check-rollback", "check-after-error"} <= set(checked) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert {"check-commit", "check-rollback", "check-after-error"} <= set(checked)
        # every check answered: no half message is left to check again
        ops = await _wait_for(broker.addr, "RMQ_SYS_TRANS_OP_HALF_TOPIC", lambda ms: len(ms) >= 3)
        assert len(ops) == 3
    finally:
        await p.shutdown()
    assert _bodies(await _read_topic(broker.addr, topic)) == [b"check-commit"] == _bodies(msgs)


def test_never_answered_goes_to_check_max_topic(namesrv, broker):
    asyncio.run(_never_answered_goes_to_check_max_topic(namesrv, broker))


async def _never_answered_goes_to_check_max_topic(namesrv, broker):
    topic = "TxSilent"
    calls = threading.Semaphore(0)
    n = 0

    def check(msg: MessageExt) -> TransactionState:
        nonlocal n
        n += 1
        calls.release()
        return TransactionState.UNKNOWN

    p = TransactionProducer(
        "tx-pg-3", namesrv.addr, client=_client(namesrv.addr), check_local_transaction=check
    )
    await p.start()
    try:
        r = await p.send_in_transaction(Message(topic, b"forever-unknown"), lambda m, a: None)
        assert r.local_state is TransactionState.UNKNOWN
        moved = await _wait_for(broker.addr, "TRANS_CHECK_MAX_TIME_TOPIC", lambda ms: len(ms) >= 1)
        assert [m.body for m in moved] == [b"forever-unknown"]
        assert moved[0].properties["TRANSACTION_CHECK_TIMES"] == str(TX_CONF["transactionCheckMax"])
        assert n == TX_CONF["transactionCheckMax"]
    finally:
        await p.shutdown()
    assert await _read_topic(broker.addr, topic) == []


def test_restart_keeps_half_messages_and_op_records(tmp_path, namesrv, broker):
    asyncio.run(_restart_keeps_half_messages_and_op_records(tmp_path, namesrv, broker))


async def _restart_keeps_half_messages_and_op_records(tmp_path, namesrv, broker):
    topic = "TxRestart"
    p = TransactionProducer("tx-pg-4", namesrv.addr, client=_client(namesrv.addr))
    await p.start()
    try:
        await p.send_in_transaction(Message(topic, b"before"), lambda m, a: TransactionState.COMMIT)
        await p.send_in_transaction(Message(topic, b"pending"), lambda m, a: TransactionState.UNKNOWN)
    finally:
        await p.shutdown()
    await _wait_for(broker.addr, topic, lambda ms: len(ms) >= 1)
    broker.stop()
    # the pending half message is due at once: leave the new producer room to join first
    restarted = start_broker(
        tmp_path, namesrv.addr, port=broker.port, **{**TX_CONF, "transactionCheckMax": 15}
    )
    try:
        p2 = TransactionProducer("tx-pg-4", namesrv.addr, client=_client(namesrv.addr),
                                 check_local_transaction=lambda m: TransactionState.COMMIT)
        await p2.start()
        try:
            await _learn_route(p2, topic)  # heartbeats go to known brokers only
            msgs = await _wait_for(restarted.addr, topic, lambda ms: len(ms) >= 2)
        finally:
            await p2.shutdown()
        assert _bodies(msgs) == [b"before", b"pending"]
    finally:
        restarted.stop()
