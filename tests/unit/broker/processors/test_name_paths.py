"""Every broker path that creates or names a topic or group refuses a name that matches the rule
only up to a trailing newline (Python's ``re.match`` with ``$`` would take it; Java's ``matches()``
does not), answers with Apache's code and remark where Apache has one, and stores nothing."""

from __future__ import annotations

import orjson
import pytest

from pyrocketmq.broker.processors.admin import AdminProcessor
from pyrocketmq.broker.processors.client import ClientProcessor
from pyrocketmq.broker.processors.consumer import ConsumerProcessor
from pyrocketmq.broker.processors.offset import OffsetProcessor
from pyrocketmq.broker.processors.pull import PullProcessor
from pyrocketmq.broker.processors.send import SendProcessor
from pyrocketmq.broker.processors.send_back import SendBackProcessor
from pyrocketmq.broker.processors.tools import ToolsProcessor
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.message import decode_offset_msg_id
from tests.integration import wire

from .conftest import Peer
from .test_hostile_fields import _commit, _create, _group, _heartbeat, _pull, _seeded, _send, _snapshot
from .test_processors import answer, on_loop, request

TOPIC_ILLEGAL = "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
GROUP_ILLEGAL = "contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
SYSTEM_ERROR = ResponseCode.SYSTEM_ERROR

CASES = [
    # (processor, handler, request, code, words in the remark)
    (SendProcessor, "handle_send", _send(b="orders\n"), SYSTEM_ERROR, TOPIC_ILLEGAL),
    (SendProcessor, "handle_send", _send(b="fresh\n"), SYSTEM_ERROR, TOPIC_ILLEGAL),  # would be auto-created
    (AdminProcessor, "handle_create_topic", _create("audit\n"), SYSTEM_ERROR, TOPIC_ILLEGAL),
    (
        AdminProcessor,
        "handle_delete_topic",
        request(RequestCode.DELETE_TOPIC_IN_BROKER, topic="orders\n"),
        SYSTEM_ERROR,
        TOPIC_ILLEGAL,
    ),
    (AdminProcessor, "handle_update_group", _group(groupName="g2\n"), SYSTEM_ERROR, GROUP_ILLEGAL),
    (
        AdminProcessor,
        "handle_update_group",
        _group(orjson.dumps({"groupName": "g2\n"})),
        SYSTEM_ERROR,
        GROUP_ILLEGAL,
    ),
    (
        AdminProcessor,
        "handle_delete_group",
        request(RequestCode.DELETE_SUBSCRIPTIONGROUP, groupName="g\n"),
        SYSTEM_ERROR,
        GROUP_ILLEGAL,
    ),
    (ClientProcessor, "handle_heartbeat", _heartbeat(group="g\n"), SYSTEM_ERROR, GROUP_ILLEGAL),
    (ClientProcessor, "handle_heartbeat", _heartbeat(producer="p\n"), SYSTEM_ERROR, GROUP_ILLEGAL),
    (ClientProcessor, "handle_heartbeat", _heartbeat(topic="orders\n"), SYSTEM_ERROR, TOPIC_ILLEGAL),
    (
        OffsetProcessor,
        "handle_update_consumer_offset",
        _commit(consumerGroup="g\n"),
        SYSTEM_ERROR,
        GROUP_ILLEGAL,
    ),
    (
        ConsumerProcessor,
        "handle_reset_offset",
        request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, topic="orders", group="g\n", timestamp=0),
        SYSTEM_ERROR,
        GROUP_ILLEGAL,
    ),
    (
        ToolsProcessor,
        "handle_clone_offsets",
        request(
            RequestCode.CLONE_GROUP_OFFSET, srcGroup="g", destGroup="h\n", topic="orders", offline="true"
        ),
        SYSTEM_ERROR,
        GROUP_ILLEGAL,
    ),
]


@pytest.mark.parametrize(("cls", "handler", "cmd", "code", "words"), CASES,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
@on_loop
async def test_a_trailing_newline_is_refused_everywhere_and_nothing_is_stored(
    services, cls, handler, cmd, code, words
):
    before = _seeded(services)
    resp = await answer(getattr(services.make(cls), handler)(Peer().conn, cmd))
    assert resp is not None and resp.code == code, resp and resp.remark
    assert words in (resp.remark or ""), resp.remark
    assert _snapshot(services) == before


@pytest.mark.parametrize(
    "handler_request",
    [
        ("pull", _pull(consumerGroup="fresh\n")),
        ("send_back", request(RequestCode.CONSUMER_SEND_MSG_BACK, offset=0, group="fresh\n", delayLevel=0)),
    ],
)
@on_loop
async def test_a_group_named_with_a_newline_is_never_auto_created(services, handler_request):
    kind, cmd = handler_request
    services.create_topic("orders", queues=1)
    processor = services.make(PullProcessor) if kind == "pull" else services.make(SendBackProcessor)
    handle = processor.handle_pull if kind == "pull" else processor.handle_send_back
    resp = await answer(handle(Peer().conn, cmd))
    assert resp is not None and resp.code != ResponseCode.SUCCESS
    assert "fresh\n" not in services.groups.table
    assert not [t for t in services.topics.table if "\n" in t]


# -- a legal group too long for its retry topic --------------------------------------------------
async def _stored(services) -> int:
    """A message in ``orders``; its commitlog offset (what a send-back names)."""
    sent = await answer(
        services.make(SendProcessor).handle_send(Peer().conn, wire.send_v2("orders", b"fail"))
    )
    return decode_offset_msg_id(sent.ext_fields["msgId"])[2]


@pytest.mark.parametrize("length", [121, 122, 255])
@on_loop
async def test_send_back_for_a_group_too_long_for_a_retry_topic_answers_as_apache_and_stores_nothing(
        services, caplog, length):
    # a group may have 255 characters, a topic 127: "%RETRY%" + 121 of them is no topic
    group = "g" * length
    services.create_topic("orders", queues=1)
    offset = await _stored(services)
    services.groups.find(group)  # auto-created: the name is legal
    before = _snapshot(services)
    resp = services.make(SendBackProcessor).handle_send_back(
        Peer().conn, request(RequestCode.CONSUMER_SEND_MSG_BACK, offset=offset, group=group, delayLevel=0))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == (
        f"topic[%RETRY%{group}] not exist: the name is {length + 7} characters, over the topic max "
        "length 127: a group of more than 120 characters has no retry topic, so its messages cannot "
        "be sent back"
    )
    assert _snapshot(services) == before
    assert not [r for r in caplog.records if r.exc_info], "no traceback"


@on_loop
async def test_send_back_for_a_group_of_120_characters_still_goes_to_its_retry_topic(services):
    group = "g" * 120
    services.create_topic("orders", queues=1)
    offset = await _stored(services)
    resp = services.make(SendBackProcessor).handle_send_back(
        Peer().conn, request(RequestCode.CONSUMER_SEND_MSG_BACK, offset=offset, group=group, delayLevel=0))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert services.topics.get(f"%RETRY%{group}") is not None


@on_loop
async def test_a_group_too_long_for_a_retry_topic_still_heart_beats_without_one(services, caplog):
    group = "g" * 200
    services.groups.find(group)
    resp = services.make(ClientProcessor).handle_heartbeat(Peer().conn, _heartbeat(group=group))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert services.consumers.find(group) is not None
    assert not [t for t in services.topics.table if t.startswith("%RETRY%g")]
    assert not [r for r in caplog.records if r.exc_info], "no traceback"
