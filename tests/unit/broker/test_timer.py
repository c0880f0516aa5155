"""Timer messages (any-millisecond delivery) on a real store (tmp_path) with injected clocks: held in
rmq_sys_wheel_timer until due, then in their real queue once, in due order; pending timers survive a
restart without a second delivery of those already done; long-pending ones roll to the queue's head."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.store import message_store as ms_module
from pyrocketmq.broker.store.timer import TimerRefused, deliver_ms, names_a_timer, timer_due
from pyrocketmq.broker.store.values import MessageInner, PutMessageStatus
from pyrocketmq.broker.timer_service import TimerProgress, TimerService
from pyrocketmq.remoting.message import decode_messages, pack_host
from pyrocketmq.remoting.names import TIMER_TOPIC

from .store.storekit import make_settings, open_store

T0 = 1_700_000_000_000


@pytest.fixture
def clock(monkeypatch):
    now = [T0]
    monkeypatch.setattr(ms_module, "_now_ms", lambda: now[0])
    return now


def _open(tmp_path, **over):
    return open_store(make_settings(tmp_path / "store", **over))


@pytest.fixture
def store(tmp_path, clock):
    s = _open(tmp_path)
    yield s
    s.shutdown()


def _service(store, tmp_path, clock, **kw):
    svc = TimerService(store, str(tmp_path / "timerCheckpoint.json"), clock=lambda: clock[0], **kw)
    svc.load()
    return svc


def _put(store, body: str, **props):
    inner = MessageInner.build("T", body.encode(), {"UNIQ_KEY": body, **props}, queue_id=1,
                               born_host=pack_host("10.1.2.3", 4567), born_timestamp=42)
    return store.put_message(inner)


def _bodies(store, topic="T", queue_id=1):
    got = store.get_message("g", topic, queue_id, 0, 64)
    return [m.body.decode() for b in got.buffers for m in decode_messages(bytes(b))]


def test_what_a_message_asks_for():
    assert deliver_ms({"TIMER_DELIVER_MS": str(T0 + 5)}, T0) == T0 + 5
    assert deliver_ms({"TIMER_DELAY_SEC": "3"}, T0) == T0 + 3000
    assert deliver_ms({"TIMER_DELAY_MS": "1234"}, T0) == T0 + 1234
    assert deliver_ms({"__STARTDELIVERTIME": str(T0 + 9)}, T0) == T0 + 9
    assert deliver_ms({"TIMER_DELAY_MS": "10", "TIMER_DELIVER_MS": "1"}, T0) == T0 + 10  # RocketMQ 5's order
    assert deliver_ms({"DELAY": "3", "TIMER_DELIVER_MS": str(T0 + 5)}, T0) is None  # a delay level wins
    assert deliver_ms({"k": "v"}, T0) is None
    assert timer_due({"TIMER_DELIVER_MS": str(T0 - 1)}, T0, 60) is None  # already due: an ordinary message
    assert names_a_timer({"TIMER_DELIVER_MS": "5"}) and not names_a_timer({"KEYS": "TIMER"})
    with pytest.raises(TimerRefused, match="not a whole number"):
        deliver_ms({"TIMER_DELIVER_MS": "soon"}, T0)
    with pytest.raises(TimerRefused, match="over the max delay 60000 ms"):
        timer_due({"TIMER_DELAY_SEC": "61"}, T0, 60)


def test_a_timer_message_waits_in_the_timer_queue_and_is_delivered_in_due_order(store, tmp_path, clock):
    for body, after in (("c", 3_000), ("a", 1_000), ("b", 2_500), ("now", 0)):
        props = {"TIMER_DELIVER_MS": str(T0 + after)} if after else {}
        assert _put(store, body, **props).status == PutMessageStatus.PUT_OK
    assert _bodies(store) == ["now"]
    held = _bodies(store, TIMER_TOPIC, 0)
    assert held == ["c", "a", "b"]
    svc = _service(store, tmp_path, clock)
    svc.turn()
    assert svc.pending == 3 and _bodies(store) == ["now"]
    clock[0] = T0 + 999
    svc.turn()
    assert _bodies(store) == ["now"]
    clock[0] = T0 + 2_600
    svc.turn()
    assert _bodies(store) == ["now", "a", "b"]
    clock[0] = T0 + 3_000
    svc.turn()
    assert _bodies(store) == ["now", "a", "b", "c"] and svc.pending == 0 and svc.delivered_count == 3
    got = store.get_message("g", "T", 1, 1, 1)
    [m] = [m for b in got.buffers for m in decode_messages(bytes(b))]
    assert m.properties["TIMER_OUT_MS"] == str(T0 + 1_000) and "TIMER_DELIVER_MS" not in m.properties
    assert "REAL_TOPIC" not in m.properties and m.properties["UNIQ_KEY"] == "a" and m.born_timestamp == 42
    assert svc.progress.low == 3 and not svc.progress.done


def test_a_timer_too_far_ahead_is_refused_and_a_disabled_wheel_delivers_at_once(tmp_path, clock):
    s = _open(tmp_path, timer_max_delay_sec=10)
    try:
        assert _put(s, "far", TIMER_DELAY_SEC="11").status == PutMessageStatus.MESSAGE_ILLEGAL
        assert _put(s, "near", TIMER_DELAY_SEC="10").status == PutMessageStatus.PUT_OK
        assert _bodies(s) == [] and _bodies(s, TIMER_TOPIC, 0) == ["near"]
    finally:
        s.shutdown()
    off = open_store(make_settings(tmp_path / "off", timer_wheel_enable=False))
    try:
        assert _put(off, "x", TIMER_DELAY_SEC="5").ok and _bodies(off) == ["x"]
    finally:
        off.shutdown()


def test_pending_timers_survive_a_restart_and_done_ones_are_not_delivered_again(tmp_path, clock):
    s = _open(tmp_path)
    for body, after in (("late", 5_000), ("early", 1_000), ("mid", 2_000)):
        assert _put(s, body, TIMER_DELIVER_MS=str(T0 + after)).ok
    svc = _service(s, tmp_path, clock)
    clock[0] = T0 + 1_500
    svc.turn()
    assert _bodies(s) == ["early"]
    svc.persist(force=True)
    s.shutdown()

    s = _open(tmp_path)
    try:
        svc = _service(s, tmp_path, clock)
        svc.turn()
        assert svc.pending == 2 and _bodies(s) == ["early"]
        clock[0] = T0 + 5_000
        svc.turn()
        assert _bodies(s) == ["early", "mid", "late"]
    finally:
        s.shutdown()


def test_a_long_pending_timer_is_rolled_to_the_head_and_still_delivered_once(store, tmp_path, clock):
    assert _put(store, "tomorrow", TIMER_DELAY_SEC="86400").ok
    assert _put(store, "soon", TIMER_DELAY_MS="500").ok
    svc = _service(store, tmp_path, clock, roll_after_ms=60_000)
    svc.turn()
    clock[0] = T0 + 600
    svc.turn()
    assert _bodies(store) == ["soon"] and svc.progress.low == 0
    clock[0] = T0 + 70_000
    svc.turn()  # rolls "tomorrow" (pending 70 s > 60 s): entry 0 done, a copy at entry 2
    assert svc.rolled_count == 1 and svc.progress.low == 2
    svc.turn()  # loads the copy
    [copy] = [e for e in svc.heap]
    assert copy[1] == 2 and copy[0] == T0 + 86_400_000
    clock[0] = T0 + 86_400_000
    svc.turn()
    assert _bodies(store) == ["soon", "tomorrow"] and svc.pending == 0


def test_progress_round_trips_as_ranges():
    p = TimerProgress()
    for o in (0, 1, 3, 4, 5, 9):
        p.mark(o)
    assert p.low == 2 and p.as_json() == {"low": 2, "done": [[3, 6], [9, 10]]}
    q = TimerProgress.from_json(p.as_json())
    assert q.low == 2 and q.done == {3, 4, 5, 9} and q.is_done(1) and not q.is_done(2)
    q.skip_to(7)
    assert q.low == 7 and q.done == {9}
