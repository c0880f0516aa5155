"""Header and body values outside their Java type or meaning: a clear error answer, nothing stored.

Each case sends one request a careless or hostile client could send (a number beyond an Integer or
a Long, a negative queue id or offset, a queue id past the topic's queues, a permission that is
no permission, a name with a path in it, a system topic or group) and checks the answer's code and
remark, then that the topic table, the groups, the offsets, the config files and the store are
exactly as before.
"""

from __future__ import annotations

import os

import orjson
import pytest

from pyrocketmq.broker.processors.admin import AdminProcessor
from pyrocketmq.broker.processors.client import ClientProcessor
from pyrocketmq.broker.processors.consumer import ConsumerProcessor
from pyrocketmq.broker.processors.offset import OffsetProcessor
from pyrocketmq.broker.processors.pull import PullProcessor
from pyrocketmq.broker.processors.send import SendProcessor
from pyrocketmq.broker.processors.send_back import SendBackProcessor
from pyrocketmq.remoting.body import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from pyrocketmq.remoting.client_bodies import SubscriptionGroupConfig
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from tests.integration import wire

from .conftest import Peer
from .test_processors import answer, on_loop, request

INT_OVER = str(2**31)
LONG_OVER = str(2**63)
SYSTEM_ERROR, NO_PERMISSION, TOPIC_NOT_EXIST = (
    ResponseCode.SYSTEM_ERROR,
    ResponseCode.NO_PERMISSION,
    ResponseCode.TOPIC_NOT_EXIST,
)


def _heartbeat(
    group: str = "g", topic: str = "orders", producer: str = "p", model: str = "CLUSTERING"
) -> RemotingCommand:
    data = HeartbeatData(
        client_id="c1",
        producer_data_set=[ProducerData(group_name=producer)],
        consumer_data_set=[ConsumerData(group_name=group, message_model=model,
                                        subscription_data_set=(SubscriptionData.build(topic, "*", 1),))],
    )
    return RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.to_json())


def _group(raw: bytes | None = None, **fields) -> RemotingCommand:
    body = raw if raw is not None else orjson.dumps({"groupName": "g2", **fields})
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)


def _create(topic: str = "audit", **ext) -> RemotingCommand:
    fields = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": "4",
        "writeQueueNums": "4",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        **ext,
    }
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields)


def _commit(**ext) -> RemotingCommand:
    return request(
        RequestCode.UPDATE_CONSUMER_OFFSET,
        **{"consumerGroup": "g", "topic": "orders", "queueId": "0", "commitOffset": "1", **ext},
    )


def _pull(**ext) -> RemotingCommand:
    fields = {
        "consumerGroup": "g",
        "topic": "orders",
        "queueId": 0,
        "queueOffset": 0,
        "maxMsgNums": 1,
        "sysFlag": 0,
        "commitOffset": 0,
        "suspendTimeoutMillis": 0,
        "subVersion": 0,
        **ext,
    }
    return request(RequestCode.PULL_MESSAGE, **fields)


def _send(**ext) -> RemotingCommand:
    cmd = wire.send_v2("orders", b"x")
    cmd.ext_fields.update(ext)
    return cmd


CASES = [
    # (processor, handler, request, code, words in the remark)
    (SendProcessor, "handle_send", _send(e=INT_OVER), SYSTEM_ERROR, "out of range for an Integer"),
    (SendProcessor, "handle_send", _send(g=LONG_OVER), SYSTEM_ERROR, "out of range for a Long"),
    (SendProcessor, "handle_send", _send(e="7"), SYSTEM_ERROR, "queueId[7] is illegal"),
    (SendProcessor, "handle_send", _send(b="../../etc"), SYSTEM_ERROR, "contains illegal characters"),
    (PullProcessor, "handle_pull", _pull(queueOffset=LONG_OVER), SYSTEM_ERROR, "'queueOffset'"),
    (PullProcessor, "handle_pull", _pull(queueId=-1), SYSTEM_ERROR, "queueId[-1] is illegal"),
    (OffsetProcessor, "handle_update_consumer_offset", _commit(queueId=INT_OVER), SYSTEM_ERROR, "'queueId'"),
    (OffsetProcessor, "handle_update_consumer_offset", _commit(queueId="-2"), SYSTEM_ERROR, "negative"),
    (
        OffsetProcessor,
        "handle_update_consumer_offset",
        _commit(queueId="9"),
        SYSTEM_ERROR,
        "queueId[9] is illegal",
    ),
    (OffsetProcessor, "handle_update_consumer_offset", _commit(commitOffset="-5"), SYSTEM_ERROR, "negative"),
    (
        OffsetProcessor,
        "handle_update_consumer_offset",
        _commit(commitOffset=LONG_OVER),
        SYSTEM_ERROR,
        "a Long",
    ),
    (OffsetProcessor, "handle_update_consumer_offset", _commit(topic="nope"), TOPIC_NOT_EXIST, "not exist"),
    (
        OffsetProcessor,
        "handle_update_consumer_offset",
        _commit(consumerGroup="a@b"),
        SYSTEM_ERROR,
        "group[a@b]",
    ),
    (
        OffsetProcessor,
        "handle_max_offset",
        request(RequestCode.GET_MAX_OFFSET, topic="orders", queueId=-1),
        SYSTEM_ERROR,
        "negative",
    ),
    (AdminProcessor, "handle_create_topic", _create(perm="64"), SYSTEM_ERROR, "is not a permission"),
    (
        AdminProcessor,
        "handle_create_topic",
        _create(perm=INT_OVER),
        SYSTEM_ERROR,
        "out of range for an Integer",
    ),
    (AdminProcessor, "handle_create_topic", _create(readQueueNums="-1"), SYSTEM_ERROR, "readQueueNums -1"),
    (
        AdminProcessor,
        "handle_create_topic",
        _create(writeQueueNums="100000"),
        SYSTEM_ERROR,
        "writeQueueNums 100000",
    ),
    (
        AdminProcessor,
        "handle_create_topic",
        _create(topicFilterType="REGEX"),
        SYSTEM_ERROR,
        "topicFilterType",
    ),
    (AdminProcessor, "handle_create_topic", _create(topicSysFlag="-3"), SYSTEM_ERROR, "topicSysFlag"),
    (AdminProcessor, "handle_create_topic", _create("a/b"), SYSTEM_ERROR, "contains illegal characters"),
    (AdminProcessor, "handle_create_topic", _create("x" * 128), SYSTEM_ERROR, "longer than topic max length"),
    (AdminProcessor, "handle_create_topic", _create("TBW102"), NO_PERMISSION, "system topic"),
    (
        AdminProcessor,
        "handle_create_topic",
        _create("RMQ_SYS_TRANS_HALF_TOPIC"),
        NO_PERMISSION,
        "system topic",
    ),
    (AdminProcessor, "handle_create_topic", _create("SCHEDULE_TOPIC_XXXX"), NO_PERMISSION, "system topic"),
    (AdminProcessor, "handle_create_topic", _create("DefaultCluster"), NO_PERMISSION, "system topic"),
    (AdminProcessor, "handle_create_topic", _create("broker-a"), NO_PERMISSION, "system topic"),
    (
        AdminProcessor,
        "handle_delete_topic",
        request(RequestCode.DELETE_TOPIC_IN_BROKER, topic="RMQ_SYS_TRANS_OP_HALF_TOPIC"),
        NO_PERMISSION,
        "system topic",
    ),
    (
        AdminProcessor,
        "handle_delete_topic",
        request(RequestCode.DELETE_TOPIC_IN_BROKER, topic="../orders"),
        SYSTEM_ERROR,
        "contains illegal characters",
    ),
    (AdminProcessor, "handle_update_group", _group(retryQueueNums=2**31), SYSTEM_ERROR, "retryQueueNums"),
    (AdminProcessor, "handle_update_group", _group(retryMaxTimes=-7), SYSTEM_ERROR, "retryMaxTimes"),
    (AdminProcessor, "handle_update_group", _group(brokerId=-1), SYSTEM_ERROR, "brokerId"),
    (
        AdminProcessor,
        "handle_update_group",
        _group(b'{"groupName":"g2","brokerId":18446744073709551616}'),
        SYSTEM_ERROR,
        "beyond a Java long",
    ),
    (AdminProcessor, "handle_update_group", _group(groupName="../g"), SYSTEM_ERROR, "group[../g]"),
    (AdminProcessor, "handle_update_group", _group(groupName=""), SYSTEM_ERROR, "group is blank"),
    (
        AdminProcessor,
        "handle_delete_group",
        request(RequestCode.DELETE_SUBSCRIPTIONGROUP, groupName="TOOLS_CONSUMER"),
        NO_PERMISSION,
        "system group",
    ),
    (
        AdminProcessor,
        "handle_view_message",
        request(RequestCode.VIEW_MESSAGE_BY_ID, offset=LONG_OVER),
        SYSTEM_ERROR,
        "a Long",
    ),
    (ClientProcessor, "handle_heartbeat", _heartbeat(group="../../g"), SYSTEM_ERROR, "consumer group"),
    (ClientProcessor, "handle_heartbeat", _heartbeat(producer="p q"), SYSTEM_ERROR, "producer group"),
    (ClientProcessor, "handle_heartbeat", _heartbeat(topic="a/b"), SYSTEM_ERROR, "subscribes"),
    (ClientProcessor, "handle_heartbeat", _heartbeat(model="BOTH"), SYSTEM_ERROR, "messageModel"),
    (
        ConsumerProcessor,
        "handle_reset_offset",
        request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, topic="orders", group="a@b", timestamp=0),
        SYSTEM_ERROR,
        "group[a@b]",
    ),
    (
        ConsumerProcessor,
        "handle_reset_offset",
        request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, topic="orders", group="g", timestamp=LONG_OVER),
        SYSTEM_ERROR,
        "a Long",
    ),
    (
        SendBackProcessor,
        "handle_send_back",
        request(RequestCode.CONSUMER_SEND_MSG_BACK, offset=-1, group="g", delayLevel=0),
        SYSTEM_ERROR,
        "negative",
    ),
    (
        SendBackProcessor,
        "handle_send_back",
        request(RequestCode.CONSUMER_SEND_MSG_BACK, offset=0, group="g", delayLevel=INT_OVER),
        SYSTEM_ERROR,
        "an Integer",
    ),
]


def _snapshot(services) -> tuple:
    config_dir = os.path.join(services.settings.store.store_path_root_dir, "config")
    files = {}
    for name in sorted(os.listdir(config_dir)) if os.path.isdir(config_dir) else []:
        with open(os.path.join(config_dir, name), "rb") as f:
            files[name] = f.read()
    return (dict(services.topics.table), dict(services.groups.table),
            {k: dict(v) for k, v in services.offsets.table.items()}, files,
            services.store.get_max_offset_in_queue("orders", 0), services.store.commit_log.max_offset)


def _seeded(services) -> tuple:
    """Topic ``orders`` (one queue), group ``g`` with a committed offset, persisted: its snapshot."""
    services.create_topic("orders", queues=1)
    services.groups.find("g")
    services.offsets.commit("g", "orders", 0, 0)
    services.offsets.persist()
    return _snapshot(services)


@pytest.mark.parametrize(("cls", "handler", "cmd", "code", "words"), CASES,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
@on_loop
async def test_out_of_type_or_meaning_is_refused_and_nothing_is_stored(
    services, cls, handler, cmd, code, words
):
    before = _seeded(services)
    resp = await answer(getattr(services.make(cls), handler)(Peer().conn, cmd))
    assert resp is not None, "every refusal is answered"
    assert resp.code == code, resp.remark
    assert words in (resp.remark or ""), resp.remark
    assert len(resp.remark or "") < 300, "a remark says what is wrong; it does not echo the request"
    assert _snapshot(services) == before


@on_loop
async def test_the_same_requests_within_range_are_accepted(services):
    """The refusals above are about the values, not the requests: in range, each is served."""
    services.create_topic("orders", queues=1)
    conn = Peer().conn
    assert (
        await answer(services.make(SendProcessor).handle_send(conn, _send(e="0")))
    ).code == ResponseCode.SUCCESS
    assert services.make(ClientProcessor).handle_heartbeat(conn, _heartbeat()).code == ResponseCode.SUCCESS
    offsets = services.make(OffsetProcessor)
    assert (
        offsets.handle_update_consumer_offset(conn, _commit(commitOffset=str(2**40))).code
        == ResponseCode.SUCCESS
    )
    assert services.offsets.query("g", "orders", 0) == 2**40
    admin = services.make(AdminProcessor)
    assert (
        admin.handle_create_topic(conn, _create(perm="7", readQueueNums="1024")).code == ResponseCode.SUCCESS
    )
    assert admin.handle_update_group(conn, _group(retryMaxTimes=-1, brokerId=1)).code == ResponseCode.SUCCESS
    assert SubscriptionGroupConfig.from_json(orjson.dumps({"brokerId": 2**62})).broker_id == 2**62
