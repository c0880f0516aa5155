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

from .conftest import Peer
from .test_hostile_fields import _commit, _create, _group, _heartbeat, _send, _snapshot
from .test_processors import answer, on_loop, request

TOPIC_ILLEGAL = "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
GROUP_ILLEGAL = "contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
SYSTEM_ERROR = ResponseCode.SYSTEM_ERROR

CASES = [
    # (processor, handler, request, code, words in the remark)
    (SendProcessor, "handle_send", _send(b="orders\n"), SYSTEM_ERROR, TOPIC_ILLEGAL),
    (SendProcessor, "handle_send", _send(b="fresh\n"), SYSTEM_ERROR, TOPIC_ILLEGAL),  # would be auto-created
    (AdminProcessor, "handle_create_topic", _create("audit\n"), SYSTEM_ERROR, TOPIC_ILLEGAL),
    (AdminProcessor, "handle_delete_topic", request(RequestCode.DELETE_TOPIC_IN_BROKER, topic="orders\n"),
     SYSTEM_ERROR, TOPIC_ILLEGAL),
    (AdminProcessor, "handle_update_group", _group(groupName="g2\n"), SYSTEM_ERROR, GROUP_ILLEGAL),
    (AdminProcessor, "handle_update_group", _group(orjson.dumps({"groupName": "g2\n"})), SYSTEM_ERROR, GROUP_ILLEGAL),
    (AdminProcessor, "handle_delete_group", request(RequestCode.DELETE_SUBSCRIPTIONGROUP, groupName="g\n"),
     SYSTEM_ERROR, GROUP_ILLEGAL),
    (ClientProcessor, "handle_heartbeat", _heartbeat(group="g\n"), SYSTEM_ERROR, GROUP_ILLEGAL),
    (ClientProcessor, "handle_heartbeat", _heartbeat(producer="p\n"), SYSTEM_ERROR, GROUP_ILLEGAL),
    (ClientProcessor, "handle_heartbeat", _heartbeat(topic="orders\n"), SYSTEM_ERROR, TOPIC_ILLEGAL),
    (OffsetProcessor, "handle_update_consumer_offset", _commit(consumerGroup="g\n"), SYSTEM_ERROR, GROUP_ILLEGAL),
    (ConsumerProcessor, "handle_reset_offset", request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, topic="orders",
                                                       group="g\n", timestamp=0), SYSTEM_ERROR, GROUP_ILLEGAL),
    (ToolsProcessor, "handle_clone_offsets", request(RequestCode.CLONE_GROUP_OFFSET, srcGroup="g", destGroup="h\n",
                                                     topic="orders", offline="true"), SYSTEM_ERROR, GROUP_ILLEGAL),
]


@pytest.mark.parametrize(("cls", "handler", "cmd", "code", "words"), CASES,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
@on_loop
async def test_a_trailing_newline_is_refused_everywhere_and_nothing_is_stored(services, cls, handler, cmd, code, words):
    services.create_topic("orders", queues=1)
    services.groups.find("g")
    services.offsets.commit("g", "orders", 0, 0)
    services.offsets.persist()
    before = _snapshot(services)
    resp = await answer(getattr(services.make(cls), handler)(Peer().conn, cmd))
    assert resp is not None and resp.code == code, resp and resp.remark
    assert words in (resp.remark or ""), resp.remark
    assert _snapshot(services) == before


@pytest.mark.parametrize("handler_request", [
    ("pull", request(RequestCode.PULL_MESSAGE, consumerGroup="fresh\n", topic="orders", queueId=0, queueOffset=0,
                     maxMsgNums=1, sysFlag=0, commitOffset=0, suspendTimeoutMillis=0, subVersion=0)),
    ("send_back", request(RequestCode.CONSUMER_SEND_MSG_BACK, offset=0, group="fresh\n", delayLevel=0)),
])
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
