"""Delay levels, due times, send-back decisions and the messages they store (pure functions)."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.delay import (
    SendBackDecision,
    clamp_level,
    correct_deliver_timestamp,
    decide_send_back,
    deliver_timestamp,
    delivered_inner,
    is_due,
    send_back_inner,
)
from pyrocketmq.broker.settings import BrokerSettings
from pyrocketmq.broker.store.settings import DEFAULT_DELAY_LEVELS, parse_delay_levels
from pyrocketmq.remoting.message import MessageExt, decode_properties, pack_host
from pyrocketmq.remoting.properties import ConfigError

LEVELS = parse_delay_levels(DEFAULT_DELAY_LEVELS)


def test_default_levels_are_rocketmqs():
    assert len(LEVELS) == 18
    assert LEVELS[:4] == [1000, 5000, 10_000, 30_000]
    assert LEVELS[4] == 60_000 and LEVELS[15] == 30 * 60_000 and LEVELS[17] == 2 * 3_600_000


def test_message_delay_level_is_read_from_broker_conf():
    s = BrokerSettings.from_conf({"messageDelayLevel": "1s 1s 2s 1m 1h 1d"})
    assert s.store.delay_levels_ms == [1000, 1000, 2000, 60_000, 3_600_000, 86_400_000]
    assert "messageDelayLevel" not in s.extra


@pytest.mark.parametrize("spec", ["1x", "s", "1s 2", "-1s"])
def test_a_bad_message_delay_level_names_the_key(spec):
    with pytest.raises(ConfigError, match="messageDelayLevel"):
        BrokerSettings.from_conf({"messageDelayLevel": spec})


@pytest.mark.parametrize(("level", "want"), [(1, 1), (18, 18), (19, 18), (100, 18), (0, 0), (-1, -1)])
def test_levels_above_the_highest_clamp(level, want):
    assert clamp_level(level, LEVELS) == want


@pytest.mark.parametrize(("level", "delay"), [(1, 1000), (3, 10_000), (18, 7_200_000), (40, 7_200_000)])
def test_deliver_timestamp_is_store_time_plus_the_levels_delay(level, delay):
    assert deliver_timestamp(1_000_000, level, LEVELS) == 1_000_000 + delay


def test_due_only_once_the_time_has_come():
    due = deliver_timestamp(0, 2, LEVELS)  # 5 s
    assert not is_due(4_999, due, 5000)
    assert is_due(5000, due, 5000) and is_due(6000, due, 5000)


def test_a_due_time_further_than_the_whole_delay_is_corrected_to_now():
    # the clock went back 1 h: the entry would otherwise wait 1 h longer than its level says
    assert correct_deliver_timestamp(10_000, 10_000 + 3_600_000, 5000) == 10_000
    assert correct_deliver_timestamp(10_000, 14_000, 5000) == 14_000


@pytest.mark.parametrize(
    ("reconsume", "max_times", "asked", "want"),
    [
        (0, 16, 0, SendBackDecision(False, 3)),  # first retry: level 3 + 0 (10 s)
        (1, 16, 0, SendBackDecision(False, 4)),
        (15, 16, 0, SendBackDecision(False, 18)),  # 3 + 15 = 18 (2 h)
        (16, 16, 0, SendBackDecision(True, 0)),  # the 17th failure: DLQ
        (20, 16, 0, SendBackDecision(True, 0)),
        (0, 16, 5, SendBackDecision(False, 5)),  # the client's level wins
        (0, 16, -1, SendBackDecision(True, 0)),  # a negative level: straight to the DLQ
        (2, 2, 0, SendBackDecision(True, 0)),  # the header's maxReconsumeTimes
        (1, 2, 0, SendBackDecision(False, 4)),
        (0, 0, 0, SendBackDecision(True, 0)),
    ],
)
def test_send_back_decision(reconsume, max_times, asked, want):
    assert (
        decide_send_back(reconsume_times=reconsume, max_reconsume_times=max_times, delay_level=asked) == want
    )


def _original(**kw) -> MessageExt:
    m = MessageExt(
        topic="Orders",
        body=b"payload",
        flag=7,
        properties={"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "U1", "CLUSTER": "DefaultCluster"},
        queue_id=2,
        queue_offset=41,
        commitlog_offset=12345,
        sys_flag=0,
        born_timestamp=111,
        born_host=("10.0.0.5", 5555),
        store_timestamp=222,
        store_host=("10.0.0.9", 10911),
        reconsume_times=0,
    )
    for k, v in kw.items():
        setattr(m, k, v)
    return m


def test_first_send_back_sets_retry_topic_origin_id_and_delay():
    inner = send_back_inner(
        _original(), topic="%RETRY%g", queue_id=0, delay_level=3, offset_msg_id="OFFSETID"
    )
    assert inner.topic == "%RETRY%g" and inner.queue_id == 0
    assert inner.reconsume_times == 1
    props = decode_properties(inner.properties_bytes)
    assert props["RETRY_TOPIC"] == "Orders"
    assert props["ORIGIN_MESSAGE_ID"] == "OFFSETID"
    assert props["DELAY"] == "3"
    assert props["UNIQ_KEY"] == "U1" and props["TAGS"] == "TagA" and props["KEYS"] == "k1 k2"
    assert inner.body == b"payload" and inner.flag == 7 and inner.born_timestamp == 111
    assert inner.born_host == pack_host("10.0.0.5", 5555) and inner.store_host == pack_host("10.0.0.9", 10911)
    assert inner.tags_code == 2598919


def test_second_send_back_keeps_the_first_retry_topic_and_origin_id():
    from_retry = _original(
        topic="%RETRY%g",
        reconsume_times=1,
        properties={
            "TAGS": "TagA", "RETRY_TOPIC": "Orders", "ORIGIN_MESSAGE_ID": "FIRST", "DELAY": "3",
            "REAL_TOPIC": "%RETRY%g", "REAL_QID": "0",
        },
    )
    inner = send_back_inner(from_retry, topic="%RETRY%g", queue_id=0, delay_level=4, offset_msg_id="SECOND")
    props = decode_properties(inner.properties_bytes)
    assert props["RETRY_TOPIC"] == "Orders" and props["ORIGIN_MESSAGE_ID"] == "FIRST"
    assert props["DELAY"] == "4" and "REAL_TOPIC" not in props and "REAL_QID" not in props
    assert inner.reconsume_times == 2


def test_dead_letter_has_no_delay():
    inner = send_back_inner(
        _original(reconsume_times=16, properties={"DELAY": "3"}),
        topic="%DLQ%g",
        queue_id=0,
        delay_level=0,
        offset_msg_id="X",
    )
    props = decode_properties(inner.properties_bytes)
    assert "DELAY" not in props and inner.topic == "%DLQ%g" and inner.reconsume_times == 17


def test_delivered_message_goes_to_its_real_queue_without_delay():
    scheduled = _original(
        topic="SCHEDULE_TOPIC_XXXX",
        queue_id=2,
        reconsume_times=1,
        properties={
            "TAGS": "TagA",
            "DELAY": "3",
            "REAL_TOPIC": "%RETRY%g",
            "REAL_QID": "0",
            "UNIQ_KEY": "U1",
        },
    )
    inner = delivered_inner(scheduled)
    assert inner is not None
    assert (inner.topic, inner.queue_id, inner.reconsume_times) == ("%RETRY%g", 0, 1)
    props = decode_properties(inner.properties_bytes)
    assert "DELAY" not in props and props["UNIQ_KEY"] == "U1"
    assert inner.born_host == pack_host("10.0.0.5", 5555) and inner.store_host == pack_host("10.0.0.9", 10911)


@pytest.mark.parametrize(
    "props", [{}, {"REAL_TOPIC": "T"}, {"REAL_TOPIC": "T", "REAL_QID": "x"}, {"REAL_QID": "1"}]
)
def test_delivered_inner_refuses_entries_without_a_real_queue(props):
    assert delivered_inner(_original(properties=props)) is None
