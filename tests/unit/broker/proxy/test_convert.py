from __future__ import annotations

import pytest

from pyrocketmq.broker.proxy.convert import (
    QueueSpan,
    Refused,
    accepted_types,
    code_of,
    endpoints,
    incoming,
    message_queues,
    outgoing,
    settings_reply,
    transaction_group,
)
from pyrocketmq.broker.proxy.pb import definition_pb2 as pb
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import MessageExt, SysFlag


def _message(kind: int = pb.NORMAL, **sp: object) -> pb.Message:
    m = pb.Message(topic=pb.Resource(name="T"), body=b"body")
    m.system_properties.message_id = "01ABCDEF"
    m.system_properties.message_type = kind  # type: ignore[assignment]  # an int from the enum
    m.system_properties.born_timestamp.FromMilliseconds(1_700_000_000_123)
    for key, value in sp.items():
        setattr(m.system_properties, key, value)
    return m


def test_a_normal_message_maps_to_4x_properties():
    m = _message(tag="TagA")
    m.system_properties.keys.extend(["k1", "k2"])
    m.user_properties["idx"] = "7"
    out = outgoing(m, 3, now_ms=1)
    assert out.topic == "T" and out.queue_id == 3 and out.sys_flag == 0 and out.body == b"body"
    assert out.born_timestamp == 1_700_000_000_123
    assert out.properties == {"idx": "7", "TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "01ABCDEF"}
    header = out.header("G")
    assert (
        header["topic"] == "T" and header["queueId"] == "3" and "UNIQ_KEY\x0101ABCDEF" in header["properties"]
    )


def test_fifo_delay_and_transaction_properties():
    assert outgoing(_message(pb.FIFO, message_group="g1"), 0, 0).properties["__SHARDINGKEY"] == "g1"
    delay = _message(pb.DELAY)
    delay.system_properties.delivery_timestamp.FromMilliseconds(1_800_000_000_000)
    assert outgoing(delay, 0, 0).properties["TIMER_DELIVER_MS"] == "1800000000000"
    tx = outgoing(_message(pb.TRANSACTION), 0, 0)
    assert tx.sys_flag == SysFlag.TRANSACTION_PREPARED
    assert tx.properties["TRAN_MSG"] == "true" and tx.properties["PGROUP"] == transaction_group("T")


@pytest.mark.parametrize(("message", "code"), [
    (_message(pb.FIFO), pb.ILLEGAL_MESSAGE_GROUP),
    (_message(pb.NORMAL, message_group="g"), pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE),
    (_message(pb.DELAY), pb.ILLEGAL_DELIVERY_TIME),
    (_message(tag="a|b"), pb.ILLEGAL_MESSAGE_TAG),
    (_message(message_id=""), pb.ILLEGAL_MESSAGE_ID),
])
def test_refused_messages_name_their_code(message, code):
    with pytest.raises(Refused) as e:
        outgoing(message, 0, 0)
    assert e.value.code == code


def test_a_user_property_may_not_take_a_system_name():
    m = _message()
    m.user_properties["UNIQ_KEY"] = "x"
    with pytest.raises(Refused) as e:
        outgoing(m, 0, 0)
    assert e.value.code == pb.ILLEGAL_MESSAGE_PROPERTY_KEY


def test_a_stored_message_reads_back_as_5x():
    stored = MessageExt(
        topic="T",
        body=b"hello",
        properties={
            "TAGS": "A",
            "KEYS": "k1 k2",
            "UNIQ_KEY": "ID1",
            "idx": "1",
            "__SHARDINGKEY": "g",
            "CLUSTER": "c",
        },
        queue_id=2,
        queue_offset=9,
        born_timestamp=5,
        store_timestamp=6,
        born_host=("10.0.0.1", 1),
        store_host=("10.0.0.2", 2),
    )
    m = incoming(stored, receipt_handle="h", delivery_attempt=2)
    sp = m.system_properties
    assert (m.topic.name, sp.tag, list(sp.keys), sp.message_id) == ("T", "A", ["k1", "k2"], "ID1")
    assert dict(m.user_properties) == {"idx": "1"}
    assert sp.message_group == "g" and sp.message_type == pb.FIFO and sp.queue_offset == 9
    assert sp.body_encoding == pb.IDENTITY and sp.body_digest.checksum == "5D41402ABC4B2A76B9719D911017C592"
    assert sp.receipt_handle == "h" and sp.delivery_attempt == 2


def test_routes_list_every_queue_with_its_permission():
    queues = message_queues("T", [QueueSpan("b", 2, 3, 6, "127.0.0.1", 8081)], accepted_types(None))
    assert [(q.id, q.permission) for q in queues] == [(0, pb.READ_WRITE), (1, pb.READ_WRITE), (2, pb.WRITE)]
    assert (
        queues[0].broker.endpoints.scheme == pb.IPv4 and queues[0].broker.endpoints.addresses[0].port == 8081
    )
    assert list(queues[0].accept_message_types) == [pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION]
    assert accepted_types("fifo") == (pb.FIFO,)
    assert endpoints("broker-0.svc", 1).scheme == pb.DOMAIN_NAME and endpoints("::1", 1).scheme == pb.IPv6


def test_codes_and_settings():
    assert code_of(ResponseCode.SUCCESS) == pb.OK
    assert code_of(ResponseCode.TOPIC_NOT_EXIST) == pb.TOPIC_NOT_FOUND
    assert code_of(ResponseCode.MESSAGE_ILLEGAL, "the topic[T] takes FIFO messages, not NORMAL ones") == \
        pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert code_of(12345) == pb.INTERNAL_SERVER_ERROR
    client = pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name="T")]))
    client.metric.on = True
    reply = settings_reply(client, max_body_size=4096)
    assert reply.publishing.max_body_size == 4096 and reply.publishing.validate_message_type
    assert not reply.metric.on and reply.backoff_policy.max_attempts == 3
    assert reply.backoff_policy.HasField("exponential_backoff")


def test_a_delivery_time_in_milliseconds_where_seconds_belong_is_read_as_milliseconds():
    from pyrocketmq.broker.proxy.convert import timestamp_ms

    m = _message(pb.DELAY)
    m.system_properties.delivery_timestamp.seconds = 1_795_660_268_444  # what the Python client 5.1.2 writes
    assert outgoing(m, 0, 0).properties["TIMER_DELIVER_MS"] == "1795660268444"
    m.system_properties.delivery_timestamp.FromMilliseconds(1_795_660_268_444)
    assert timestamp_ms(m.system_properties.delivery_timestamp) == 1_795_660_268_444
