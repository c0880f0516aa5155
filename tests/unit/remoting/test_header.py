"""Typed headers: golden Java requests (V1 and V2 sends, pulls), field errors, emitted ext fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyrocketmq.remoting import header as hdr, namesrv_header as nshdr
from pyrocketmq.remoting.command import RemotingCommand, decode_frame
from pyrocketmq.remoting.header import (
    HeaderError,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)
from pyrocketmq.remoting.namesrv_header import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
)

GOLDEN = Path(__file__).parent.parent / "golden"
VECTORS = {v["name"]: v for v in json.loads((GOLDEN / "vectors.json").read_text())["vectors"]}
PROPS = (
    "KEYS\x01k1 k2\x02TAGS\x01TagA\x02WAIT\x01true\x02UNIQ_KEY\x010A0000051C8B6D06D69C0000A3F10001\x02"
    "p-unicode\x01héllo"
)


def golden_cmd(name: str) -> RemotingCommand:
    raw = (GOLDEN / f"{name}.bin").read_bytes()
    return decode_frame(raw[4:])


EXPECTED_SEND = SendMessageRequestHeader(
    producer_group="pg",
    topic="TopicTest",
    default_topic="TBW102",
    default_topic_queue_nums=4,
    queue_id=1,
    sys_flag=0,
    born_timestamp=1700000000000,
    flag=0,
    properties=PROPS,
    reconsume_times=0,
    unit_mode=False,
    batch=False,
    max_reconsume_times=None,
)


@pytest.mark.parametrize(
    "name",
    [
        "cmd_send_v2_request_json",
        "cmd_send_v2_request_rocketmq",
        "cmd_send_v1_request_json",
        "cmd_send_v1_request_rocketmq",
    ],
)
def test_send_header_v1_and_v2_from_the_java_client(name):
    assert SendMessageRequestHeader.from_command(golden_cmd(name)) == EXPECTED_SEND


def test_send_header_to_ext_v1_and_v2():
    v2 = golden_cmd("cmd_send_v2_request_json").ext_fields
    expected_v2 = {k: v for k, v in v2.items() if k != "n"}  # n (broker name, 4.9.5+) is ignored
    assert EXPECTED_SEND.to_ext_v2() == expected_v2
    v1 = golden_cmd("cmd_send_v1_request_json").ext_fields
    assert EXPECTED_SEND.to_ext() == {k: v for k, v in v1.items() if k != "bname"}
    # and what we emit parses back the same way in both spellings
    for code, ext in ((310, EXPECTED_SEND.to_ext_v2()), (10, EXPECTED_SEND.to_ext())):
        assert SendMessageRequestHeader.from_command(RemotingCommand.request(code, ext)) == EXPECTED_SEND


def test_send_batch_v2_with_m_true():
    ext = dict(EXPECTED_SEND.to_ext_v2(), m="true")
    assert SendMessageRequestHeader.from_command(RemotingCommand.request(320, ext)).batch is True


def test_send_v2_error_names_the_short_key():
    ext = EXPECTED_SEND.to_ext_v2()
    del ext["b"]
    with pytest.raises(HeaderError, match=r"'b' \(topic\) is missing") as e:
        SendMessageRequestHeader.from_command(RemotingCommand.request(310, ext))
    assert e.value.field_name == "b"
    ext = dict(EXPECTED_SEND.to_ext_v2(), e="one")
    with pytest.raises(HeaderError, match=r"'e' \(queueId\) is not an integer: 'one'"):
        SendMessageRequestHeader.from_command(RemotingCommand.request(310, ext))


def test_send_response_header_adds_region_and_trace_like_java():
    golden = golden_cmd("cmd_send_response_json").ext_fields
    h = SendMessageResponseHeader.from_command(golden_cmd("cmd_send_response_json"))
    assert h == SendMessageResponseHeader("7F00000100002A9F0000000000008AA2", 1, 1234)
    assert h.to_ext() == golden
    with_tx = SendMessageResponseHeader("X", 0, 0, transaction_id="tx").to_ext()
    assert with_tx["transactionId"] == "tx"


@pytest.mark.parametrize("name", ["cmd_pull_request_json", "cmd_pull_request_rocketmq"])
def test_pull_request_header(name):
    cmd = golden_cmd(name)
    h = PullMessageRequestHeader.from_command(cmd)
    assert h == PullMessageRequestHeader(
        "cg", "TopicTest", 2, 100, 32, 7, 90, 15000, 1700000000000, "TagA || TagB", "TAG"
    )
    assert h.to_ext() == cmd.ext_fields


def test_pull_response_header_always_has_all_four_fields():
    cmd = golden_cmd("cmd_pull_response_json")
    h = PullMessageResponseHeader.from_command(cmd)
    assert h == PullMessageResponseHeader(0, 103, 0, 103)
    assert h.to_ext() == cmd.ext_fields
    with pytest.raises(TypeError):
        PullMessageResponseHeader(0, 1)  # type: ignore[call-arg]


def test_oneway_update_offset_header():
    h = hdr.UpdateConsumerOffsetRequestHeader.from_command(golden_cmd("cmd_oneway_request_json"))
    assert h == hdr.UpdateConsumerOffsetRequestHeader("cg", "TopicTest", 0, 42)


@pytest.mark.parametrize(
    "cls, ext, message",
    [
        (PullMessageRequestHeader, {"topic": "T"}, "'consumerGroup' is missing"),
        (
            hdr.QueryConsumerOffsetRequestHeader,
            {"consumerGroup": "g", "topic": "T", "queueId": "x"},
            "'queueId' is not an integer: 'x'",
        ),
        (hdr.GetMaxOffsetRequestHeader, {"topic": "T", "queueId": ""}, "'queueId' is missing"),
        (hdr.ViewMessageRequestHeader, {"offset": "null"}, "'offset' is missing"),
        (hdr.UnregisterClientRequestHeader, {"clientId": "wrong case"}, "'clientID' is missing"),
        (RegisterBrokerRequestHeader, {"brokerName": "b"}, "'brokerAddr' is missing"),
    ],
)
def test_header_errors_name_the_field(cls, ext, message):
    with pytest.raises(HeaderError, match=message):
        cls.from_command(RemotingCommand.request(0, ext))


def test_header_error_is_a_value_error():
    assert issubclass(HeaderError, ValueError)


def test_optional_fields_bname_and_unknown_keys():
    ext = {"topic": "T", "queueId": "3", "bname": "broker-a", "extra": "x"}
    assert hdr.GetMinOffsetRequestHeader.from_command(
        RemotingCommand.request(31, ext)
    ) == hdr.GetMinOffsetRequestHeader("T", 3)
    h = hdr.GetConsumeStatsRequestHeader.from_command(RemotingCommand.request(208, {"consumerGroup": "g"}))
    assert h.topic is None and h.to_ext() == {"consumerGroup": "g"}


@pytest.mark.parametrize("raw, expected", [("true", True), ("TRUE", True), ("false", False), ("yes", False)])
def test_booleans_parse_like_java(raw, expected):
    ext = {
        "brokerName": "b",
        "brokerAddr": "a:1",
        "clusterName": "c",
        "haServerAddr": "a:2",
        "brokerId": "0",
        "compressed": raw,
    }
    assert RegisterBrokerRequestHeader.from_command(RemotingCommand.request(103, ext)).compressed is expected


def test_register_broker_headers():
    ext = {
        "brokerName": "b",
        "brokerAddr": "a:1",
        "clusterName": "c",
        "haServerAddr": "a:2",
        "brokerId": "1",
        "bodyCrc32": "77",
    }
    h = RegisterBrokerRequestHeader.from_command(RemotingCommand.request(103, ext))
    assert (h.broker_id, h.compressed, h.body_crc32) == (1, False, 77)
    assert RegisterBrokerResponseHeader().to_ext() == {}
    assert RegisterBrokerResponseHeader("a:2", "m:1").to_ext() == {"haServerAddr": "a:2", "masterAddr": "m:1"}


@pytest.mark.parametrize(
    "value",
    [
        hdr.QueryConsumerOffsetRequestHeader("g", "T", 1),
        hdr.QueryConsumerOffsetResponseHeader(5),
        hdr.GetEarliestMsgStoretimeRequestHeader("T", 0),
        hdr.GetEarliestMsgStoretimeResponseHeader(17),
        hdr.SearchOffsetRequestHeader("T", 0, 1700000000000),
        hdr.OffsetResponseHeader(-1),
        hdr.UnregisterClientRequestHeader("cid", "pg", None),
        hdr.GetConsumerListByGroupRequestHeader("g"),
        hdr.NotifyConsumerIdsChangedRequestHeader("g"),
        hdr.ConsumerSendMsgBackRequestHeader(123, "g", 3, "MID", "T", False, 16),
        hdr.EndTransactionRequestHeader("pg", 1, 2, 8, "UNIQ", True, "tx"),
        hdr.CheckTransactionStateRequestHeader(1, 2, "m", "tx", "off"),
        hdr.ResetOffsetRequestHeader("T", "g", -1, True),
        hdr.GetConsumerRunningInfoRequestHeader("g", "cid", False),
        hdr.CreateTopicRequestHeader("T", "TBW102", 8, 8, 6, "SINGLE_TAG", 0, False),
        hdr.DeleteTopicRequestHeader("T", "DefaultCluster"),
        hdr.QueryMessageRequestHeader("T", "k", 32, 0, 9),
        hdr.QueryMessageResponseHeader(1, 2),
        hdr.GetTopicStatsInfoRequestHeader("T"),
        nshdr.UnRegisterBrokerRequestHeader("b", "a:1", "c", 0),
        nshdr.GetRouteInfoRequestHeader("T", True),
        nshdr.PutKVConfigRequestHeader("ns", "k", "v"),
        nshdr.GetKVConfigRequestHeader("ns", "k"),
        nshdr.GetKVConfigResponseHeader("v"),
        nshdr.DeleteKVConfigRequestHeader("ns", "k"),
        nshdr.GetKVListByNamespaceRequestHeader("ns"),
        nshdr.GetTopicsByClusterRequestHeader("c"),
    ],
)
def test_headers_round_trip(value):
    assert type(value).from_ext(value.to_ext()) == value


def test_java_wire_names():
    assert hdr.ResetOffsetRequestHeader("T", "g", 5, True).to_ext() == {
        "topic": "T",
        "group": "g",
        "timestamp": "5",
        "isForce": "true",
    }
    assert set(hdr.QueryMessageResponseHeader(1, 2).to_ext()) == {
        "indexLastUpdateTimestamp",
        "indexLastUpdatePhyoffset",
    }
    assert set(hdr.EndTransactionRequestHeader("p", 1, 2, 8, "m").to_ext()) == {
        "producerGroup", "tranStateTableOffset", "commitLogOffset", "commitOrRollback", "msgId",
        "fromTransactionCheck",
    }  # fmt: skip
    assert "acceptStandardJsonOnly" in nshdr.GetRouteInfoRequestHeader("T", False).to_ext()


def test_headers_are_frozen():
    h = hdr.GetTopicStatsInfoRequestHeader("T")
    with pytest.raises(AttributeError):
        h.topic = "U"  # type: ignore[misc]


def test_docstring_examples():
    import doctest

    from pyrocketmq.remoting import body

    for module in (hdr, body):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_numbers_must_fit_their_java_type():
    """``int`` fields are Java Integers, ``Long`` fields Java Longs: beyond either is malformed."""
    from pyrocketmq.remoting.command import RemotingCommand as Cmd

    ok = {"consumerGroup": "g", "topic": "T", "queueId": str(2**31 - 1), "commitOffset": str(2**63 - 1)}
    h = hdr.UpdateConsumerOffsetRequestHeader.from_command(Cmd.request(15, ok))
    assert (h.queue_id, h.commit_offset) == (2**31 - 1, 2**63 - 1)
    for key, value, words in (
        ("queueId", str(2**31), "an Integer"),
        ("queueId", str(-(2**31) - 1), "an Integer"),
        ("commitOffset", str(2**63), "a Long"),
        ("commitOffset", "9" * 100, "a Long"),
        ("commitOffset", "9" * 5000, "not an integer"),
    ):
        with pytest.raises(hdr.HeaderError, match=words) as e:
            hdr.UpdateConsumerOffsetRequestHeader.from_command(Cmd.request(15, {**ok, key: value}))
        assert e.value.field_name == key and len(str(e.value)) < 150
    v2 = {"a": "p", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": str(2**40), "h": "0"}
    assert hdr.SendMessageRequestHeader.from_command(Cmd.request(310, v2)).born_timestamp == 2**40
    for key in "defhjl":
        with pytest.raises(hdr.HeaderError, match="an Integer") as e:
            hdr.SendMessageRequestHeader.from_command(Cmd.request(310, {**v2, key: str(2**31)}))
        assert e.value.field_name == key
