"""Option parsing and the row ↔ message mapping of the Spark data source (no Spark)."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime

import pytest

from pyrocketmq.client import MQClientError
from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.message import MessageExt, Prop
from pyrocketmq.spark.offsets import OffsetKind
from pyrocketmq.spark.options import (
    DEFAULT_READER_GROUP,
    SinkOptions,
    SourceOptions,
    match_topics,
    parse_duration_ms,
    queue_times,
)
from pyrocketmq.spark.rows import (
    COLUMNS,
    check_writer_columns,
    dedup_key,
    message_to_row,
    row_to_message,
)

NS = {"nameServer": "127.0.0.1:9876"}


def test_source_defaults_stream_and_batch():
    s = SourceOptions.from_options({**NS, "topic": "Orders"})
    assert (
        s.topics == ("Orders",)
        and s.starting.kind is OffsetKind.LATEST
        and s.ending.kind is OffsetKind.LATEST
    )
    assert s.group == DEFAULT_READER_GROUP and not s.commit_group and s.fail_on_data_loss
    assert (s.pull_batch_size, s.pull_timeout_ms, s.max_records_per_batch, s.expression) == (
        32,
        10_000,
        None,
        "*",
    )
    assert (
        SourceOptions.from_options({**NS, "topic": "Orders"}, streaming=False).starting.kind
        is OffsetKind.EARLIEST
    )
    assert pickle.loads(pickle.dumps(s)) == s


def test_source_options_are_case_insensitive_with_aliases():
    s = SourceOptions.from_options({"namesrvaddr": "a:1;b:2", "TOPICS": "A, B,A", "consumergroup": "g",
                                    "tags": "x || y", "MAXRECORDSPERBATCH": "7", "failondataloss": "False",
                                    "startingTimestamp": "1700000000000", "startingOffsets": "group"})
    assert s.name_server == "a:1;b:2" and s.topics == ("A", "B") and s.group == "g" and s.commit_group
    assert s.expression == "x || y" and s.max_records_per_batch == 7 and not s.fail_on_data_loss
    assert s.starting_timestamp_ms == 1_700_000_000_000 and s.starting.kind is OffsetKind.GROUP


def test_kafka_style_options():
    s = SourceOptions.from_options({**NS, "subscribePattern": "Orders-.*", "minOffsetsPerTrigger": "100",
                                    "maxTriggerDelay": "30s", "maxOffsetsPerTrigger": "500",
                                    "startingOffsetsByTimestamp": '{"Orders-eu": {"b": {"1": 17}}}',
                                    "endingTimestamp": "99",
                                    "endingOffsetsByTimestamp": '{"X": {"b": {"0": 5}}}'})
    assert (s.topics, s.topic_pattern) == ((), "Orders-.*")
    assert (s.min_records_per_batch, s.max_trigger_delay_ms, s.max_records_per_batch) == (100, 30_000, 500)
    assert s.starting_timestamps == ((MessageQueue("Orders-eu", "b", 1), 17),)
    assert s.ending_timestamp_ms == 99 and s.ending_timestamps == ((MessageQueue("X", "b", 0), 5),)
    assert pickle.loads(pickle.dumps(s)) == s
    plain = SourceOptions.from_options({**NS, "topic": "T"})
    assert (plain.topic_pattern, plain.min_records_per_batch) == (None, None)
    assert plain.max_trigger_delay_ms == 15 * 60 * 1000  # Kafka's default, 15m
    assert plain.starting_timestamps == plain.ending_timestamps == () and plain.ending_timestamp_ms is None
    same = SourceOptions.from_options({**NS, "topic": "T", "maxOffsetsPerTrigger": "7",
                                       "maxRecordsPerBatch": "7"})
    assert same.max_records_per_batch == 7


@pytest.mark.parametrize("text, ms", [("100ms", 100), ("30s", 30_000), ("5m", 300_000), ("5min", 300_000),
                                      ("2h", 7_200_000), ("1d", 86_400_000), ("250", 250), (" 3S ", 3000)])
def test_durations(text, ms):
    assert parse_duration_ms(text, "maxTriggerDelay") == ms


@pytest.mark.parametrize("topic, matches", [("Orders-eu", True), ("Orders-", True), ("Orders", False),
                                           ("xOrders-eu", False), ("Orders-eu\n", False)])
def test_subscribe_pattern_matches_whole_names(topic, matches):
    assert match_topics("Orders-.*", [topic, "Other"]) == ([topic] if matches else [])


def test_subscribe_pattern_never_matches_reserved_topics():
    reserved = ["%RETRY%g", "%DLQ%g", "RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRANS_HALF_TOPIC",
                "rmq_sys_wheel_timer", "SCHEDULE_TOPIC_XXXX", "TBW102", "OFFSET_MOVED_EVENT",
                "SELF_TEST_TOPIC", "broker-a", "DefaultCluster"]
    assert match_topics(".*", [*reserved, "Orders", "b"], ["broker-a", "DefaultCluster"]) == ["Orders", "b"]


def test_queue_times_every_queue_or_the_named_ones():
    a, b = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
    assert queue_times([a, b], 10, ((a, 3),)) == {a: 10, b: 10}  # *Timestamp wins
    assert queue_times([a, b], None, ((a, 3), (MessageQueue("U", "b", 0), 4))) == {a: 3}
    assert queue_times([a], None, ()) == {}


@pytest.mark.parametrize(
    "opts, message",
    [
        ({"topic": "T"}, "option nameServer is required"),
        (NS, "option topic or subscribePattern is required"),
        ({**NS, "topic": "T", "subscribePattern": "T.*"}, "topic or subscribePattern, not both"),
        ({**NS, "subscribePattern": "Orders-[a-"}, r"subscribePattern='Orders-\[a-' is not a valid regular"),
        ({**NS, "topic": "T", "minOffsetsPerTrigger": "0"}, "minOffsetsPerTrigger=0 must be at least 1"),
        ({**NS, "topic": "T", "minOffsetsPerTrigger": "x"}, "minOffsetsPerTrigger='x' must be an integer"),
        ({**NS, "topic": "T", "maxTriggerDelay": "soon"}, "maxTriggerDelay='soon' must be a duration like"),
        ({**NS, "topic": "T", "maxTriggerDelay": "5 weeks"}, "maxTriggerDelay='5 weeks' must be a duration"),
        ({**NS, "topic": "T", "maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger=0 must be at least 1"),
        ({**NS, "topic": "T", "maxOffsetsPerTrigger": "5", "maxRecordsPerBatch": "6"}, "give one of them"),
        ({**NS, "topic": "T", "startingOffsetsByTimestamp": "yesterday"},
         "startingOffsetsByTimestamp is not valid JSON"),
        ({**NS, "topic": "T", "startingOffsetsByTimestamp": "[1]"}, "must be a JSON object like"),
        ({**NS, "topic": "T", "endingOffsetsByTimestamp": '{"T": {"b": {"0": -1}}}'},
         "endingOffsetsByTimestamp: T/b/0 has -1; give ms since the epoch"),
        ({**NS, "topic": "T", "endingTimestamp": "-5"}, "endingTimestamp=-5 must be at least 0"),
        ({**NS, "topic": "bad topic"}, "topic 'bad topic' is invalid"),
        ({**NS, "topic": "T", "maxRecordsPerBatch": "0"}, "maxRecordsPerBatch=0 must be at least 1"),
        ({**NS, "topic": "T", "maxRecordsPerBatch": "many"}, "must be an integer"),
        ({**NS, "topic": "T", "failOnDataLoss": "maybe"}, "must be true or false"),
        ({**NS, "topic": "T", "startingOffsets": "group"}, "needs the option consumerGroup"),
        ({**NS, "topic": "T", "endingOffsets": "earliest"}, "would read nothing"),
        ({**NS, "topic": "T", "startingOffsets": "{"}, "not valid JSON"),
    ],
)
def test_source_option_errors(opts, message):
    with pytest.raises(MQClientError, match=message):
        SourceOptions.from_options(opts)


def test_sink_options():
    s = SinkOptions.from_options({**NS, "topic": "Out", "dedupKey": "true", "batchId": "2025-11-22"})
    assert (s.topic, s.dedup_key, s.batch_id, s.dedup_key_prefix, s.max_in_flight) == (
        "Out",
        True,
        "2025-11-22",
        "spark",
        64,
    )
    assert SinkOptions.from_options(NS).topic is None
    with pytest.raises(MQClientError, match="one default topic"):
        SinkOptions.from_options({**NS, "topic": "A,B"})
    with pytest.raises(MQClientError, match="must not contain spaces"):
        SinkOptions.from_options({**NS, "dedupKeyPrefix": "a b"})


def test_message_to_row_follows_the_schema():
    msg = MessageExt(
        topic="Orders",
        body=b"{}",
        queue_id=3,
        queue_offset=41,
        born_timestamp=1_000,
        store_timestamp=2_500,
        reconsume_times=1,
        properties={
            Prop.TAGS: "books",
            Prop.KEYS: "k1 k2",
            Prop.UNIQ_KEY: "U1",
            Prop.WAIT: "true",
            Prop.MIN_OFFSET: "0",
            "region": "eu",
        },
    )
    row = dict(zip(COLUMNS, message_to_row(msg, "broker-a"), strict=True))
    assert row == {
        "topic": "Orders", "brokerName": "broker-a", "queueId": 3, "queueOffset": 41, "msgId": "U1",
        "keys": "k1 k2", "tags": "books", "properties": {"region": "eu"}, "body": b"{}",
        "bornTimestamp": datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
        "storeTimestamp": datetime(1970, 1, 1, 0, 0, 2, 500_000, tzinfo=UTC), "reconsumeTimes": 1,
    }


def test_row_to_message_mapping():
    m = row_to_message(
        {"body": b"x", "topic": "T2", "keys": "a  b", "properties": {"p": "1", "q": None}}, "T1"
    )
    assert (m.topic, m.body, m.tags, m.keys, m.properties) == ("T2", b"x", None, ["a", "b"], {"p": "1"})
    m = row_to_message(
        {"Body": "text", "tags": "", "properties": [("k", "v")]}, "T1", extra_key="spark-1-0-0"
    )
    assert (m.topic, m.body, m.tags, m.keys, m.properties) == (
        "T1",
        b"text",
        None,
        ["spark-1-0-0"],
        {"k": "v"},
    )
    m.validate()
    with pytest.raises(MQClientError, match="null body"):
        row_to_message({"body": None}, "T")
    with pytest.raises(MQClientError, match="no topic"):
        row_to_message({"body": b"x"}, None)
    with pytest.raises(MQClientError, match="binary or string"):
        row_to_message({"body": 3}, "T")


def test_writer_columns_are_checked_up_front():
    check_writer_columns(["body", "tags", "extra"], "T")
    check_writer_columns(["BODY", "topic"], None)
    with pytest.raises(MQClientError, match="no 'body' column"):
        check_writer_columns(["value"], "T")
    with pytest.raises(MQClientError, match="no 'topic' column"):
        check_writer_columns(["body"], None)


def test_dedup_key_is_deterministic_and_space_free():
    assert (
        dedup_key("spark", "8a1f", 12, 3, 99)
        == "spark-8a1f-12-3-99"
        == dedup_key("spark", "8a1f", "12", 3, 99)
    )
    assert " " not in dedup_key("p", None, "x", 0, 0)
