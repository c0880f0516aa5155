"""Seed corpus for the fuzz targets: one well-formed request per kind the servers serve, written
in the targets' input format (``python -m tests.fuzz.seeds`` rewrites ``tests/fuzz/corpus``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson

from pyrocketmq.remoting.batch import encode_batch
from pyrocketmq.remoting.body import (
    CheckClientRequestBody,
    ConsumerData,
    HeartbeatData,
    LockBatchRequestBody,
    MessageQueue,
    ProducerData,
    RegisterBrokerBody,
    SubscriptionData,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand, encode
from pyrocketmq.remoting.message import encode_properties

from .targets import FIELD_NAMES

CORPUS = Path(__file__).parent / "corpus"


def as_input(code: int, ext: dict[str, object], body: bytes | None, codes: list[int]) -> bytes:
    """The fuzz input :func:`~.targets.request_from` reads back as this request."""
    out = bytearray([codes.index(code), len(ext)])
    for name, value in ext.items():
        raw = str(value).encode()[:127]
        out += bytes([FIELD_NAMES.index(name), 128 + len(raw)]) + raw
    return bytes(out) + (body or b"")


def broker_requests() -> list[tuple[int, dict[str, object], bytes | None]]:  # long: a seed table
    mq = MessageQueue("T", "broker-a", 0)
    heartbeat = HeartbeatData(
        client_id="10.0.0.1@1",
        producer_data_set=[ProducerData(group_name="p")],
        consumer_data_set=[
            ConsumerData(group_name="g", subscription_data_set=(SubscriptionData.build("T", "a || b", 1),))
        ],
    ).to_json()
    props = encode_properties({"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "0A0000010001"}).decode()
    send = {"a": "p", "b": "T", "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": 1700000000000, "h": 0, "i": props}
    pull = {
        "consumerGroup": "g",
        "topic": "T",
        "queueId": 0,
        "queueOffset": 0,
        "maxMsgNums": 32,
        "sysFlag": 6,
        "commitOffset": 0,
        "suspendTimeoutMillis": 0,
        "subVersion": 0,
        "subscription": "*",
        "expressionType": "TAG",
    }
    return [
        (RequestCode.SEND_MESSAGE_V2, send, b"hello"),
        (
            RequestCode.SEND_BATCH_MESSAGE,
            {**send, "m": "true"},
            encode_batch([(b"a", 0, {"TAGS": "x"}), (b"b", 0, {})]),
        ),
        (RequestCode.PULL_MESSAGE, pull, None),
        (
            RequestCode.PULL_MESSAGE,
            {
                **pull,
                "expressionType": "SQL92",
                "subscription": "a > 1 AND (b IN ('x', 'y') OR c IS NULL) AND d BETWEEN -1.5 AND 2e3",
            },
            None,
        ),
        (
            RequestCode.CHECK_CLIENT_CONFIG,
            {},
            CheckClientRequestBody(
                client_id="c",
                group="g",
                subscription_data=SubscriptionData.build("T", "NOT (TAGS = 'a') OR x <> 'y'", 1, "SQL92"),
            ).to_json(),
        ),
        (RequestCode.HEART_BEAT, {}, heartbeat),
        (
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": "g", "topic": "T", "queueId": 0, "commitOffset": 1},
            None,
        ),
        (RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "T", "queueId": 0}, None),
        (RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {"topic": "T", "queueId": 0, "timestamp": 1}, None),
        (
            RequestCode.LOCK_BATCH_MQ,
            {},
            LockBatchRequestBody(consumer_group="g", client_id="c", mq_set=[mq]).to_json(),
        ),
        (
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            {
                "topic": "U",
                "defaultTopic": "TBW102",
                "readQueueNums": 4,
                "writeQueueNums": 4,
                "perm": 6,
                "topicFilterType": "SINGLE_TAG",
            },
            None,
        ),
        (
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
            {},
            orjson.dumps({"groupName": "g2", "retryMaxTimes": 3}),
        ),
        (
            RequestCode.CONSUMER_SEND_MSG_BACK,
            {"offset": 0, "group": "g", "delayLevel": 0, "originMsgId": "X"},
            None,
        ),
        (
            RequestCode.END_TRANSACTION,
            {
                "producerGroup": "p",
                "tranStateTableOffset": 0,
                "commitLogOffset": 0,
                "commitOrRollback": 8,
                "msgId": "X",
            },
            None,
        ),
        (
            RequestCode.QUERY_MESSAGE,
            {"topic": "T", "key": "k1", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 2**62},
            None,
        ),
        (RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": "T", "group": "g", "timestamp": -1}, None),
        (RequestCode.GET_CONSUME_STATS, {"consumerGroup": "g", "topic": "T"}, None),
        (RequestCode.SEND_MESSAGE_V2, {**send, "b": "T\n"}, b"a name legal but for its last character"),
        (
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": "g\n", "topic": "T", "queueId": 0, "commitOffset": 1},
            None,
        ),
        # the other requests naming a topic or a group, each in the header its handler decodes
        (
            RequestCode.SEND_MESSAGE,
            {
                "producerGroup": "p",
                "topic": "T",
                "defaultTopic": "TBW102",
                "defaultTopicQueueNums": 4,
                "queueId": 0,
                "sysFlag": 0,
                "bornTimestamp": 1,
                "flag": 0,
                "properties": props,
            },
            b"v1",
        ),
        (RequestCode.SEND_MESSAGE, send, b"v2 letters under code 10"),
        (
            RequestCode.SEND_MESSAGE_V2,
            {**send, "b": "%RETRY%g", "n": "broker-a", "bname": "broker-a"},
            b"retry",
        ),
        (RequestCode.SEND_MESSAGE_V2, {**send, "f": 4}, b"half"),
        (RequestCode.VIEW_MESSAGE_BY_ID, {"offset": 0}, None),
        (
            RequestCode.QUERY_MESSAGE,
            {
                "topic": "T",
                "key": "0A0000010001",
                "maxNum": 1,
                "beginTimestamp": 0,
                "endTimestamp": 2**62,
                "_UNIQUE_KEY_QUERY": "true",
            },
            None,
        ),
        (RequestCode.UNREGISTER_CLIENT, {"clientID": "c", "producerGroup": "p", "consumerGroup": "g"}, None),
        (RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "g"}, None),
        (RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "g"}, None),
        (RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "p"}, None),
        (
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            {"consumerGroup": "g", "clientId": "c", "jstackEnable": "false"},
            None,
        ),
        (RequestCode.CONSUME_MESSAGE_DIRECTLY, {"consumerGroup": "g", "clientId": "c", "msgId": "X"}, None),
        (
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
            {"topic": "T", "group": "g", "clientAddr": "c"},
            None,
        ),
        (
            RequestCode.CLONE_GROUP_OFFSET,
            {"srcGroup": "g", "destGroup": "g2", "topic": "T", "offline": "true"},
            None,
        ),
        (RequestCode.GET_TOPIC_STATS_INFO, {"topic": "T"}, None),
        (RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "T"}, None),
        (RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "GROUP_GET_NUMS", "statsKey": "T@g"}, None),
        (RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "g3", "removeOffset": "true"}, None),
        (
            RequestCode.UNLOCK_BATCH_MQ,
            {},
            LockBatchRequestBody(consumer_group="g", client_id="c", mq_set=[mq]).to_json(),
        ),
    ]


def acl_requests() -> list[tuple[int, dict[str, object], bytes | None]]:
    """The broker's requests, and requests replayed under a code whose header they do not fit."""
    pull = next(ext for code, ext, _ in broker_requests() if code == RequestCode.PULL_MESSAGE)
    return [*broker_requests(),
            (RequestCode.UPDATE_CONSUMER_OFFSET, pull, None),
            (RequestCode.GET_MAX_OFFSET, {"topic": "T", "queueId": 0, "timestamp": 1}, None)]


def namesrv_requests() -> list[tuple[int, dict[str, object], bytes | None]]:
    wrapper = TopicConfigSerializeWrapper(topic_config_table={"T": TopicConfig("T", 4, 4, 6)})
    reg = RegisterBrokerBody(wrapper, []).to_json()
    newline = TopicConfigSerializeWrapper(topic_config_table={"T\n": TopicConfig("T\n", 4, 4, 6)})
    broker = {"brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911", "clusterName": "C",
              "haServerAddr": "10.0.0.1:10912", "brokerId": 0, "compressed": "false"}
    return [
        (RequestCode.REGISTER_BROKER, broker, reg),
        (
            RequestCode.REGISTER_BROKER,
            {**broker, "compressed": "true"},
            RegisterBrokerBody(wrapper, []).to_compressed(),
        ),
        (
            RequestCode.REGISTER_BROKER,
            {**broker, "brokerAddr": "fe80::1:10911"},
            RegisterBrokerBody(newline, []).to_json(),
        ),
        (
            RequestCode.REGISTER_BROKER,
            {**broker, "brokerName": "broker-a\n", "brokerAddr": "10.0.0.1:0"},
            reg,
        ),
        (RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, None),
        (
            RequestCode.PUT_KV_CONFIG,
            {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"},
            None,
        ),
        (RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}, None),
        (
            RequestCode.QUERY_DATA_VERSION,
            {"brokerName": "broker-a", "brokerAddr": "a", "clusterName": "C", "brokerId": 0},
            orjson.dumps({"timestamp": 1, "counter": 2}),
        ),
    ]


def write(target: str, inputs: list[bytes]) -> None:
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for data in inputs:
        (folder / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def main() -> None:
    from .targets import _broker_handlers, _namesrv_handlers, acl_codes

    for target, codes_of, requests in (("broker", lambda: sorted(_broker_handlers()), broker_requests),
                                       ("namesrv", lambda: sorted(_namesrv_handlers()), namesrv_requests),
                                       ("acl", acl_codes, acl_requests)):
        codes = codes_of()
        write(target, [as_input(int(code), ext, body, codes) for code, ext, body in requests()])
    frames = [encode(RemotingCommand.request(int(code), {k: str(v) for k, v in ext.items()}, body))
              for code, ext, body in broker_requests()[:6]]
    write("frames", [bytes([len(f) // 3 or 1]) + f for f in frames])
    from pyrocketmq.remoting.message import MessageExt, encode_message

    records = [
        encode_message(
            MessageExt(
                topic="T",
                body=b"hello",
                queue_offset=3,
                properties={"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "0A01"},
            )
        ),
        encode_batch([(b"a", 0, {"TAGS": "x"}), (b"bb", 1, {})]),
        encode_properties({"a": "1", "b": "2"}),
    ]
    write("messages", records)


if __name__ == "__main__":
    main()
