"""The official RocketMQ 5.x Python client (rocketmq-python-client 5.1.2 from PyPI, in a virtualenv of
its own) against the broker's 5.x endpoint: sends of every message type, SimpleConsumer receive/ack,
redelivery and change of invisible duration, PushConsumer retries, and the scenario every language's
client runs (``polyglot5``: plain sends spread over all queues, each FIFO group in the queue Apache's
proxy picks). Sends are judged on what the broker stored (4.x pulls); receives on what the client was
handed."""

from __future__ import annotations

import time

import pytest

from tests.conformance import maven, polyglot5, pyclient5
from tests.conformance.conftest import missing_prerequisite
from tests.conformance.grpc5 import cluster_fixture, make_topic, read_topic

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def py5(tmp_path_factory):
    try:
        pyclient5.python()
    except maven.PrerequisiteMissing as exc:
        missing_prerequisite(str(exc))
    home = tmp_path_factory.mktemp("py5-home")
    return lambda args, timeout=120: pyclient5.run(args, home=home, timeout=timeout)


cluster = cluster_fixture("grpc5-python", messageDelayLevel="1s 1s 1s 1s 2s 2s",
                         transactionCheckInterval=1000, transactionTimeOut=3000)


def _produce(py5, cluster, topic: str, mode: str, count: int, arg: object = 0) -> list[dict]:
    out = py5([cluster.endpoint, topic, "produce", mode, count, arg])
    assert out["errors"] == [], (out, cluster.log_tails())
    return out["sent"]


@pytest.mark.parametrize("mode", ["normal", "async"])
def test_sends_are_stored_with_their_id_tag_keys_and_properties(py5, cluster, mode):
    topic = f"Py5{mode.capitalize()}"
    make_topic(cluster, topic)
    ids = {s["idx"]: s["messageId"] for s in _produce(py5, cluster, topic, mode, 8)}
    stored = read_topic(cluster.broker.addr, topic)
    assert len(stored) == 8
    for m in stored:
        idx = int(m.properties["idx"])
        assert m.properties["UNIQ_KEY"] == ids[idx] and m.tags == "TagA" and m.keys == [f"k-{idx}"]
        assert m.body == f"p-{idx}".encode()


def test_fifo_delay_and_transactions(py5, cluster):
    for topic in ("Py5Fifo", "Py5Delay", "Py5TxCommit", "Py5TxRollback"):
        make_topic(cluster, topic)
    _produce(py5, cluster, "Py5Fifo", "fifo", 12, 3)
    by_group: dict[str, list] = {}
    for m in sorted(read_topic(cluster.broker.addr, "Py5Fifo"), key=lambda m: (m.queue_id, m.queue_offset)):
        by_group.setdefault(m.properties["__SHARDINGKEY"], []).append(m)
    assert sorted(by_group) == ["g-0", "g-1", "g-2"]
    for msgs in by_group.values():
        assert len({m.queue_id for m in msgs}) == 1
        idx = [int(m.properties["idx"]) for m in msgs]
        assert idx == sorted(idx)

    _produce(py5, cluster, "Py5Delay", "delay", 3, 2000)
    assert read_topic(cluster.broker.addr, "Py5Delay") == []
    deadline, stored = time.time() + 15, []
    while time.time() < deadline and len(stored) < 3:
        time.sleep(0.3)
        stored = read_topic(cluster.broker.addr, "Py5Delay")
    assert len(stored) == 3
    assert all(m.store_timestamp >= int(m.properties["TIMER_OUT_MS"]) for m in stored)

    committed = _produce(py5, cluster, "Py5TxCommit", "tx-commit", 3)
    _produce(py5, cluster, "Py5TxRollback", "tx-rollback", 3)
    assert sorted(m.properties["UNIQ_KEY"] for m in read_topic(cluster.broker.addr, "Py5TxCommit")) == \
        sorted(s["messageId"] for s in committed)
    time.sleep(4)  # past the first check: nothing rolled back comes back
    assert read_topic(cluster.broker.addr, "Py5TxRollback") == []


def test_an_orphaned_transaction_is_checked_back_through_another_producer(py5, cluster):
    make_topic(cluster, "Py5TxOrphan")
    orphaned = sorted(s["messageId"] for s in _produce(py5, cluster, "Py5TxOrphan", "tx-orphan", 2))
    assert read_topic(cluster.broker.addr, "Py5TxOrphan") == []
    checker = py5([cluster.endpoint, "Py5TxOrphan", "produce", "tx-checker", 2, 30], timeout=60)
    assert checker["checked"] == orphaned, (checker, cluster.log_tails())
    deadline, stored = time.time() + 5, []
    while time.time() < deadline and len(stored) < 2:
        stored = read_topic(cluster.broker.addr, "Py5TxOrphan")
        time.sleep(0.2)
    assert sorted(m.properties["UNIQ_KEY"] for m in stored) == orphaned


def test_simple_consumer_receives_acks_and_gets_unacknowledged_ones_again(py5, cluster):
    make_topic(cluster, "Py5Simple")
    ids = sorted(s["messageId"] for s in _produce(py5, cluster, "Py5Simple", "normal", 6))
    held = py5([cluster.endpoint, "Py5Simple", "simple", "GPy5Simple", 6, 20, 2, "noack"])
    assert sorted(d["messageId"] for d in held["deliveries"]) == ids and held["errors"] == []
    again = py5([cluster.endpoint, "Py5Simple", "simple", "GPy5Simple", 6, 20, 10, "ack"])
    assert sorted(d["messageId"] for d in again["deliveries"]) == ids
    assert {d["attempt"] for d in again["deliveries"]} == {2}
    after = py5([cluster.endpoint, "Py5Simple", "simple", "GPy5Simple", 1, 4, 10, "ack"])
    assert after["deliveries"] == []  # acknowledged: never again


def test_change_invisible_duration_redelivers_soon(py5, cluster):
    make_topic(cluster, "Py5Change")
    ids = sorted(s["messageId"] for s in _produce(py5, cluster, "Py5Change", "normal", 3))
    out = py5([cluster.endpoint, "Py5Change", "simple", "GPy5Change", 3, 20, 30, "change"])
    attempts: dict[str, list[int]] = {}
    for d in out["deliveries"]:
        attempts.setdefault(d["messageId"], []).append(d["attempt"])
    assert sorted(attempts) == ids and all(a == [1, 2] for a in attempts.values()), attempts


def test_push_consumer_retries_then_succeeds_once(py5, cluster):
    make_topic(cluster, "Py5Push")
    ids = sorted(s["messageId"] for s in _produce(py5, cluster, "Py5Push", "normal", 4))
    out = py5([cluster.endpoint, "Py5Push", "push", "GPy5Push", 4, 40, 1], timeout=90)
    ok = sorted(d["messageId"] for d in out["deliveries"] if d["ok"])
    assert ok == ids, out
    assert sorted(d["messageId"] for d in out["deliveries"] if not d["ok"]) == ids


def test_fifo_push_consumer_keeps_each_group_in_order_through_failures(py5, cluster):
    from pyrocketmq.remoting.client_bodies import SubscriptionGroupConfig
    from pyrocketmq.remoting.code import RequestCode, ResponseCode
    from pyrocketmq.remoting.command import RemotingCommand
    from tests.conformance.grpc5 import admin

    make_topic(cluster, "Py5Fifo2")
    body = SubscriptionGroupConfig(group_name="GPy5Fifo", consume_message_orderly=True).to_json()
    resp = admin(
        cluster.broker.addr,
        RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body),
    )
    assert resp.code == ResponseCode.SUCCESS
    ids = sorted(s["messageId"] for s in _produce(py5, cluster, "Py5Fifo2", "fifo", 9, 3))
    out = py5([cluster.endpoint, "Py5Fifo2", "push", "GPy5Fifo", 9, 60, 1], timeout=120)
    assert sorted(d["messageId"] for d in out["deliveries"] if d["ok"]) == ids, out
    by_group: dict[str, list] = {}
    for d in sorted(out["deliveries"], key=lambda d: d["at"]):
        by_group.setdefault(d["group"], []).append((int(d["idx"]), d["attempt"], d["ok"]))
    assert sorted(by_group) == ["g-0", "g-1", "g-2"]
    for group, seq in by_group.items():
        expected = [(i, a, a == 2) for i in range(int(group[-1]), 9, 3) for a in (1, 2)]
        assert seq == expected, (group, seq)


@pytest.fixture(scope="module")
def result(py5, cluster, tmp_path_factory):
    cmd = [str(pyclient5.python()), str(pyclient5.SCENARIO), "polyglot"]
    return polyglot5.judge(cluster, "Py5Lang", cmd, home=tmp_path_factory.mktemp("py5-polyglot-home"))


@pytest.mark.xdist_group("grpc5-python-polyglot")  # one worker: the scenario runs once
class TestPythonClient(polyglot5.ClientChecks):
    """The scenario the Go and Rust clients run too."""
