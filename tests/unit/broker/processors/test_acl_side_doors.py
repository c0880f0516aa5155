"""Requests whose topic is known only once the handler has found the message (view by id, send-back,
consume directly, a transaction's commit): the handler asks the account the ACL let the request in
with (recorded on the connection) for SUB (PUB for a commit) on the message's topic."""

from __future__ import annotations

import asyncio

import pytest

from pyrocketmq.broker.processors.admin import AdminProcessor
from pyrocketmq.broker.processors.client import ClientProcessor
from pyrocketmq.broker.processors.consumer import ConsumerProcessor
from pyrocketmq.broker.processors.send import SendProcessor
from pyrocketmq.broker.processors.send_back import SendBackProcessor
from pyrocketmq.broker.processors.transaction import TransactionProcessor
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.message import Prop, SysFlag, decode_offset_msg_id
from pyrocketmq.server.acl import parse_plain_acl
from pyrocketmq.server.acl_service import CALLER
from tests.integration import wire

from .conftest import Peer
from .test_processors import answer, heartbeat, on_loop, request

ACCOUNTS = parse_plain_acl(
    {
        "accounts": [
            {
                "accessKey": "reader01",
                "secretKey": "reader-secret",
                "defaultTopicPerm": "PUB|SUB",
                "defaultGroupPerm": "SUB",
                "topicPerms": ["Secret=DENY"],
            },
            {
                "accessKey": "cleared1",
                "secretKey": "cleared-secret",
                "defaultTopicPerm": "PUB|SUB",
                "defaultGroupPerm": "SUB",
            },
            {
                "accessKey": "subonly1",
                "secretKey": "subonly-secret",
                "defaultTopicPerm": "SUB",
                "defaultGroupPerm": "SUB",
            },
        ]
    }
).accounts
DENIED = "AclException: No default permission for topic:Secret"


def peer(account: str | None = "absent") -> Peer:
    """A connection as the ACL leaves it: the account its request came with (None: a white-listed
    address; "absent": no ACL on this broker)."""
    p = Peer()
    if account != "absent":
        p.conn.attrs[CALLER] = ACCOUNTS[account] if account is not None else None
    return p


async def stored(services, topic: str = "Secret", **props: str) -> tuple[str, int]:
    services.create_topic(topic, queues=1)
    sent = await answer(
        services.make(SendProcessor).handle_send(Peer().conn, wire.send_v2(topic, b"classified", props=props))
    )
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    return sent.ext_fields["msgId"], decode_offset_msg_id(sent.ext_fields["msgId"])[2]


@on_loop
async def test_view_by_id_returns_a_message_only_to_an_account_that_may_read_its_topic(services):
    _, offset = await stored(services)
    admin = services.make(AdminProcessor)
    view = request(RequestCode.VIEW_MESSAGE_BY_ID, offset=offset)
    refused = admin.handle_view_message(peer("reader01").conn, view)
    assert (refused.code, refused.remark, refused.body) == (ResponseCode.SYSTEM_ERROR, DENIED, None)
    for allowed in ("cleared1", None, "absent"):
        resp = admin.handle_view_message(peer(allowed).conn, view)
        assert resp.code == ResponseCode.SUCCESS and b"classified" in bytes(resp.body), allowed


@on_loop
async def test_a_delayed_message_is_judged_by_the_topic_it_is_bound_for(services):
    _, offset = await stored(services, **{Prop.DELAY: "3"})  # stored in SCHEDULE_TOPIC_XXXX until due
    admin, view = services.make(AdminProcessor), request(RequestCode.VIEW_MESSAGE_BY_ID, offset=offset)
    assert admin.handle_view_message(peer("reader01").conn, view).remark == DENIED
    assert admin.handle_view_message(peer("cleared1").conn, view).code == ResponseCode.SUCCESS


@on_loop
async def test_send_back_of_a_message_the_account_may_not_read_stores_nothing(services):
    _, offset = await stored(services)
    back = services.make(SendBackProcessor)
    cmd = request(RequestCode.CONSUMER_SEND_MSG_BACK, offset=offset, group="g", delayLevel=0)
    refused = back.handle_send_back(peer("reader01").conn, cmd)
    assert (refused.code, refused.remark) == (ResponseCode.SYSTEM_ERROR, DENIED)
    assert services.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 2) == 0
    assert back.handle_send_back(peer("cleared1").conn, cmd).code == ResponseCode.SUCCESS
    assert services.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 2) == 1


@pytest.mark.parametrize(("account", "committed"), [("subonly1", False), ("cleared1", True)])
def test_a_commit_needs_pub_on_the_real_topic(services, account, committed):
    async def go():
        services.create_topic("Ledger", queues=1)
        cmd = wire.send_v2("Ledger", b"pay", props={Prop.TRAN_MSG: "true", Prop.PGROUP: "tx-group"})
        cmd.ext_fields["f"] = str(SysFlag.TRANSACTION_PREPARED)
        half = await answer(services.make(SendProcessor).handle_send(Peer().conn, cmd))
        end = request(RequestCode.END_TRANSACTION, producerGroup="tx-group",
                      tranStateTableOffset=half.ext_fields["queueOffset"],
                      commitLogOffset=decode_offset_msg_id(half.ext_fields["msgId"])[2],
                      commitOrRollback=SysFlag.TRANSACTION_COMMIT, msgId=half.ext_fields["msgId"])
        return await answer(services.make(TransactionProcessor).handle_end(peer(account).conn, end))

    resp = asyncio.run(go())
    assert resp.code == (ResponseCode.SUCCESS if committed else ResponseCode.SYSTEM_ERROR), resp.remark
    assert services.store.get_max_offset_in_queue("Ledger", 0) == (1 if committed else 0)
    if not committed:
        assert resp.remark == "AclException: No default permission for topic:Ledger"


@on_loop
async def test_consume_directly_is_refused_for_a_message_the_account_may_not_read(services):
    msg_id, _ = await stored(services)
    member = Peer()
    clients = services.make(ClientProcessor)
    clients.handle_heartbeat(member.conn, heartbeat("g", "Other", client_id="10.0.0.1@a"))
    consumer = services.make(ConsumerProcessor)
    fields = {"consumerGroup": "g", "clientId": "10.0.0.1@a", "msgId": msg_id}
    refused = await answer(consumer.handle_call_consumer(
        peer("reader01").conn, request(RequestCode.CONSUME_MESSAGE_DIRECTLY, **fields)))
    assert (refused.code, refused.remark) == (ResponseCode.SYSTEM_ERROR, DENIED)
    assert RequestCode.CONSUME_MESSAGE_DIRECTLY not in [c.code for c in member.sent()]


@on_loop
async def test_a_relayed_request_does_not_carry_the_callers_signature(services):
    member = Peer()
    services.make(ClientProcessor).handle_heartbeat(member.conn, heartbeat("g", "T", client_id="10.0.0.1@a"))
    ask = request(RequestCode.GET_CONSUMER_RUNNING_INFO, consumerGroup="g", clientId="10.0.0.1@a",
                  AccessKey="cleared1", Signature="c2lnbmVk")
    relay = asyncio.ensure_future(
        services.make(ConsumerProcessor).handle_call_consumer(peer("cleared1").conn, ask)
    )
    for _ in range(5):
        await asyncio.sleep(0)
    relay.cancel()
    [relayed] = [c for c in member.sent() if c.code == RequestCode.GET_CONSUMER_RUNNING_INFO]
    assert relayed.ext_fields == {"consumerGroup": "g", "clientId": "10.0.0.1@a"}
