"""RecallMessage on the 5.x endpoint, its pure half: what the proxy answers itself (Apache 5.3.2's
checks and status codes) and how the broker's RECALL_MESSAGE answer becomes the RPC's status."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.proxy.pb import definition_pb2 as pb
from pyrocketmq.broker.proxy.recall import recall_answer, recall_request
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.recall_handle import RecallHandle

HANDLE = RecallHandle.of("Orders", "broker-a", 1_700_000_000_000, "ID1").encode()


@pytest.mark.parametrize("topic_type", [None, "", "DELAY", "delay", "MIXED"])
def test_a_recall_goes_to_the_broker_named_by_its_handle(topic_type):
    cmd = recall_request("Orders", HANDLE, topic_type)
    assert isinstance(cmd, RemotingCommand)
    assert cmd.code == RequestCode.RECALL_MESSAGE
    assert cmd.ext_fields == {"topic": "Orders", "recallHandle": HANDLE, "bname": "broker-a"}


@pytest.mark.parametrize(
    ("topic", "handle", "topic_type", "code", "message"),
    [
        ("", HANDLE, None, pb.ILLEGAL_TOPIC, "The specified topic is blank."),
        ("a/b", HANDLE, None, pb.ILLEGAL_TOPIC, "The specified topic contains illegal characters"),
        ("rmq_sys_wheel_timer", HANDLE, None, pb.ILLEGAL_TOPIC, "cannot access system topic"),
        (
            "Orders",
            HANDLE,
            "NORMAL",
            pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
            "TopicMessageType validate failed, the expected type is NORMAL, but actual type is DELAY",
        ),
        (
            "Orders",
            HANDLE,
            "FIFO",
            pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
            "TopicMessageType validate failed, the expected type is FIFO",
        ),
        ("Orders", "not a handle", None, pb.INTERNAL_SERVER_ERROR, "recall handle is invalid"),
        ("Orders", "", "DELAY", pb.INTERNAL_SERVER_ERROR, "recall handle is invalid"),
    ],
)
def test_what_the_proxy_answers_itself(topic, handle, topic_type, code, message):
    got = recall_request(topic, handle, topic_type)
    assert isinstance(got, pb.Status)
    assert got.code == code and got.message.startswith(message), got


def _answer(code: int, remark: str | None = None, **ext: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.RECALL_MESSAGE, {}).response(code, remark, ext or None)


@pytest.mark.parametrize(
    ("resp", "code", "message", "message_id"),
    [
        (_answer(ResponseCode.SUCCESS, None, msgId="ID1"), pb.OK, "OK", "ID1"),
        (
            _answer(ResponseCode.TOPIC_NOT_EXIST, "recall failed, the topic[X] not exist"),
            pb.TOPIC_NOT_FOUND,
            "recall failed, the topic[X] not exist",
            "",
        ),
        (
            _answer(ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid"),
            pb.INTERNAL_SERVER_ERROR,
            "recall failed, timestamp invalid",
            "",
        ),
        (
            _answer(ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden"),
            pb.INTERNAL_SERVER_ERROR,
            "recall failed, operation is forbidden",
            "",
        ),
        (None, pb.INTERNAL_SERVER_ERROR, "recall failed, execute error", ""),
    ],
)
def test_the_brokers_answer_becomes_the_status_apaches_proxy_gives(resp, code, message, message_id):
    status, got_id = recall_answer(resp)
    assert (status.code, status.message, got_id) == (code, message, message_id)
