"""Transactional messages across implementations, both ways:

- the unmodified Java ``TransactionMQProducer`` (with a ``TransactionListener``) against our broker;
- our Python :class:`~pyrocketmq.client.SyncTransactionProducer` against Apache RocketMQ's broker.

Same three transactions each time: one committed by the local transaction, one rolled back, one left
UNKNOWN and committed when the broker checks back (the session's brokers check every 2 s for half
messages older than RocketMQ's default 6 s, see conftest.py; the waits are generous deadlines, not
timings).
Afterwards a pull consumer reads the topic: the committed two arrive once each, the rolled-back never.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from pyrocketmq.client import Message, SyncPullConsumer, SyncTransactionProducer, TransactionState
from pyrocketmq.client.settings import PullConsumerSettings

pytestmark = pytest.mark.conformance

CHECK_WAIT_S = 150.0


def _read_topic(namesrv: str, topic: str, want: int, timeout: float = 60.0) -> list:
    got = []
    settings = PullConsumerSettings(auto_commit=False, long_poll_ms=1000)
    with SyncPullConsumer(f"tx-reader-{uuid.uuid4().hex[:8]}", namesrv, settings) as consumer:
        consumer.assign(consumer.fetch_queues(topic))
        consumer.seek_to_begin()
        deadline = time.monotonic() + timeout
        while len(got) < want and time.monotonic() < deadline:
            got.extend(consumer.poll(timeout=1))
        got.extend(consumer.poll(timeout=1))  # anything beyond what we want would show here
    return got


def test_java_transaction_producer_against_pyrocketmq(pyrocketmq_cluster, java):
    topic = f"TxJava{uuid.uuid4().hex[:8]}"
    out = java.run(
        "TransactionScenario",
        [pyrocketmq_cluster.namesrv_addr, topic, f"pg_{topic}", int(CHECK_WAIT_S * 1000)],
        timeout=CHECK_WAIT_S + 60,
    ).json()
    by_kind = {s["kind"]: s for s in out["sent"]}
    assert {k: s["status"] for k, s in by_kind.items()} == {
        "commit": "SEND_OK",
        "rollback": "SEND_OK",
        "check": "SEND_OK",
    }
    assert {k: s["localState"] for k, s in by_kind.items()} == {
        "commit": "COMMIT_MESSAGE", "rollback": "ROLLBACK_MESSAGE", "check": "UNKNOW",
    }
    assert out["checkArrived"] is True
    assert f"check@{topic}" in out["checked"]
    msgs = _read_topic(pyrocketmq_cluster.namesrv_addr, topic, want=2)
    assert sorted(m.body for m in msgs) == [b"tx-check", b"tx-commit"]
    assert {m.msg_id for m in msgs} == {by_kind["commit"]["msgId"], by_kind["check"]["msgId"]}


def test_python_transaction_producer_against_apache(apache_cluster):
    topic = f"TxPy{uuid.uuid4().hex[:8]}"
    checked: list[str] = []
    arrived = threading.Event()

    def check(msg) -> TransactionState:
        kind = msg.properties.get("kind", "")
        checked.append(f"{kind}@{msg.topic}")
        if kind == "check":
            arrived.set()
            return TransactionState.COMMIT
        return TransactionState.ROLLBACK

    states = {
        "commit": TransactionState.COMMIT,
        "rollback": TransactionState.ROLLBACK,
        "check": TransactionState.UNKNOWN,
    }
    results = {}
    with SyncTransactionProducer(
        f"pg_{topic}", apache_cluster.namesrv_addr, check_local_transaction=check
    ) as producer:
        for kind, state in states.items():
            msg = Message(topic, f"tx-{kind}".encode(), tags="TagTx", properties={"kind": kind})
            results[kind] = producer.send_in_transaction(msg, lambda m, a, s=state: s)
        assert arrived.wait(CHECK_WAIT_S), f"no check-back within {CHECK_WAIT_S}s (checked: {checked})"
        time.sleep(1)  # the answer is a oneway END_TRANSACTION sent from the check task: let it go out
    assert {k: r.local_state for k, r in results.items()} == states
    assert f"check@{topic}" in checked
    msgs = _read_topic(apache_cluster.namesrv_addr, topic, want=2)
    assert sorted(m.body for m in msgs) == [b"tx-check", b"tx-commit"]
    assert {m.msg_id for m in msgs} == {results["commit"].msg_id, results["check"].msg_id}
