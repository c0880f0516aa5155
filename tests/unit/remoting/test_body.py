"""JSON bodies: golden bodies from the Java 4.9 client, fastjson's quirks, round-trips, defaults."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import orjson
import pytest
from hypothesis import given, strategies as st

from pyrocketmq.remoting import body as b
from pyrocketmq.remoting.body import (
    BrokerData,
    ClusterInfo,
    ConsumerConnection,
    ConsumerData,
    ConsumerIdList,
    ConsumeStats,
    DataVersion,
    GetConsumerStatusBody,
    HeartbeatData,
    KVTable,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    OffsetWrapper,
    ProducerData,
    QueueData,
    RegisterBrokerBody,
    ResetOffsetBody,
    SubscriptionData,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicOffset,
    TopicRouteData,
    TopicStatsTable,
    UnlockBatchRequestBody,
)
from pyrocketmq.remoting.lenient_json import ObjectKey

GOLDEN = Path(__file__).parent.parent / "golden"
VECTORS = {v["name"]: v for v in json.loads((GOLDEN / "vectors.json").read_text())["vectors"]}
MQ0 = MessageQueue("TopicTest", "broker-a", 0)
MQ1 = MessageQueue("TopicTest", "broker-a", 1)


def golden(name: str) -> bytes:
    return (GOLDEN / f"{name}.json").read_bytes().strip()


# -- the lenient reader -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a":1}', {"a": 1}),
        ('{0:"x",1:"y"}', {"0": "x", "1": "y"}),
        ("{-1:2, 3.5:true}", {"-1": 2, "3.5": True}),
        ("{name:'single', 'q':\"it's\"}", {"name": "single", "q": "it's"}),
        ('{"ctl":"a\x01b\x02c"}', {"ctl": "a\x01b\x02c"}),
        ('{"esc":"\\u0041\\n\\"\\\\"}', {"esc": 'A\n"\\'}),
        ('{"trailing":[1,2,],}', {"trailing": [1, 2]}),
        ('  [1, -2.5e3, null, false, "s", {}]  ', [1, -2500.0, None, False, "s", {}]),
        ("{\"emoji\":\"\\ud83d\\ude00\"}", {"emoji": "\U0001f600"}),
    ],
)
def test_lenient_reader_accepts_fastjson_dialect(text, expected):
    assert b.loads(text.encode()) == expected


def test_object_keys_become_hashable_object_key():
    doc = b.loads(b'{{"b":1,"a":2}:"x",{"a":2,"b":1}:"y"}')
    # the same object written in another key order is the same key: the later value wins
    assert doc == {ObjectKey({"a": 2, "b": 1}): "y"}
    (key,) = doc
    assert key.value == {"b": 1, "a": 2}


@pytest.mark.parametrize(
    "text",
    ['{"a":1', '{"a" 1}', '{"a":1}}', "[1 2]", '{"a":"unterminated}', "{:1}", "nope", ""],
)
def test_lenient_reader_rejects_garbage_with_position(text):
    with pytest.raises(ValueError, match="invalid JSON body"):
        b.loads(text.encode())


def test_from_json_rejects_non_object():
    with pytest.raises(ValueError, match="expected an object"):
        TopicRouteData.from_json(b"[1,2]")


# -- golden bodies ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["body_topic_route_standard", "body_topic_route_legacy"])
def test_topic_route_golden_parses_with_int_broker_ids(name):
    route = TopicRouteData.from_json(golden(name))
    assert [q.broker_name for q in route.queue_datas] == ["broker-a", "broker-b"]
    assert route.queue_datas[1] == QueueData("broker-b", 8, 8, 6, 0)
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.9:10911", 1: "10.0.0.10:10911"}
    assert route.broker_datas[1].cluster == "DefaultCluster"
    assert route.filter_server_table == {}
    assert route.order_topic_conf is None
    # we always emit the standard form (quoted keys), byte for byte what 4.9.7 sends new clients
    assert route.to_json() == golden("body_topic_route_standard")
    assert orjson.loads(route.to_json()) == VECTORS[name]["parsed"]


def test_topic_route_order_conf_round_trip():
    route = TopicRouteData(
        [QueueData("a", 4, 4)], [BrokerData("c", "a", {0: "h:1"})], order_topic_conf="a:4;b:2"
    )
    doc = orjson.loads(route.to_json())
    assert doc["orderTopicConf"] == "a:4;b:2"
    assert TopicRouteData.from_json(route.to_json()) == route


def test_cluster_info_golden():
    info = ClusterInfo.from_json(golden("body_cluster_info"))
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.9:10911", 1: "10.0.0.10:10911"}
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a", "broker-b"]}
    assert orjson.loads(info.to_json()) == VECTORS["body_cluster_info"]["parsed"]


def test_heartbeat_golden_is_byte_exact():
    hb = HeartbeatData.from_json(golden("body_heartbeat"))
    assert hb.client_id == "10.0.0.5@12345#987654321"
    assert [p.group_name for p in hb.producer_data_set] == ["CLIENT_INNER_PRODUCER", "pg"]
    (cg,) = hb.consumer_data_set
    assert (cg.group_name, cg.consume_type, cg.message_model) == ("cg", "CONSUME_PASSIVELY", "CLUSTERING")
    sub = cg.subscription_data_set[0]
    assert sub.tags_set == ("TagA", "TagB") and sub.code_set == (2598919, 2598920)
    assert sub.sub_version == 1700000000000
    assert hb.to_json() == golden("body_heartbeat")


def test_heartbeat_ignores_unknown_fields():
    case = VECTORS["parse_heartbeat_unknown_field"]
    hb = HeartbeatData.from_json(case["input"].encode())
    assert hb.to_json() == case["reserialized"].encode()


@pytest.mark.parametrize(
    ("cls", "text"),
    [
        (HeartbeatData, '{"consumerDataSet":[{"groupName":"g","subscriptionDataSet":"p"}]}'),
        (HeartbeatData, '{"consumerDataSet":"abc"}'),
        (HeartbeatData, '{"producerDataSet":[1,2]}'),
        (HeartbeatData, '{"consumerDataSet":[{"subscriptionDataSet":[{"tagsSet":"TagA"}]}]}'),
        (HeartbeatData, '{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":{"a":1}}]}]}'),
        (ConsumerIdList, '{"consumerIdList":{"a":1}}'),
        (TopicList, '{"topicList":"T"}'),
        (RegisterBrokerBody, '{"topicConfigSerializeWrapper":[1]}'),
    ],
)
def test_a_value_of_the_wrong_shape_is_a_value_error(cls, text):
    """Every handler answers a ValueError as a bad body; a string where a list belongs must not be
    read character by character, nor escape as an AttributeError from inside the server."""
    with pytest.raises(ValueError, match="invalid JSON body"):
        cls.from_json(text.encode())


def test_register_broker_golden():
    reg = RegisterBrokerBody.from_json(golden("body_register_broker"))
    wrapper = reg.topic_config_serialize_wrapper
    assert wrapper.data_version == DataVersion(1700000000000, 3)
    assert wrapper.topic_config_table["TBW102"] == TopicConfig("TBW102", 8, 8, 7)
    assert reg.filter_server_list == []
    assert orjson.loads(reg.to_json()) == VECTORS["body_register_broker"]["parsed"]


def test_register_broker_compressed_golden():
    raw = (GOLDEN / "body_register_broker_compressed.bin").read_bytes()
    reg = RegisterBrokerBody.decode(raw, compressed=True)
    plain = RegisterBrokerBody.decode(golden("body_register_broker"), compressed=False)
    assert reg == plain
    fields = VECTORS["body_register_broker_compressed"]["fields"]
    assert [
        tc.encode_line() for tc in reg.topic_config_serialize_wrapper.topic_config_table.values()
    ] == fields["topicConfigs"]


def test_register_broker_compressed_round_trip_and_errors():
    reg = RegisterBrokerBody(
        TopicConfigSerializeWrapper({"T": TopicConfig("T", 2, 3, 6, "MULTI_TAG")}, DataVersion(5, 9)),
        ["fs:1"],
    )
    assert RegisterBrokerBody.from_compressed(reg.to_compressed()) == reg
    with pytest.raises(ValueError, match="does not inflate"):
        RegisterBrokerBody.from_compressed(b"not zlib")
    with pytest.raises(ValueError, match="runs past the end|truncated"):
        RegisterBrokerBody.from_compressed(zlib.compress(b"\x00\x00\x00\x10{}"))


@pytest.mark.parametrize(
    "line, expected",
    [
        ("T 4 4 6 SINGLE_TAG", TopicConfig("T", 4, 4, 6)),
        ("T 1 2 7 MULTI_TAG 3 true", TopicConfig("T", 1, 2, 7, "MULTI_TAG", 3, True)),
        ('T 1 2 6 SINGLE_TAG {"+k":"v"}', TopicConfig("T", 1, 2, 6)),  # 5.x adds attributes
    ],
)
def test_topic_config_line(line, expected):
    assert TopicConfig.decode_line(line) == expected


def test_topic_config_line_too_short():
    with pytest.raises(ValueError, match="expected 'name read write perm filterType'"):
        TopicConfig.decode_line("T 4 4")


@pytest.mark.parametrize(
    "name, cls, check",
    [
        (
            "body_consume_stats",
            ConsumeStats,
            lambda v: v.offset_table[MQ0] == OffsetWrapper(100, 90, 1700000000123),
        ),
        (
            "body_topic_stats_table",
            TopicStatsTable,
            lambda v: v.offset_table[MQ0] == TopicOffset(0, 100, 1700000000123),
        ),
        ("body_reset_offset", ResetOffsetBody, lambda v: v.offset_table == {MQ0: 42, MQ1: 7}),
    ],
)
def test_message_queue_keyed_goldens(name, cls, check):
    value = cls.from_json(golden(name))
    assert check(value)
    out = value.to_json()
    # written in fastjson's raw-object-key form (not standard JSON) and read back the same
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(out)
    assert out.count(b'{"brokerName":"broker-a","queueId":') == len(value.offset_table)
    assert cls.from_json(out) == value


def test_topic_stats_golden_is_byte_exact():
    assert TopicStatsTable.from_json(golden("body_topic_stats_table")).to_json() == golden(
        "body_topic_stats_table"
    )


def test_consume_stats_total_diff_and_tps():
    stats = ConsumeStats.from_json(golden("body_consume_stats"))
    assert stats.consume_tps == 1.5
    assert stats.total_diff() == 10


@pytest.mark.parametrize("case", ["parse_consume_stats_quoted_keys", "parse_reset_offset_quoted_keys"])
def test_message_queue_keys_quoted_as_json_text(case):
    v = VECTORS[case]
    cls = ConsumeStats if "consume" in case else ResetOffsetBody
    parsed = cls.from_json(v["input"].encode())
    assert list(parsed.offset_table) == [MQ0]


def test_message_queue_keys_in_java_to_string_form():
    raw = b'{"offsetTable":{"MessageQueue [topic=T, brokerName=b, queueId=3]":9}}'
    assert ResetOffsetBody.from_json(raw).offset_table == {MessageQueue("T", "b", 3): 9}


def test_bad_message_queue_key():
    with pytest.raises(ValueError, match="not a message queue key"):
        ResetOffsetBody.from_json(b'{"offsetTable":{"nope":1}}')


def test_empty_message_queue_maps():
    assert ConsumeStats().to_json() == b'{"consumeTps":0.0,"offsetTable":{}}'
    assert ConsumeStats.from_json(b'{"consumeTps":0.0,"offsetTable":{}}') == ConsumeStats()
    assert ResetOffsetBody.from_json(b"{}") == ResetOffsetBody()


def test_consumer_status_body_round_trip():
    body = GetConsumerStatusBody({MQ0: 5}, {"c1": {MQ1: 7, MQ0: 3}})
    assert GetConsumerStatusBody.from_json(body.to_json()) == body


def test_lock_batch_golden_and_unlock_shape():
    req = LockBatchRequestBody.from_json(golden("body_lock_batch_request"))
    assert (req.consumer_group, req.client_id) == ("cg", "10.0.0.5@12345#987654321")
    assert req.mq_set == [MQ0, MQ1]  # a set in Java: we keep it sorted
    unlock = UnlockBatchRequestBody.from_json(req.to_json())
    assert isinstance(unlock, UnlockBatchRequestBody) and unlock.mq_set == req.mq_set
    resp = LockBatchResponseBody([MQ1])
    assert orjson.loads(resp.to_json()) == {"lockOKMQSet": [MQ1.to_dict()]}
    assert LockBatchResponseBody.from_json(resp.to_json()) == resp


def test_consumer_id_list_golden():
    ids = ConsumerIdList.from_json(golden("body_consumer_list"))
    assert ids.consumer_id_list == ["10.0.0.5@12345#987654321", "10.0.0.6@222#1"]
    assert ids.to_json() == golden("body_consumer_list")


def test_subscription_group_defaults_match_java():
    assert SubscriptionGroupConfig("cg").to_json() == golden("body_subscription_group_default")
    cfg = SubscriptionGroupConfig.from_json(b'{"groupName":"g","retryMaxTimes":"3","consumeEnable":"false"}')
    assert (cfg.retry_max_times, cfg.consume_enable, cfg.retry_queue_nums) == (3, False, 1)


def test_subscription_group_wrapper_round_trip_and_missing_version():
    w = SubscriptionGroupWrapper({"g": SubscriptionGroupConfig("g", retry_queue_nums=2)}, DataVersion(1, 2))
    assert SubscriptionGroupWrapper.from_json(w.to_json()) == w
    bare = SubscriptionGroupWrapper.from_json(b'{"subscriptionGroupTable":{"g":{}}}')
    assert bare.data_version is None and bare.subscription_group_table["g"].group_name == "g"


def test_topic_config_wrapper_defaults_and_names_from_keys():
    w = TopicConfigSerializeWrapper.from_json(b'{"topicConfigTable":{"T":{"perm":4}}}')
    assert w.topic_config_table["T"] == TopicConfig("T", 16, 16, 4)
    assert w.data_version is None


def test_subscription_data_build_uses_java_hash():
    sub = SubscriptionData.build("T", " TagA || TagB ||  || TagA ", 7)
    assert sub.tags_set == ("TagA", "TagB") and sub.code_set == (2598919, 2598920)
    star = SubscriptionData.build("T", None, 7)
    assert (star.sub_string, star.tags_set, star.code_set) == ("*", (), ())
    sql = SubscriptionData.build("T", "a > 1", 7, "SQL92")
    assert (sql.sub_string, sql.expression_type, sql.code_set) == ("a > 1", "SQL92", ())


def test_broker_data_select_addr():
    assert BrokerData("c", "b", {1: "s1", 0: "m"}).select_broker_addr() == "m"
    assert BrokerData("c", "b", {2: "s2"}).select_broker_addr() == "s2"
    assert BrokerData("c", "b", {}).select_broker_addr() is None


def test_message_queue_is_hashable_and_sorts_like_java():
    qs = [
        MessageQueue("b", "x", 0),
        MessageQueue("a", "y", 1),
        MessageQueue("a", "x", 2),
        MessageQueue("a", "x", 1),
    ]
    assert sorted(qs) == [qs[3], qs[2], qs[1], qs[0]]
    assert len({MessageQueue("a", "x", 1), MessageQueue("a", "x", 1)}) == 1


def test_missing_fields_take_java_defaults():
    assert QueueData.from_dict({}) == QueueData("", 0, 0, 6, 0)
    assert ConsumerData.from_dict({"groupName": "g"}) == ConsumerData("g")
    assert HeartbeatData.from_json(b"{}") == HeartbeatData("")
    assert TopicList.from_json(b"{}") == TopicList()


def test_small_bodies_round_trip():
    values = [
        TopicList(["a", "b"], "1.2.3.4:10911"),
        KVTable({"k": "v"}),
        ConsumerConnection(
            [b.ClientConnection("cid", "1.2.3.4:5", "JAVA", 409)],
            {"T": SubscriptionData.build("T", "*", 1)},
            "CONSUME_PASSIVELY",
            "CLUSTERING",
            "CONSUME_FROM_LAST_OFFSET",
        ),
        b.ProducerConnection([b.ClientConnection("p", "1.2.3.4:6")]),
        HeartbeatData(
            "c",
            [ProducerData("pg")],
            [ConsumerData("cg", subscription_data_set=(SubscriptionData.build("T", "a", 1),))],
        ),
    ]
    for v in values:
        assert type(v).from_json(v.to_json()) == v
    assert orjson.loads(TopicList(["t"]).to_json()) == {"topicList": ["t"]}  # no null brokerAddr


_names = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)


@given(
    st.dictionaries(
        st.builds(MessageQueue, _names, _names, st.integers(-(2**31), 2**31 - 1)),
        st.integers(-(2**63), 2**63 - 1),
        max_size=8,
    )
)
def test_reset_offset_round_trip_any_queue_names(table):
    body = ResetOffsetBody(table)
    assert ResetOffsetBody.from_json(body.to_json()) == body


@given(st.dictionaries(st.integers(0, 20), _names, max_size=5), _names, _names)
def test_broker_data_round_trip(addrs, cluster, name):
    bd = BrokerData(cluster, name, addrs)
    assert BrokerData.from_dict(orjson.loads(bd.to_json())) == bd


@pytest.mark.parametrize("text", ["{", '{"a":1,', "{'a':1,", "[" * 5000, '{"a":' * 3000, "{" * 3000])
def test_cut_or_deeply_nested_bodies_are_value_errors(text):
    """Found by fuzzing: a body cut after '{' or ',' (or nested past the parser's stack) must be a
    ValueError, which every handler answers as a bad body, not an IndexError/RecursionError."""
    from pyrocketmq.remoting.lenient_json import loads

    with pytest.raises(ValueError, match="invalid JSON body"):
        loads(text)
