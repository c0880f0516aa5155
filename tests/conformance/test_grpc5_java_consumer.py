"""The official RocketMQ 5.x Java consumers (rocketmq-client-java 5.0.8) against the broker's 5.x
endpoint: SimpleConsumer receive/ack, redelivery after the invisible time with the delivery attempt
counted, change of invisible duration (the old handle goes stale), tag filters, consumers sharing a
group with no duplicate, PushConsumer retries and dead letters, 4.x and 5.x clients on one topic,
and in-flight messages surviving a broker crash while acknowledged ones stay acknowledged."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from pyrocketmq.remoting.client_bodies import SubscriptionGroupConfig
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from tests.conformance.grpc5 import admin, cluster_fixture, make_topic, read_topic, start_grpc_cluster
from tests.integration.procs import start_broker

pytestmark = pytest.mark.conformance


# retries 1 s apart (the retry delays are the delay levels from the third on)
cluster = cluster_fixture("grpc5-consumer", messageDelayLevel="1s 1s 1s 1s 2s 2s")


def _run(
    java5, cluster, program: str, args: list, jvm_props: dict | None = None, timeout: float = 150
) -> dict:
    out = java5.run(program, [cluster.endpoint, *args], timeout=timeout, jvm_props=jvm_props).json()
    assert out["errors"] == [], (out, cluster.log_tails())
    return out


def _produce(java5, cluster, topic: str, count: int, tag: str = "TagA") -> list[str]:
    out = _run(java5, cluster, "Producer5Scenario", [topic, "normal", count], jvm_props={"tag": tag})
    return [s["messageId"] for s in out["sent"]]


def _consume(java5, cluster, topic: str, group: str, mode: str, count: int, seconds: int, arg: int = 0,
             tags: str = "*") -> dict:
    return _run(java5, cluster, "Consumer5Scenario", [topic, group, mode, count, seconds, arg, tags])


def _group(cluster, group: str, *, retry_max_times: int = 16, orderly: bool = False) -> None:
    body = SubscriptionGroupConfig(group_name=group, retry_max_times=retry_max_times,
                                   consume_message_orderly=orderly).to_json()
    resp = admin(
        cluster.broker.addr,
        RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body),
    )
    assert resp.code == ResponseCode.SUCCESS, resp.remark


def test_simple_consumer_receives_each_message_once_and_filters_by_tag(java5, cluster):
    make_topic(cluster, "S5Basic")
    wanted = _produce(java5, cluster, "S5Basic", 10, "TagA")
    _produce(java5, cluster, "S5Basic", 5, "TagB")
    out = _consume(java5, cluster, "S5Basic", "GS5Basic", "simple", 10, 30, tags="TagA")
    got = [d["messageId"] for d in out["deliveries"]]
    assert sorted(got) == sorted(wanted)  # every TagA message once, no TagB one
    assert all(
        d["attempt"] == 1 and d["tag"] == "TagA" and d["body"] == f"m-{d['idx']}" for d in out["deliveries"]
    )
    again = _consume(java5, cluster, "S5Basic", "GS5Basic", "simple", 1, 4, tags="TagA")
    assert again["deliveries"] == []  # acknowledged: never again


def test_unacknowledged_messages_come_back_after_their_invisible_time(java5, cluster):
    make_topic(cluster, "S5Redeliver")
    wanted = _produce(java5, cluster, "S5Redeliver", 4)
    first = _consume(java5, cluster, "S5Redeliver", "GS5Redeliver", "simple-noack", 4, 30, 2)
    assert sorted(d["messageId"] for d in first["deliveries"]) == sorted(wanted)
    began = time.monotonic()
    second = _consume(java5, cluster, "S5Redeliver", "GS5Redeliver", "simple", 4, 30)
    assert sorted(d["messageId"] for d in second["deliveries"]) == sorted(wanted)
    assert {d["attempt"] for d in second["deliveries"]} == {2}
    assert time.monotonic() - began < 20


def test_change_invisible_duration_gives_a_new_handle_and_the_old_one_goes_stale(java5, cluster):
    make_topic(cluster, "S5Change")
    wanted = _produce(java5, cluster, "S5Change", 3)
    out = _consume(java5, cluster, "S5Change", "GS5Change", "simple-change", 3, 30)
    attempts: dict[str, list[int]] = {}
    for d in out["deliveries"]:
        attempts.setdefault(d["messageId"], []).append(d["attempt"])
    assert sorted(attempts) == sorted(wanted) and all(a == [1, 2] for a in attempts.values()), attempts
    assert out["staleAck"] is True


def test_consumers_sharing_a_group_see_no_duplicate(java5, cluster):
    make_topic(cluster, "S5Shared")
    # three consumers wait (long polling) before the messages exist, so they compete for every one
    procs = [
        subprocess.Popen(
            java5.command(
                "Consumer5Scenario",
                [cluster.endpoint, "S5Shared", "GS5Shared", "simple", "60", "20", "0", "*"],
                jvm_props={"batch": "4", "workMs": "40"},
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        for _ in range(3)
    ]
    try:
        time.sleep(6)
        wanted = _produce(java5, cluster, "S5Shared", 60)
        outs = []
        for p in procs:
            stdout, _ = p.communicate(timeout=120)
            outs.append(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    got = [d["messageId"] for o in outs for d in o["deliveries"]]
    assert sorted(got) == sorted(wanted), (len(got), len(set(got)))  # each once over the three
    assert sum(1 for o in outs if o["deliveries"]) >= 2, [len(o["deliveries"]) for o in outs]  # shared


def test_push_consumer_retries_a_failed_message_then_succeeds_once(java5, cluster):
    make_topic(cluster, "P5Retry")
    wanted = _produce(java5, cluster, "P5Retry", 5)
    out = _consume(java5, cluster, "P5Retry", "GP5Retry", "push", 5, 30, 1)
    ok = [d["messageId"] for d in out["deliveries"] if d["ok"]]
    failed = [d["messageId"] for d in out["deliveries"] if not d["ok"]]
    assert sorted(ok) == sorted(wanted) and sorted(failed) == sorted(wanted)
    assert {d["attempt"] for d in out["deliveries"] if d["ok"]} == {2}


def test_push_consumer_dead_letters_after_the_last_attempt(java5, cluster):
    make_topic(cluster, "P5Dlq")
    _group(cluster, "GP5Dlq", retry_max_times=1)  # two deliveries in all
    wanted = _produce(java5, cluster, "P5Dlq", 3)
    out = _consume(java5, cluster, "P5Dlq", "GP5Dlq", "push", 3, 8, 99)
    assert not any(d["ok"] for d in out["deliveries"])
    deadline = time.time() + 30
    dead = []
    while time.time() < deadline and len(dead) < 3:
        dead = read_topic(cluster.broker.addr, "%DLQ%GP5Dlq", queues=1)
        time.sleep(0.5)
    assert sorted(m.properties["UNIQ_KEY"] for m in dead) == sorted(wanted), cluster.log_tails()
    per_message: dict[str, int] = {}
    for d in out["deliveries"]:
        per_message[d["messageId"]] = max(per_message.get(d["messageId"], 0), d["attempt"])
    assert set(per_message.values()) == {2}


def test_fifo_push_consumer_keeps_each_group_in_order_through_failures(java5, cluster):
    make_topic(cluster, "P5Fifo")
    _group(cluster, "GP5Fifo", orderly=True)
    out = _run(java5, cluster, "Producer5Scenario", ["P5Fifo", "fifo", 15, 3])
    wanted = sorted(s["messageId"] for s in out["sent"])
    got = _consume(java5, cluster, "P5Fifo", "GP5Fifo", "push", 15, 60, 1)
    assert sorted(d["messageId"] for d in got["deliveries"] if d["ok"]) == wanted
    by_group: dict[str, list[tuple[int, int, bool]]] = {}
    for d in sorted(got["deliveries"], key=lambda d: d["atMs"]):
        by_group.setdefault(d["group"], []).append((int(d["idx"]), d["attempt"], d["ok"]))
    assert sorted(by_group) == ["g-0", "g-1", "g-2"]
    for group, seq in by_group.items():
        # each message fails once, then succeeds, before the next message of its group is seen
        expected = [(i, a, a == 2) for i in range(int(group[-1]), 15, 3) for a in (1, 2)]
        assert seq == expected, (group, seq)


def test_4x_producer_to_5x_consumer_and_back(java, java5, cluster):
    make_topic(cluster, "Mixed45")
    sent = java.run("ProducerScenario", [cluster.namesrv.addr, "Mixed45", 6, "sync"], timeout=120).json()
    assert sent["errors"] == 0, sent
    out = _consume(java5, cluster, "Mixed45", "GMixed5", "simple", 6, 30)
    assert sorted(int(d["idx"]) for d in out["deliveries"]) == list(range(6))
    make_topic(cluster, "Mixed54")
    _produce(java5, cluster, "Mixed54", 6)
    got = java.run(
        "PushConsumerScenario",
        [cluster.namesrv.addr, "Mixed54", "GMixed4", "concurrent", 6, 60, 0],
        timeout=120,
    ).json()
    assert not got["timedOut"]
    assert sorted(int(d["userProperties"]["idx"]) for d in got["deliveries"]) == list(range(6))
    assert all(d["tags"] == "TagA" for d in got["deliveries"]), got["deliveries"][0]


def test_in_flight_messages_survive_a_broker_crash_and_acknowledged_ones_stay_acknowledged(java5, tmp_path):
    c = start_grpc_cluster(tmp_path)
    try:
        make_topic(c, "S5Crash")
        wanted = _produce(java5, c, "S5Crash", 10)
        first = _consume(java5, c, "S5Crash", "GS5Crash", "simple-half", 10, 30, 4)
        assert sorted(d["messageId"] for d in first["deliveries"]) == sorted(wanted)
        time.sleep(1.5)  # the POP state is written every second
        c.broker.kill9()
        c.broker = start_broker(tmp_path, c.namesrv.addr, port=c.broker.port, grpcListenPort=c.grpc_port)
        second = _consume(java5, c, "S5Crash", "GS5Crash", "simple", 5, 30)
        odd = sorted(int(d["idx"]) for d in second["deliveries"])
        assert odd == [1, 3, 5, 7, 9], (second, c.log_tails())
        assert {d["attempt"] for d in second["deliveries"]} == {2}
    finally:
        c.stop()
