"""Each broker processor on its own: request in, response out, on a temp store without sockets."""

from __future__ import annotations

import asyncio
import functools
import inspect

import orjson

from pyrocketmq.broker.processors.admin import AdminProcessor
from pyrocketmq.broker.processors.client import ClientProcessor
from pyrocketmq.broker.processors.consumer import ConsumerProcessor
from pyrocketmq.broker.processors.offset import OffsetProcessor
from pyrocketmq.broker.processors.pull import PullProcessor
from pyrocketmq.broker.processors.query import QueryProcessor
from pyrocketmq.broker.processors.replication import ReplicationProcessor
from pyrocketmq.broker.processors.send import SendProcessor
from pyrocketmq.broker.processors.send_back import SendBackProcessor
from pyrocketmq.broker.processors.transaction import TransactionProcessor
from pyrocketmq.remoting.body import (
    ConsumerData,
    HeartbeatData,
    ProducerData,
    SubscriptionData,
    TopicConfigSerializeWrapper,
)
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import Prop, SysFlag, decode_messages, decode_offset_msg_id
from tests.integration import wire

from .conftest import Peer, build


def on_loop(fn):
    """Run an ``async def`` test on a fresh event loop (connections need a running loop)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return run


async def answer(result) -> RemotingCommand:
    """A handler's answer: a command, or an awaitable of one (held pulls, waits for a flush)."""
    return await result if inspect.isawaitable(result) else result


def body_of(resp: RemotingCommand) -> bytes:
    """The response body as bytes (a pull's or query's body is a list of mapped-file slices)."""
    body = resp.body or b""
    return b"".join(bytes(b) for b in body) if isinstance(body, list) else bytes(body)


def request(code: int, **ext) -> RemotingCommand:
    return RemotingCommand.request(code, {k: v for k, v in ext.items() if v is not None})


def heartbeat(
    group: str, topic: str, client_id: str = "client-1", producer: str | None = None
) -> RemotingCommand:
    data = HeartbeatData(
        client_id=client_id,
        consumer_data_set=[
            ConsumerData(group_name=group, subscription_data_set=(SubscriptionData.build(topic, "*", 1),))
        ],
        producer_data_set=[ProducerData(group_name=producer)] if producer else [],
    )
    return RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.to_json())


# -- send ---------------------------------------------------------------------------------------


@on_loop
async def test_send_stores_the_message_and_answers_its_queue_offset(services):
    services.create_topic("orders")
    send = services.make(SendProcessor)
    first = await answer(send.handle_send(Peer().conn, wire.send_v2("orders", b"one", queue_id=1)))
    second = await answer(send.handle_send(Peer().conn, wire.send_v2("orders", b"two", queue_id=1)))
    assert (first.code, second.code) == (ResponseCode.SUCCESS, ResponseCode.SUCCESS)
    assert (
        first.ext_fields["queueId"],
        first.ext_fields["queueOffset"],
        second.ext_fields["queueOffset"],
    ) == ("1", "0", "1")
    assert services.store.get_max_offset_in_queue("orders", 1) == 2
    _, _, phys = decode_offset_msg_id(second.ext_fields["msgId"])
    assert services.store.look_message(phys).body == b"two"
    assert services.stats.put_count == 2


@on_loop
async def test_send_refusals_store_nothing(services, tmp_path):
    send = services.make(SendProcessor)
    conn = Peer().conn
    services.create_topic("readonly", perm=4)
    services.create_topic("small", queues=2)
    cases = {
        "bad name": (wire.send_v2("no/slash", b"x"), ResponseCode.SYSTEM_ERROR),
        "not writable": (wire.send_v2("readonly", b"x"), ResponseCode.NO_PERMISSION),
        "too large": (
            wire.send_v2("small", b"x" * (services.settings.store.max_message_size + 1)),
            ResponseCode.MESSAGE_ILLEGAL,
        ),
    }
    for system in (
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
    ):
        cases[f"system topic {system}"] = (wire.send_v2(system, b"x"), ResponseCode.NO_PERMISSION)
    for name, (cmd, code) in cases.items():
        resp = await answer(send.handle_send(conn, cmd))
        assert resp.code == code, (name, resp.remark)
        assert resp.remark, name
    assert services.store.get_max_phy_offset() == 0

    slave = build(str(tmp_path / "slave"), brokerRole="SLAVE", brokerId="1")
    try:
        slave.create_topic("orders")
        resp = await answer(slave.make(SendProcessor).handle_send(conn, wire.send_v2("orders", b"x")))
        assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE and "slave" in resp.remark
    finally:
        slave.store.shutdown()


@on_loop
async def test_send_to_an_unknown_topic_without_auto_creation_names_the_setting(tmp_path):
    svc = build(str(tmp_path), autoCreateTopicEnable="false")
    try:
        resp = await answer(svc.make(SendProcessor).handle_send(Peer().conn, wire.send_v2("nowhere", b"x")))
        assert resp.code == ResponseCode.TOPIC_NOT_EXIST
        assert "autoCreateTopicEnable is off" in resp.remark
    finally:
        svc.store.shutdown()


# -- pull ---------------------------------------------------------------------------------------


@on_loop
async def test_pull_returns_stored_messages_and_the_next_offset(services):
    services.create_topic("orders", queues=1)
    send = services.make(SendProcessor)
    for body in (b"a", b"b", b"c"):
        await answer(send.handle_send(Peer().conn, wire.send_v2("orders", body)))
    pull = services.make(PullProcessor)
    resp = await answer(pull.handle_pull(Peer().conn, wire.pull("orders", 0, 1)))
    assert resp.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_messages(body_of(resp))] == [b"b", b"c"]
    assert (resp.ext_fields["nextBeginOffset"], resp.ext_fields["maxOffset"]) == ("3", "3")

    past = await answer(pull.handle_pull(Peer().conn, wire.pull("orders", 0, 3)))
    assert past.code == ResponseCode.PULL_NOT_FOUND
    bad_queue = await answer(pull.handle_pull(Peer().conn, wire.pull("orders", 5, 0)))
    assert bad_queue.code == ResponseCode.SYSTEM_ERROR and "queueId[5] is illegal" in bad_queue.remark
    unknown = await answer(pull.handle_pull(Peer().conn, wire.pull("nowhere", 0, 0)))
    assert unknown.code == ResponseCode.TOPIC_NOT_EXIST


@on_loop
async def test_a_held_pull_answers_when_a_message_arrives(services):
    services.create_topic("orders", queues=1)
    services.store.on_dispatch = lambda topic, qid, max_offset, tags, props=None: services.holds.notify(
        topic, qid, max_offset, tags
    )
    pull = services.make(PullProcessor)
    held = asyncio.ensure_future(
        answer(pull.handle_pull(Peer().conn, wire.pull("orders", 0, 0, suspend_ms=5000)))
    )
    await asyncio.sleep(0.05)
    assert not held.done()
    await answer(services.make(SendProcessor).handle_send(Peer().conn, wire.send_v2("orders", b"late")))
    resp = await asyncio.wait_for(held, 2)
    assert resp.code == ResponseCode.SUCCESS


@on_loop
async def test_a_message_dispatched_before_a_held_pull_first_runs_still_wakes_it(services):
    # The transport runs a held pull's coroutine a loop turn after the handler returned it; a send it
    # handles in between (same turn) must still wake the pull, not leave it for the full suspend.
    services.create_topic("orders", queues=1)
    services.store.on_dispatch = lambda topic, qid, max_offset, tags, props=None: services.holds.notify(
        topic, qid, max_offset, tags
    )
    pull = services.make(PullProcessor)
    pending = pull.handle_pull(Peer().conn, wire.pull("orders", 0, 0, suspend_ms=5000))
    assert services.holds.held_count == 1
    await answer(services.make(SendProcessor).handle_send(Peer().conn, wire.send_v2("orders", b"in between")))
    resp = await asyncio.wait_for(answer(pending), 2)
    assert resp.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_messages(body_of(resp))] == [b"in between"]


# -- offsets ------------------------------------------------------------------------------------


@on_loop
async def test_offsets_commit_query_and_queue_bounds(services):
    services.create_topic("orders", queues=1)
    send = services.make(SendProcessor)
    for body in (b"a", b"b"):
        await answer(send.handle_send(Peer().conn, wire.send_v2("orders", body)))
    offsets = services.make(OffsetProcessor)
    conn = Peer().conn
    commit = request(
        RequestCode.UPDATE_CONSUMER_OFFSET, consumerGroup="g", topic="orders", queueId=0, commitOffset=1
    )
    assert offsets.handle_update_consumer_offset(conn, commit).code == ResponseCode.SUCCESS
    query = offsets.handle_query_consumer_offset(
        conn, request(RequestCode.QUERY_CONSUMER_OFFSET, consumerGroup="g", topic="orders", queueId=0)
    )
    assert (query.code, query.ext_fields["offset"]) == (ResponseCode.SUCCESS, "1")
    top = offsets.handle_max_offset(conn, request(RequestCode.GET_MAX_OFFSET, topic="orders", queueId=0))
    assert top.ext_fields["offset"] == "2"
    missing = offsets.handle_max_offset(conn, request(RequestCode.GET_MAX_OFFSET, topic="orders"))
    assert missing.code != ResponseCode.SUCCESS and "queueId" in missing.remark


# -- clients ------------------------------------------------------------------------------------


@on_loop
async def test_heartbeat_registers_the_group_makes_its_retry_topic_and_notifies_members(services):
    clients = services.make(ClientProcessor)
    first, second = Peer(), Peer()
    assert clients.handle_heartbeat(first.conn, heartbeat("g", "orders", "c1")).code == ResponseCode.SUCCESS
    assert services.topics.get("%RETRY%g") is not None
    assert clients.handle_heartbeat(second.conn, heartbeat("g", "orders", "c2")).code == ResponseCode.SUCCESS
    assert sorted(services.consumers.find("g").client_ids()) == ["c1", "c2"]
    await asyncio.sleep(0)  # the connection writes on the next loop turn
    notified = [c for c in first.sent() if c.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED]
    assert notified and notified[-1].ext_fields["consumerGroup"] == "g"
    members = clients.handle_consumer_list(
        first.conn, request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, consumerGroup="g")
    )
    assert sorted(orjson.loads(members.body)["consumerIdList"]) == ["c1", "c2"]
    clients.connection_closed(second.conn)
    assert list(services.consumers.find("g").client_ids()) == ["c1"]


@on_loop
async def test_a_bad_heartbeat_body_is_refused(services):
    resp = services.make(ClientProcessor).handle_heartbeat(
        Peer().conn, RemotingCommand.request(RequestCode.HEART_BEAT, {}, b"{not json")
    )
    assert resp.code == ResponseCode.SYSTEM_ERROR and "bad heartbeat body" in resp.remark


# -- admin, query, replication ------------------------------------------------------------------


@on_loop
async def test_admin_creates_lists_and_deletes_topics(services):
    admin = services.make(AdminProcessor)
    conn = Peer().conn
    assert admin.handle_create_topic(conn, wire.create_topic("audit", 2)).code == ResponseCode.SUCCESS
    listed = TopicConfigSerializeWrapper.from_json(
        admin.handle_all_topic_config(conn, request(RequestCode.GET_ALL_TOPIC_CONFIG)).body
    )
    assert listed.topic_config_table["audit"].write_queue_nums == 2
    cluster = admin.handle_create_topic(conn, wire.create_topic(services.settings.identity.cluster_name))
    assert cluster.code != ResponseCode.SUCCESS
    gone = admin.handle_delete_topic(conn, request(RequestCode.DELETE_TOPIC_IN_BROKER, topic="audit"))
    assert gone.code == ResponseCode.SUCCESS and services.topics.get("audit") is None


@on_loop
async def test_query_finds_a_message_by_key(services):
    services.create_topic("orders", queues=1)
    await answer(
        services.make(SendProcessor).handle_send(
            Peer().conn, wire.send_v2("orders", b"x", props={"KEYS": "k-42"})
        )
    )
    processor = services.make(QueryProcessor)

    def query(key: str):
        fields = dict(topic="orders", key=key, maxNum=32, beginTimestamp=0, endTimestamp=2**62)
        return processor.handle_query_message(Peer().conn, request(RequestCode.QUERY_MESSAGE, **fields))

    hit = query("k-42")
    assert hit.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_messages(body_of(hit))] == [b"x"]
    assert query("nope").code == ResponseCode.QUERY_NOT_FOUND


@on_loop
async def test_replication_answers_offsets_as_fastjson_reads_them(services):
    services.offsets.commit("g", "orders", 3, 17)
    resp = services.make(ReplicationProcessor).handle_all_consumer_offsets(
        Peer().conn, request(RequestCode.GET_ALL_CONSUMER_OFFSET)
    )
    assert orjson.loads(resp.body) == {"offsetTable": {"orders@g": {"3": 17}}}


# -- consumer management ------------------------------------------------------------------------


@on_loop
async def test_lock_batch_grants_queues_to_one_client_at_a_time(services):
    consumer = services.make(ConsumerProcessor)
    body = orjson.dumps(
        {
            "consumerGroup": "g",
            "clientId": "c1",
            "mqSet": [{"topic": "orders", "brokerName": "b", "queueId": 0}],
        }
    )
    granted = consumer.handle_lock(Peer().conn, RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, {}, body))
    assert granted.code == ResponseCode.SUCCESS and len(orjson.loads(granted.body)["lockOKMQSet"]) == 1
    other = body.replace(b'"c1"', b'"c2"')
    refused = consumer.handle_lock(Peer().conn, RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, {}, other))
    assert orjson.loads(refused.body)["lockOKMQSet"] == []


# -- send back and transactions -----------------------------------------------------------------


@on_loop
async def test_send_back_moves_a_message_to_the_retry_topic_then_to_the_dlq(services):
    services.create_topic("orders", queues=1)
    sent = await answer(
        services.make(SendProcessor).handle_send(Peer().conn, wire.send_v2("orders", b"fail"))
    )
    _, _, phys = decode_offset_msg_id(sent.ext_fields["msgId"])
    back = services.make(SendBackProcessor)

    def send_back(max_times: int) -> RemotingCommand:
        return back.handle_send_back(
            Peer().conn,
            request(
                RequestCode.CONSUMER_SEND_MSG_BACK,
                offset=phys,
                group="g",
                delayLevel=0,
                maxReconsumeTimes=max_times,
            ),
        )

    assert send_back(16).code == ResponseCode.SUCCESS
    assert services.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 2) == 1  # level 3 (10 s) first
    assert send_back(0).code == ResponseCode.SUCCESS
    assert services.store.get_max_offset_in_queue("%DLQ%g", 0) == 1


@on_loop
async def test_end_transaction_commits_the_half_message_into_its_topic(services):
    services.create_topic("orders", queues=1)
    send = services.make(SendProcessor)
    tx = services.make(TransactionProcessor)
    cmd = wire.send_v2("orders", b"pay", props={Prop.TRAN_MSG: "true", Prop.PGROUP: "tx-group"})
    cmd.ext_fields["f"] = str(SysFlag.TRANSACTION_PREPARED)
    half = await answer(send.handle_send(Peer().conn, cmd))
    assert half.code == ResponseCode.SUCCESS
    assert services.store.get_max_offset_in_queue("orders", 0) == 0  # invisible until committed
    _, _, phys = decode_offset_msg_id(half.ext_fields["msgId"])
    end = request(
        RequestCode.END_TRANSACTION,
        producerGroup="tx-group",
        tranStateTableOffset=half.ext_fields["queueOffset"],
        commitLogOffset=phys,
        commitOrRollback=SysFlag.TRANSACTION_COMMIT,
        msgId=half.ext_fields["msgId"],
    )
    assert (await answer(tx.handle_end(Peer().conn, end))).code == ResponseCode.SUCCESS
    assert services.store.get_max_offset_in_queue("orders", 0) == 1
    wrong = request(
        RequestCode.END_TRANSACTION, producerGroup="tx-group", tranStateTableOffset=0,
        commitLogOffset=phys + 1, commitOrRollback=SysFlag.TRANSACTION_COMMIT, msgId="x",
    )
    assert (await answer(tx.handle_end(Peer().conn, wrong))).code == ResponseCode.SYSTEM_ERROR
