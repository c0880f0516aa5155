"""RECALL_MESSAGE on a temporary store, with the timer service turned by hand on a clock of its own:
a timer message's send answers a recall handle, a recall keeps the message from being delivered
(while the one next to it is delivered), across a restart with or without a checkpoint written
since; and Apache's refusals, judged in its order."""

from __future__ import annotations

import os
import time

import pytest

from pyrocketmq.broker.processors.recall import RecallProcessor, judge_recall
from pyrocketmq.broker.processors.send import SendProcessor, recall_handle
from pyrocketmq.broker.timer_service import TimerService
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import RecallMessageRequestHeader
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.recall_handle import RecallHandle, decode_recall_handle
from tests.integration import wire

from .conftest import Peer, build
from .test_processors import answer, on_loop

AHEAD_MS = 60_000
"""How far ahead the timer messages are due (the timer service's clock jumps past it)."""


@pytest.fixture
def services(tmp_path):
    svc = build(str(tmp_path), recallMessageEnable="true")
    svc.create_topic("orders")
    svc.create_topic("other")
    yield svc
    svc.store.shutdown()


def _timer(services, clock_ms: int) -> TimerService:
    path = os.path.join(services.settings.store.config_dir, "timerCheckpoint.json")
    timer = TimerService(services.store, path, clock=lambda: clock_ms)
    timer.load()
    return timer


async def _send(services, topic: str, uniq: str, **props: str) -> RemotingCommand:
    cmd = wire.send_v2(topic, uniq.encode(), props={"UNIQ_KEY": uniq, **props})
    return await answer(services.make(SendProcessor).handle_send(Peer().conn, cmd))


async def _send_timer(services, topic: str, uniq: str) -> str:
    due = int(time.time() * 1000) + AHEAD_MS
    resp = await _send(services, topic, uniq, TIMER_DELIVER_MS=str(due))
    assert resp.code == ResponseCode.SUCCESS
    return resp.ext_fields["recallHandle"]


def _recall(services, topic: str, handle: str) -> RemotingCommand:
    cmd = RemotingCommand.request(RequestCode.RECALL_MESSAGE, {"topic": topic, "recallHandle": handle})
    return services.make(RecallProcessor).handle_recall(Peer().conn, cmd)


def _delivered(services, topic: str = "orders") -> list[str]:
    out = []
    for q in range(4):
        got = services.store.get_message("g", topic, q, 0, 64)
        out += [m.body.decode() for b in got.buffers for m in decode_messages(bytes(b))]
    return sorted(out)


def _deliver_all(timer: TimerService) -> None:
    for _ in range(5):
        timer.turn()


@on_loop
async def test_a_timer_messages_send_answers_its_recall_handle(services):
    before = int(time.time() * 1000)
    handle = decode_recall_handle(await _send_timer(services, "orders", "ID-1"))
    assert (handle.topic, handle.broker_name, handle.message_id) == ("orders", "broker-a", "ID-1")
    assert handle.due_ms is not None and before + AHEAD_MS <= handle.due_ms <= before + AHEAD_MS + 5_000
    delayed = await _send(services, "orders", "ID-2", TIMER_DELAY_SEC="30")
    assert decode_recall_handle(delayed.ext_fields["recallHandle"]).message_id == "ID-2"
    for plain in (
        await _send(services, "orders", "N-1"),  # not a timer message
        await _send(services, "orders", "N-2", DELAY="2"),  # a delay level: Apache gives none either
        await _send(services, "orders", "N-3", TIMER_DELIVER_MS=str(before - 1)),  # due already
    ):
        assert plain.code == ResponseCode.SUCCESS and "recallHandle" not in plain.ext_fields


def test_no_handle_for_a_retry_topic_or_a_message_without_an_id():
    assert recall_handle("%RETRY%g", {"UNIQ_KEY": "x"}, 5, "b") is None
    assert recall_handle("orders", {}, 5, "b") is None
    assert recall_handle("orders", {"UNIQ_KEY": "x"}, 0, "b") is None
    assert (
        recall_handle("orders", {"UNIQ_KEY": "x"}, 5, "b") == RecallHandle("orders", "b", "6", "x").encode()
    )


@on_loop
async def test_a_recalled_message_is_never_delivered_and_its_neighbour_is(services):
    kept = await _send_timer(services, "orders", "KEEP")
    recalled = await _send_timer(services, "orders", "GONE")
    resp = _recall(services, "orders", recalled)
    assert (resp.code, resp.ext_fields["msgId"]) == (ResponseCode.SUCCESS, "GONE")
    again = _recall(services, "orders", recalled)  # as in Apache: a second recall succeeds too
    assert again.code == ResponseCode.SUCCESS
    timer = _timer(services, int(time.time() * 1000) + 2 * AHEAD_MS)
    _deliver_all(timer)
    assert _delivered(services) == ["KEEP"]
    assert (timer.delivered_count, timer.recalled_count) == (1, 1)
    assert len(timer.recalls) == 0  # its time passed: the book forgets it
    assert decode_recall_handle(kept).message_id == "KEEP"


@on_loop
async def test_a_handle_names_its_topic_a_recall_under_another_takes_nothing(services):
    handle = decode_recall_handle(await _send_timer(services, "orders", "SAME-ID"))
    elsewhere = RecallHandle("other", handle.broker_name, handle.timestamp, handle.message_id).encode()
    assert _recall(services, "other", elsewhere).code == ResponseCode.SUCCESS  # Apache: OK, nothing recalled
    _deliver_all(_timer(services, int(time.time() * 1000) + 2 * AHEAD_MS))
    assert _delivered(services) == ["SAME-ID"]


@pytest.mark.parametrize("checkpoint_written", [True, False])
@on_loop
async def test_a_recall_survives_a_restart(services, checkpoint_written):
    await _send_timer(services, "orders", "KEEP")
    recalled = await _send_timer(services, "orders", "GONE")
    now = int(time.time() * 1000)
    before = _timer(services, now)
    before.turn()
    before.persist(force=True)  # a checkpoint from before the recall
    assert _recall(services, "orders", recalled).code == ResponseCode.SUCCESS
    before.turn()  # the marker is read, nothing is due yet
    assert "orders+GONE" in before.recalls and before.pending == 2
    if checkpoint_written:
        before.persist(force=True)  # else the broker dies before its next write
    after = _timer(services, now + 2 * AHEAD_MS)  # a new service: what the file and the store hold
    assert ("orders+GONE" in after.recalls) is checkpoint_written
    _deliver_all(after)
    assert _delivered(services) == ["KEEP"]
    assert after.recalled_count == 1


@on_loop
async def test_a_recall_after_the_message_is_due_is_refused(services):
    due = int(time.time() * 1000) + 50
    sent = await _send(services, "orders", "LATE", TIMER_DELIVER_MS=str(due))
    time.sleep(0.06)
    resp = _recall(services, "orders", sent.ext_fields["recallHandle"])
    assert (resp.code, resp.remark) == (ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid")


@on_loop
async def test_recall_off_or_timer_off_is_refused(tmp_path):
    for conf, code, remark in (
        ({}, ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden"),  # Apache's default
        (
            {"recallMessageEnable": "true", "timerWheelEnable": "false"},
            ResponseCode.SYSTEM_ERROR,
            "recall failed, execute error",
        ),
    ):
        svc = build(str(tmp_path / str(len(conf))), **conf)
        svc.create_topic("orders")
        handle = RecallHandle.of("orders", "broker-a", int(time.time() * 1000) + AHEAD_MS, "X").encode()
        try:
            resp = _recall(svc, "orders", handle)
        finally:
            svc.store.shutdown()
        assert (resp.code, resp.remark, resp.ext_fields["MSG_REGION"]) == (code, remark, "DefaultRegion")


NOW = 1_700_000_000_000
GOOD = RecallHandle.of("orders", "broker-a", NOW + 10_000, "ID").encode()


def _judge(
    handle: str = GOOD,
    topic: str = "orders",
    *,
    enabled: bool = True,
    slave: bool = False,
    topic_known: bool = True,
    broker_name: str = "broker-a",
    now_ms: int = NOW,
    max_delay_s: int = 3600,
):
    return judge_recall(
        RecallMessageRequestHeader(topic=topic, recall_handle=handle),
        enabled=enabled,
        slave=slave,
        topic_known=topic_known,
        broker_name=broker_name,
        now_ms=now_ms,
        max_delay_s=max_delay_s,
    )


BAD, FORBIDDEN = ResponseCode.ILLEGAL_OPERATION, ResponseCode.NO_PERMISSION


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        (
            dict(enabled=False, slave=True, topic_known=False),
            (FORBIDDEN, "recall failed, operation is forbidden"),
        ),
        (
            dict(slave=True, topic_known=False),
            (ResponseCode.SLAVE_NOT_AVAILABLE, "recall failed, broker service not available"),
        ),
        (
            dict(topic_known=False, handle="junk"),
            (ResponseCode.TOPIC_NOT_EXIST, "recall failed, the topic[orders] not exist"),
        ),
        (dict(handle="junk"), (BAD, "recall handle is invalid")),
        (dict(topic="other"), (BAD, "recall failed, topic not match")),
        (dict(broker_name="broker-b"), (BAD, "recall failed, broker service not available")),
        (dict(now_ms=NOW + 10_000), (BAD, "recall failed, timestamp invalid")),  # due this millisecond
        (dict(now_ms=NOW + 20_000), (BAD, "recall failed, timestamp invalid")),
        (dict(max_delay_s=10), (BAD, "recall failed, timestamp invalid")),  # further than timerMaxDelaySec
        (
            dict(handle=RecallHandle("orders", "broker-a", "soon", "ID").encode()),
            (BAD, "recall failed, timestamp invalid"),
        ),
    ],
)
def test_refusals_in_apaches_order_and_words(kw, expected):
    assert _judge(**kw) == expected


def test_a_recall_in_time_is_judged_good():
    assert _judge(now_ms=NOW + 9_999) == decode_recall_handle(GOOD)
