"""The client instance's pure parts: identity, heartbeat body, broker → client requests."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from pyrocketmq.client.broker_requests import parse_reset_offset_body
from pyrocketmq.client.errors import MQBrokerError, MQClientError
from pyrocketmq.client.instance import ClientInstance
from pyrocketmq.client.pull_consumer import PullConsumer
from pyrocketmq.client.request_errors import _reason, check_response
from pyrocketmq.client.settings import ClientSettings, PullConsumerSettings, split_namesrv_addr
from pyrocketmq.remoting.body import HeartbeatData, MessageQueue, ResetOffsetBody, TopicRouteData
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.transport import RemotingConnectError


def inst(**kw) -> ClientInstance:
    return ClientInstance(ClientSettings(namesrv_addr="ns1:9876;ns2:9876", client_ip="10.0.0.5", **kw))


def test_client_id_is_ip_at_pid_hash_nanotime() -> None:
    i = inst()
    ip, _, name = i.client_id.partition("@")
    pid, _, nanos = name.partition("#")
    assert ip == "10.0.0.5" and pid.isdigit() and nanos.isdigit()
    assert inst(instance_name="app1").client_id == "10.0.0.5@app1"


def test_name_server_list_parsing() -> None:
    assert split_namesrv_addr(" a:1 ; b:2,c:3;") == ["a:1", "b:2", "c:3"]
    with pytest.raises(MQClientError, match="name server"):
        ClientInstance(ClientSettings(namesrv_addr=" ; "))


class FakeConsumer:
    group = "cg"

    def __init__(self) -> None:
        self.events: list = []

    def consumer_data(self):
        return PullConsumer("cg", settings=PullConsumerSettings()).consumer_data()

    def topics(self):
        return {"T"}

    def on_consumer_ids_changed(self):
        self.events.append("changed")

    def on_reset_offset(self, topic, offsets):
        self.events.append((topic, offsets))


def test_heartbeat_names_every_group() -> None:
    i = inst()
    i.producers["pg"] = object()
    i.consumers["cg"] = FakeConsumer()
    hb = HeartbeatData.from_json(i.build_heartbeat().to_json())
    assert hb.client_id == i.client_id
    assert [p.group_name for p in hb.producer_data_set] == ["pg"]
    assert [c.group_name for c in hb.consumer_data_set] == ["cg"]
    assert hb.consumer_data_set[0].consume_type == "CONSUME_ACTIVELY"


def test_group_registered_twice_is_refused() -> None:
    i = inst()
    i.register_producer("pg", object())
    with pytest.raises(MQClientError, match="already used"):
        i.register_producer("pg", object())


def test_running_info_request() -> None:
    i = inst()
    req = RemotingCommand.request(307, {"consumerGroup": "nope", "clientId": i.client_id})
    resp = i.broker_requests.running_info(None, req)  # type: ignore[arg-type]
    assert resp.code == 1 and "not exist" in (resp.remark or "")
    c = _started_consumer()
    i.consumers["cg"] = c
    resp = i.broker_requests.running_info(None, RemotingCommand.request(307, {"consumerGroup": "cg"}))  # type: ignore[arg-type]
    doc = orjson.loads(resp.body)
    assert resp.code == 0 and doc["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_ACTIVELY"
    assert "subscriptionSet" in doc and "mqTable" in doc


def _started_consumer() -> PullConsumer:
    c = PullConsumer("cg")
    c._instance = object()  # type: ignore[assignment]
    return c


def test_ids_changed_and_reset_go_to_the_group_hooks() -> None:
    i = inst()
    fc = FakeConsumer()
    i.consumers["cg"] = fc

    class Conn:
        remote_addr = "b:10911"

    assert (
        i.broker_requests.ids_changed(
            Conn(), RemotingCommand.request(40, {"consumerGroup": "cg"}, oneway=True)
        )
        is None
    )  # type: ignore[arg-type]
    mq = MessageQueue("T", "b", 0)
    body = ResetOffsetBody(offset_table={mq: 5}).to_json()
    i.broker_requests.reset_offset(
        Conn(), RemotingCommand.request(220, {"topic": "T", "group": "cg", "timestamp": 0}, body)
    )  # type: ignore[arg-type]
    assert fc.events == ["changed", ("T", {mq: 5})]


def test_reset_body_in_fastjson_form() -> None:
    raw = b'{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:9}}'
    assert parse_reset_offset_body(raw) == {MessageQueue("T", "b", 1): 9}


def test_check_response() -> None:
    ok = RemotingCommand.request(1).response(0)
    assert check_response(ok, "a") is ok
    with pytest.raises(MQBrokerError) as ei:
        check_response(RemotingCommand.request(1).response(26, "no group"), "a:1")
    assert ei.value.code == 26


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "cannot connect to 127.0.0.1:9876: [Errno 111] Connect call failed ('127.0.0.1', 9876)",
            "connection refused",
        ),
        ("cannot connect to h:1: [Errno -2] Name or service not known", "unknown host"),
        ("cannot connect to h:1: TimeoutError", "connection timed out"),
    ],
)
def test_reason_is_short(text: str, reason: str) -> None:
    assert _reason(RemotingConnectError(text)) == reason


def test_route_storage_updates_addresses_and_publish_info() -> None:
    i = inst()
    i.producers["pg"] = object()
    route = TopicRouteData.from_json(
        b'{"brokerDatas":[{"brokerAddrs":{0:"m:1","1":"s:1"},"brokerName":"b","cluster":"C"}],'
        b'"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":2,"writeQueueNums":2,"topicSysFlag":0}]}'
    )
    i._store_route("T", route)
    assert i.master_addr("b") == "m:1"
    assert i.find_broker_addr("b", 1) == ("s:1", 1)
    assert len(i.publish_infos["T"].queues) == 2
    assert sorted(i.all_broker_addrs()) == ["m:1", "s:1"] and i.all_broker_addrs(masters_only=True) == ["m:1"]


def test_broker_addr_of_refreshes_the_route_once_when_the_broker_is_unknown() -> None:
    i = inst()
    route = TopicRouteData.from_json(
        b'{"brokerDatas":[{"brokerAddrs":{"1":"s:1"},"brokerName":"b","cluster":"C"}],'
        b'"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":2,"writeQueueNums":2,"topicSysFlag":0}]}'
    )
    refreshed: list[str] = []

    async def update_route(topic: str, **_: object) -> bool:
        refreshed.append(topic)
        if topic == "T":
            i._store_route(topic, route)
        return True

    i.update_route = update_route  # type: ignore[method-assign]
    assert asyncio.run(i.broker_addr_of("T", "b")) == ("s:1", 1)  # no master: the slave of that name
    assert asyncio.run(i.broker_addr_of("T", "b", 1)) == ("s:1", 1)
    assert refreshed == ["T"]
    with pytest.raises(MQClientError, match="'x' is not in the route of topic 'U'"):
        asyncio.run(i.broker_addr_of("U", "x"))
    assert refreshed == ["T", "U"]


def test_acquire_shares_per_loop_and_name_servers() -> None:
    async def go():
        s = ClientSettings(namesrv_addr="ns:1", client_ip="10.0.0.5")
        a = ClientInstance.acquire(s)
        b = ClientInstance.acquire(ClientSettings(namesrv_addr="ns:1", client_ip="10.0.0.5"))
        c = ClientInstance.acquire(ClientSettings(namesrv_addr="ns:2", client_ip="10.0.0.5"))
        same = a is b and a is not c
        await a.release()
        still_open = not a._closed
        await b.release()
        await c.release()
        return same, still_open, a._closed

    assert asyncio.run(go()) == (True, True, True)


def test_a_topic_a_broker_failed_for_is_refreshed_every_second_for_a_while(monkeypatch) -> None:
    from pyrocketmq.client import instance as instance_module

    async def go() -> list[str]:
        i = inst()
        refreshed: list[str] = []

        async def update_route(topic: str) -> None:
            refreshed.append(topic)

        monkeypatch.setattr(i, "update_route", update_route)
        now = [1000.0]
        monkeypatch.setattr(instance_module.time, "monotonic", lambda: now[0])
        await i.refresh_after_failure("Orders")  # once now, then every second for SETTLE_SECONDS
        await i.refresh_unsettled()
        now[0] += instance_module.SETTLE_SECONDS + 1
        await i.refresh_unsettled()  # settled: not again, and forgotten
        await i.refresh_unsettled()
        return refreshed

    assert asyncio.run(go()) == ["Orders", "Orders"]
