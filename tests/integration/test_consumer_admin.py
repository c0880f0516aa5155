"""Consumer-group services of a real broker: membership notifications, connection list, orderly
locks, reset offset (222 → 220) and requests relayed to one consumer (307), plus the admin CLI's
``resetOffsetByTime``, ``consumerConnection`` and ``consumerProgress`` against them."""

from __future__ import annotations

import asyncio
import io
import time

import orjson

from pyrocketmq.client.cli import main as cli_main
from pyrocketmq.remoting.body import (
    ConsumerConnection,
    ConsumerData,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    ResetOffsetBody,
    SubscriptionData,
    TopicRouteData,
)
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient

from .procs import start_broker
from .wire import create_topic, pull, send_v2


class FakeConsumer:
    """A client connection that heartbeats as a push consumer and records what the broker sends it."""

    def __init__(self, client_id: str, group: str, topics: tuple[str, ...] = ("T",)) -> None:
        self.client_id, self.group, self.topics = client_id, group, topics
        self.received: list[RemotingCommand] = []
        self.client = RemotingClient()
        for code in (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, RequestCode.RESET_CONSUMER_CLIENT_OFFSET):
            self.client.register(code, self._record)
        self.client.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self._running_info)
        self.client.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self._consume_directly)

    def _record(self, conn, cmd):
        self.received.append(cmd)
        return None

    def _running_info(self, conn, cmd):
        self.received.append(cmd)
        return cmd.response(
            ResponseCode.SUCCESS, body=orjson.dumps({"properties": {"clientId": self.client_id}})
        )

    def _consume_directly(self, conn, cmd):
        self.received.append(cmd)
        [m] = decode_messages(cmd.body)
        return cmd.response(
            ResponseCode.SUCCESS, body=orjson.dumps({"consumeResult": "CR_SUCCESS", "body": m.body.decode()})
        )

    def codes(self) -> list[int]:
        return [c.code for c in self.received]

    async def heartbeat(self, addr: str) -> None:
        data = HeartbeatData(
            client_id=self.client_id,
            consumer_data_set=[
                ConsumerData(
                    group_name=self.group,
                    subscription_data_set=tuple(SubscriptionData.build(t, "*", 1) for t in self.topics),
                )
            ],
        )
        resp = await self.client.invoke(
            addr, RemotingCommand.request(RequestCode.HEART_BEAT, body=data.to_json()), 5
        )
        assert resp.code == ResponseCode.SUCCESS, resp

    async def close(self) -> None:
        await self.client.close()


async def _until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def test_members_are_notified_and_listed(broker):
    async def run():
        a, b = FakeConsumer("10.0.0.1@a", "cg_members"), FakeConsumer("10.0.0.2@b", "cg_members")
        await a.heartbeat(broker.addr)
        assert await _until(lambda: RequestCode.NOTIFY_CONSUMER_IDS_CHANGED in a.codes())
        a.received.clear()
        await a.heartbeat(broker.addr)  # nothing changed: no notification
        await b.heartbeat(broker.addr)
        assert await _until(lambda: a.codes() == [40] and b.codes() == [40])
        notify = a.received[0]
        assert notify.ext_fields["consumerGroup"] == "cg_members" and notify.is_oneway

        admin = RemotingClient()
        resp = await admin.invoke(
            broker.addr,
            RemotingCommand.request(
                RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "cg_members"}
            ),
            5,
        )
        assert resp.code == ResponseCode.SUCCESS, resp
        conn = ConsumerConnection.from_json(resp.body)
        assert sorted(c.client_id for c in conn.connection_set) == ["10.0.0.1@a", "10.0.0.2@b"]
        assert {c.language for c in conn.connection_set} == {"PYTHON"}
        assert all(c.client_addr.startswith("127.0.0.1:") for c in conn.connection_set)
        assert set(conn.subscription_table) == {"T"} and conn.message_model == "CLUSTERING"
        ids = await admin.invoke(
            broker.addr,
            RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg_members"}),
            5,
        )
        assert orjson.loads(ids.body)["consumerIdList"] == ["10.0.0.1@a", "10.0.0.2@b"]

        # a member leaving (connection closed) is a change too
        a.received.clear()
        await b.close()
        assert await _until(lambda: a.codes() == [40])
        resp = await admin.invoke(
            broker.addr,
            RemotingCommand.request(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "nobody"}),
            5,
        )
        assert resp.code == ResponseCode.CONSUMER_NOT_ONLINE

        # GET_CONSUMER_RUNNING_INFO is relayed to the named client and its answer back
        resp = await admin.invoke(
            broker.addr,
            RemotingCommand.request(
                RequestCode.GET_CONSUMER_RUNNING_INFO,
                {"consumerGroup": "cg_members", "clientId": "10.0.0.1@a", "jstackEnable": False},
            ),
            15,
        )
        assert resp.code == ResponseCode.SUCCESS, resp
        assert orjson.loads(resp.body) == {"properties": {"clientId": "10.0.0.1@a"}}
        assert a.received[-1].code == RequestCode.GET_CONSUMER_RUNNING_INFO
        assert a.received[-1].ext_fields["clientId"] == "10.0.0.1@a"
        resp = await admin.invoke(
            broker.addr,
            RemotingCommand.request(
                RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "cg_members", "clientId": "gone"}
            ),
            15,
        )
        assert resp.code == ResponseCode.SYSTEM_ERROR and "not online" in resp.remark

        # CONSUME_MESSAGE_DIRECTLY: the broker attaches the stored message found by its offset id
        sent = await admin.invoke(broker.addr, send_v2("T", b"direct", queue_id=0), 5)
        fields = {"consumerGroup": "cg_members", "clientId": "10.0.0.1@a", "msgId": sent.ext_fields["msgId"]}
        resp = await admin.invoke(
            broker.addr, RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, fields), 15
        )
        assert resp.code == ResponseCode.SUCCESS, resp
        assert orjson.loads(resp.body) == {"consumeResult": "CR_SUCCESS", "body": "direct"}
        assert a.received[-1].ext_fields["brokerName"] == "broker-a"
        await a.close()
        await admin.close()

    asyncio.run(run())


def _lock(group: str, client_id: str, mqs, code=RequestCode.LOCK_BATCH_MQ) -> RemotingCommand:
    body = LockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=list(mqs)).to_json()
    return RemotingCommand.request(code, body=body)


def test_orderly_locks(broker):
    async def run():
        c1, c2 = RemotingClient(), RemotingClient()
        mqs = [MessageQueue("LockTopic", "broker-a", i) for i in range(4)]
        r = await c1.invoke(broker.addr, _lock("cg_lock", "c1", mqs[:3]), 5)
        assert r.code == ResponseCode.SUCCESS
        assert LockBatchResponseBody.from_json(r.body).lock_ok_mq_set == mqs[:3]
        r = await c2.invoke(broker.addr, _lock("cg_lock", "c2", mqs), 5)
        assert LockBatchResponseBody.from_json(r.body).lock_ok_mq_set == mqs[3:]
        r = await c1.invoke(broker.addr, _lock("cg_lock", "c1", mqs[:1], RequestCode.UNLOCK_BATCH_MQ), 5)
        assert r.code == ResponseCode.SUCCESS
        r = await c2.invoke(broker.addr, _lock("cg_lock", "c2", mqs), 5)
        assert LockBatchResponseBody.from_json(r.body).lock_ok_mq_set == [mqs[0], mqs[3]]
        # a oneway unlock (as clients send on shutdown) is honoured too
        c2conn = await c2.connection(broker.addr)
        c2conn.invoke_oneway(_lock("cg_lock", "c2", mqs, RequestCode.UNLOCK_BATCH_MQ))
        await asyncio.sleep(0.2)
        r = await c1.invoke(broker.addr, _lock("cg_lock", "c1", mqs), 5)
        assert LockBatchResponseBody.from_json(r.body).lock_ok_mq_set == mqs
        await c1.close()
        await c2.close()

    asyncio.run(run())


def _reset(topic: str, group: str, ts: int, force: bool) -> RemotingCommand:
    return RemotingCommand.request(
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": topic, "group": group, "timestamp": ts, "isForce": force},
    )


async def _committed(client, addr, group, topic, qid) -> int:
    r = await client.invoke(
        addr,
        RemotingCommand.request(
            RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": qid}
        ),
        5,
    )
    return int(r.ext_fields["offset"])


def test_reset_offset_by_time(broker, namesrv):
    topic, group = "ResetTopic", "cg_reset"

    async def run():
        admin = RemotingClient()
        addr = broker.addr
        assert (await admin.invoke(addr, create_topic(topic, 2), 5)).code == 0
        for body in (b"a0", b"a1", b"a2"):
            for q in (0, 1):
                assert (await admin.invoke(addr, send_v2(topic, body, queue_id=q), 5)).code == 0
        await asyncio.sleep(0.5)
        for body in (b"b0", b"b1"):
            for q in (0, 1):
                assert (await admin.invoke(addr, send_v2(topic, body, queue_id=q), 5)).code == 0
        msgs = decode_messages((await admin.invoke(addr, pull(topic, 0, 0), 5)).body)
        t_b = next(m.store_timestamp for m in msgs if m.body == b"b0")

        # nobody online: 206, nothing changes
        r = await admin.invoke(addr, _reset(topic, group, t_b, True), 5)
        assert r.code == ResponseCode.CONSUMER_NOT_ONLINE

        consumer = FakeConsumer("10.0.0.3@c", group, (topic,))
        await consumer.heartbeat(addr)
        for q in (0, 1):
            upd = {"consumerGroup": group, "topic": topic, "queueId": q, "commitOffset": 5}
            assert (
                await admin.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, upd), 5)
            ).code == 0

        r = await admin.invoke(addr, _reset(topic, group, t_b, False), 5)
        assert r.code == ResponseCode.SUCCESS, r
        want = {MessageQueue(topic, "broker-a", q): 3 for q in (0, 1)}
        assert ResetOffsetBody.from_json(r.body).offset_table == want
        assert await _until(lambda: RequestCode.RESET_CONSUMER_CLIENT_OFFSET in consumer.codes())
        told = next(c for c in consumer.received if c.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET)
        assert told.is_oneway and told.ext_fields["group"] == group and told.ext_fields["topic"] == topic
        assert int(told.ext_fields["timestamp"]) == t_b
        assert ResetOffsetBody.from_json(told.body).offset_table == want
        assert b"{\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":\"ResetTopic\"}:3" in bytes(told.body)
        assert [await _committed(admin, addr, group, topic, q) for q in (0, 1)] == [3, 3]

        # not forced: a target after the committed offset leaves it alone; -1 means the end
        r = await admin.invoke(addr, _reset(topic, group, -1, False), 5)
        assert set(ResetOffsetBody.from_json(r.body).offset_table.values()) == {3}
        r = await admin.invoke(addr, _reset(topic, group, -1, True), 5)
        assert set(ResetOffsetBody.from_json(r.body).offset_table.values()) == {5}

        # the CLI, as mqadmin resetOffsetByTime (in a thread: it runs its own event loop)
        out = io.StringIO()
        args = ["admin", "resetOffsetByTime", "-n", namesrv.addr, "-g", group, "-t", topic, "-s", str(t_b)]
        assert await _until_route(namesrv.addr, topic)
        code = await asyncio.get_running_loop().run_in_executor(
            None, lambda: cli_main(args, stdout=out, stderr=out)
        )
        assert code == 0, out.getvalue()
        lines = [line.split() for line in out.getvalue().splitlines()[2:]]
        assert lines == [["broker-a", "0", "3"], ["broker-a", "1", "3"]]
        assert [await _committed(admin, addr, group, topic, q) for q in (0, 1)] == [3, 3]

        out = io.StringIO()
        args = ["admin", "consumerConnection", "-n", namesrv.addr, "-g", group]
        code = await asyncio.get_running_loop().run_in_executor(
            None, lambda: cli_main(args, stdout=out, stderr=out)
        )
        assert code == 0, out.getvalue()
        assert "10.0.0.3@c" in out.getvalue() and "PYTHON" in out.getvalue() and topic in out.getvalue()

        out = io.StringIO()
        args = ["admin", "consumerProgress", "-n", namesrv.addr, "-g", group, "-t", topic]
        code = await asyncio.get_running_loop().run_in_executor(
            None, lambda: cli_main(args, stdout=out, stderr=out)
        )
        assert code == 0, out.getvalue()
        rows = [line.split() for line in out.getvalue().splitlines() if line.startswith(topic)]
        assert [(r[2], r[3], r[4], r[5]) for r in rows] == [("0", "5", "3", "2"), ("1", "5", "3", "2")]
        await consumer.close()
        await admin.close()

    asyncio.run(run())


def test_reset_offset_cli_with_no_consumer_online_stores_the_offsets(broker, namesrv):
    topic, group = "ResetOffline", "cg_offline"

    async def run():
        admin = RemotingClient()
        assert (await admin.invoke(broker.addr, create_topic(topic, 1), 5)).code == 0
        for body in (b"x", b"y", b"z"):
            assert (await admin.invoke(broker.addr, send_v2(topic, body), 5)).code == 0
        assert await _until_route(namesrv.addr, topic)
        out = io.StringIO()
        args = ["admin", "resetOffsetByTime", "-n", namesrv.addr, "-g", group, "-t", topic, "-s", "now"]
        code = await asyncio.get_running_loop().run_in_executor(
            None, lambda: cli_main(args, stdout=out, stderr=out)
        )
        assert code == 0, out.getvalue()
        assert (
            await _committed(admin, broker.addr, group, topic, 0) == 2
        )  # the last message stored before "now"
        await admin.close()

    asyncio.run(run())


async def _until_route(namesrv_addr: str, topic: str, brokers: int = 1) -> bool:
    """Whether the name server routes ``topic`` to at least ``brokers`` brokers within 15 s."""
    client = RemotingClient()
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            r = await client.invoke(
                namesrv_addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), 5
            )
            ok = r.code == ResponseCode.SUCCESS
            if ok and len(TopicRouteData.from_json(r.payload).broker_datas) >= brokers:
                return True
            await asyncio.sleep(0.1)
        return False
    finally:
        await client.close()


def test_a_silent_consumer_expires_and_the_others_are_told(tmp_path, namesrv):
    proc = start_broker(tmp_path, namesrv.addr, name="broker-exp", channelExpiredTimeout=1500)

    async def run():
        live, silent = (
            FakeConsumer("10.0.0.8@live", "cg_expiry"),
            FakeConsumer("10.0.0.9@silent", "cg_expiry"),
        )
        await silent.heartbeat(proc.addr)
        silent_conn = await silent.client.connection(proc.addr)
        await live.heartbeat(proc.addr)
        admin = RemotingClient()

        async def members() -> list[str]:
            r = await admin.invoke(
                proc.addr,
                RemotingCommand.request(
                    RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg_expiry"}
                ),
                5,
            )
            return orjson.loads(r.body)["consumerIdList"] if r.code == ResponseCode.SUCCESS else []

        assert await members() == ["10.0.0.8@live", "10.0.0.9@silent"]
        live.received.clear()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and await members() != ["10.0.0.8@live"]:
            await live.heartbeat(proc.addr)  # the live one keeps heartbeating, the other stays silent
            await asyncio.sleep(0.3)
        assert await members() == ["10.0.0.8@live"]
        assert await _until(lambda: RequestCode.NOTIFY_CONSUMER_IDS_CHANGED in live.codes())
        assert await _until(lambda: silent_conn.closed), "the broker did not close the expired channel"
        await live.close()
        await silent.close()
        await admin.close()

    try:
        asyncio.run(run())
    finally:
        proc.stop()


def test_consumer_progress_of_a_topic_covers_a_broker_the_group_never_heartbeat(tmp_path, broker, namesrv):
    """The group heartbeat broker-a only (so only broker-a made its retry topic) and committed on both:
    ``consumerProgress -t`` lists the topic's queues on both brokers, as the topic's route names them."""
    topic, group = "ProgressBoth", "cg_progress_both"
    other = start_broker(tmp_path, namesrv.addr, name="broker-b")

    async def run():
        admin = RemotingClient()
        consumer = FakeConsumer("10.0.0.4@c", group, (topic,))
        try:
            for addr in (broker.addr, other.addr):
                assert (await admin.invoke(addr, create_topic(topic, 1), 5)).code == 0
                upd = {"consumerGroup": group, "topic": topic, "queueId": 0, "commitOffset": 0}
                assert (
                    await admin.invoke(
                        addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, upd), 5
                    )
                ).code == 0
            await consumer.heartbeat(broker.addr)
            assert await _until_route(namesrv.addr, "%RETRY%" + group)
            assert await _until_route(namesrv.addr, topic, brokers=2)  # both brokers registered it
            out = io.StringIO()
            args = ["admin", "consumerProgress", "-n", namesrv.addr, "-g", group, "-t", topic]
            code = await asyncio.get_running_loop().run_in_executor(
                None, lambda: cli_main(args, stdout=out, stderr=out)
            )
            assert code == 0, out.getvalue()
            rows = [line.split()[:3] for line in out.getvalue().splitlines() if line.startswith(topic)]
            assert rows == [[topic, "broker-a", "0"], [topic, "broker-b", "0"]], out.getvalue()
        finally:
            await consumer.close()
            await admin.close()
            other.stop()

    asyncio.run(run())
