"""Delayed delivery on a real store (tmp_path), with the store's and the scheduler's clocks injected:
a DELAY message sits in SCHEDULE_TOPIC_XXXX until due, then appears in its real queue, once."""

from __future__ import annotations

import json

import pytest

from pyrocketmq.broker.delay_service import ScheduleService
from pyrocketmq.broker.store import message_store as ms_module
from pyrocketmq.broker.store.values import MessageInner
from pyrocketmq.remoting.message import decode_messages, pack_host
from pyrocketmq.remoting.names import SCHEDULE_TOPIC

from .store.storekit import make_settings, open_store

LEVELS = "1s 5s 10s"


@pytest.fixture
def clock(monkeypatch):
    now = [1_700_000_000_000]
    monkeypatch.setattr(ms_module, "_now_ms", lambda: now[0])
    return now


@pytest.fixture
def store(tmp_path, clock):
    s = open_store(make_settings(tmp_path / "store", message_delay_level=LEVELS))
    yield s
    s.shutdown()


@pytest.fixture
def service(store, tmp_path, clock):
    return ScheduleService(
        store, str(tmp_path / "delayOffset.json"), store.settings.delay_levels_ms, clock=lambda: clock[0]
    )


def _put(store, body: bytes, delay: str | None, topic="T", queue_id=1, reconsume=0, **props):
    p = {"TAGS": "TagA", "UNIQ_KEY": body.decode(), **props}
    if delay is not None:
        p["DELAY"] = delay
    inner = MessageInner.build(topic, body, p, queue_id=queue_id, reconsume_times=reconsume,
                               born_host=pack_host("10.1.2.3", 4567), born_timestamp=42)
    r = store.put_message(inner)
    assert r.ok, r
    return r


def _read(store, topic, queue_id):
    got = store.get_message("g", topic, queue_id, 0, 64)
    return [m for b in got.buffers for m in decode_messages(bytes(b))]


def test_a_delayed_message_is_stored_in_its_levels_schedule_queue(store, clock):
    _put(store, b"later", "2")
    assert _read(store, "T", 1) == []
    [m] = _read(store, SCHEDULE_TOPIC, 1)
    assert (
        m.properties["REAL_TOPIC"] == "T" and m.properties["REAL_QID"] == "1" and m.properties["DELAY"] == "2"
    )
    unit = store.find_consume_queue(SCHEDULE_TOPIC, 1).get(0)
    assert unit[2] == clock[0] + 5000  # tagsCode = delivery time


def test_levels_above_the_highest_clamp_to_it(store):
    _put(store, b"far", "99")
    [m] = _read(store, SCHEDULE_TOPIC, 2)
    assert m.properties["DELAY"] == "3"


@pytest.mark.parametrize("delay", ["0", "-1", "x"])
def test_no_positive_delay_means_no_schedule(store, delay):
    _put(store, b"now", delay)
    assert [m.body for m in _read(store, "T", 1)] == [b"now"]


def test_delivery_waits_for_the_due_time_then_restores_the_message(store, service, clock):
    _put(store, b"m1", "1", reconsume=2)
    wait = service.deliver_level(1)
    assert 0 < wait <= 1.0
    assert _read(store, "T", 1) == []
    clock[0] += 999
    service.deliver_level(1)
    assert _read(store, "T", 1) == []
    clock[0] += 1
    service.deliver_level(1)
    [m] = _read(store, "T", 1)
    assert m.body == b"m1" and m.reconsume_times == 2 and "DELAY" not in m.properties
    assert m.born_host == ("10.1.2.3", 4567) and m.born_timestamp == 42
    assert m.properties["UNIQ_KEY"] == "m1" and m.properties["TAGS"] == "TagA"
    assert store.find_consume_queue("T", 1).get(0)[2] != clock[0]  # tags hash, not a time
    # delivered once: more turns deliver nothing new
    clock[0] += 10_000
    service.deliver_level(1)
    assert len(_read(store, "T", 1)) == 1
    assert service.offsets[1] == 1


def test_levels_are_independent_and_keep_store_order(store, service, clock):
    _put(store, b"slow", "2")
    _put(store, b"a", "1")
    _put(store, b"b", "1")
    clock[0] += 1000
    for level in (1, 2):
        service.deliver_level(level)
    assert [m.body for m in _read(store, "T", 1)] == [b"a", b"b"]
    clock[0] += 4000
    for level in (1, 2):
        service.deliver_level(level)
    assert [m.body for m in _read(store, "T", 1)] == [b"a", b"b", b"slow"]


def test_offsets_persist_and_reload(store, service, clock, tmp_path):
    _put(store, b"a", "1")
    _put(store, b"b", "2")
    clock[0] += 1000
    service.deliver_level(1)
    service.persist()
    doc = json.loads((tmp_path / "delayOffset.json").read_text())
    assert doc == {"offsetTable": {"1": 1}}
    again = ScheduleService(
        store, str(tmp_path / "delayOffset.json"), store.settings.delay_levels_ms, clock=lambda: clock[0]
    )
    again.load()
    assert again.offsets == {1: 1}
    clock[0] += 10_000
    again.deliver_level(1)
    again.deliver_level(2)
    assert [m.body for m in _read(store, "T", 1)] == [b"a", b"b"]


def test_an_offset_past_the_queues_end_moves_back_to_it(store, service, clock):
    service.offsets[1] = 7  # e.g. delayOffset.json written before a crash lost the queue's tail
    _put(store, b"m", "1")
    service.deliver_level(1)
    assert service.offsets[1] == 1  # caught up at the end; the new entry waits for its time
    assert _read(store, "T", 1) == []
    _put(store, b"n", "1")
    clock[0] += 1000
    service.deliver_level(1)
    assert [m.body for m in _read(store, "T", 1)] == [b"n"]
