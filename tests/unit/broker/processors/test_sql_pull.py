"""SQL92 subscriptions in the broker: pulls that carry the selector (lite pull) or use the one a
heartbeat registered (push), CHECK_CLIENT_CONFIG, and the refusals when the broker does not filter
by SQL or the selector does not parse. (The selections themselves are held up against Apache's
broker in tests/conformance/test_sql_filter.py.)"""

from __future__ import annotations

from pyrocketmq.broker.processors.client import ClientProcessor
from pyrocketmq.broker.processors.pull import PullProcessor
from pyrocketmq.broker.processors.send import SendProcessor
from pyrocketmq.remoting.body import CheckClientRequestBody, ConsumerData, HeartbeatData, SubscriptionData
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import decode_messages
from tests.integration import wire

from .conftest import Peer, build
from .test_processors import answer, body_of, on_loop


def sql_services(tmp_path, enabled: bool = True):
    return build(str(tmp_path), **({"enablePropertyFilter": "true"} if enabled else {}))


async def fill(svc, n: int = 10) -> None:
    svc.create_topic("orders", queues=1)
    send = svc.make(SendProcessor)
    for i in range(n):
        props = {"price": str(i)} if i % 2 else {"price": str(i), "region": "eu"}
        await answer(
            send.handle_send(
                Peer().conn,
                wire.send_v2("orders", f"m{i}".encode(), tags="t" if i < 5 else None, props=props),
            )
        )


async def bodies(pull: PullProcessor, cmd: RemotingCommand) -> tuple[int, list[bytes], str | None]:
    resp = await answer(pull.handle_pull(Peer().conn, cmd))
    got = [m.body for m in decode_messages(body_of(resp))] if resp.code == ResponseCode.SUCCESS else []
    return resp.code, got, resp.remark


@on_loop
async def test_a_pull_with_a_sql_selector_gets_only_what_it_selects(tmp_path):
    svc = sql_services(tmp_path)
    try:
        await fill(svc)
        pull = svc.make(PullProcessor)
        code, got, _ = await bodies(
            pull, wire.pull("orders", 0, 0, sub="price >= 4 AND region = 'eu'", expression_type="SQL92")
        )
        assert code == ResponseCode.SUCCESS and got == [b"m4", b"m6", b"m8"]
        code, got, _ = await bodies(
            pull, wire.pull("orders", 0, 0, sub="TAGS = 't' AND price > 2", expression_type="SQL92")
        )
        assert got == [b"m3", b"m4"]
        resp = await answer(
            pull.handle_pull(
                Peer().conn, wire.pull("orders", 0, 0, sub="price > 100", expression_type="SQL92")
            )
        )
        assert resp.code == ResponseCode.PULL_RETRY_IMMEDIATELY and resp.ext_fields["nextBeginOffset"] == "10"
        code, _, remark = await bodies(
            pull, wire.pull("orders", 0, 0, sub="price >", expression_type="SQL92")
        )
        assert code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and "price >" in remark
        code, _, remark = await bodies(pull, wire.pull("orders", 0, 0, sub="x", expression_type="CLASS"))
        assert code == ResponseCode.SYSTEM_ERROR and remark.endswith("filter message by CLASS")
    finally:
        svc.store.shutdown()


def sql_heartbeat(group: str, topic: str, selector: str) -> RemotingCommand:
    data = HeartbeatData(client_id="c1", consumer_data_set=[ConsumerData(
        group_name=group, subscription_data_set=(SubscriptionData.build(topic, selector, 7, "SQL92"),))])
    return RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.to_json())


def push_pull(group: str, offset: int = 0) -> RemotingCommand:
    cmd = wire.pull("orders", 0, offset, group=group)
    cmd.ext_fields["sysFlag"] = "0"  # no subscription in the pull: the heartbeat's is used
    cmd.ext_fields["subVersion"] = "7"
    return cmd


@on_loop
async def test_a_push_consumers_registered_selector_filters_its_pulls(tmp_path):
    svc = sql_services(tmp_path)
    try:
        await fill(svc)
        clients, pull = svc.make(ClientProcessor, property_filter=True), svc.make(PullProcessor)
        peer = Peer()
        assert (
            clients.handle_heartbeat(
                peer.conn, sql_heartbeat("g1", "orders", "region IS NULL AND price < 6")
            ).code
            == 0
        )
        code, got, _ = await bodies(pull, push_pull("g1"))
        assert code == ResponseCode.SUCCESS and got == [b"m1", b"m3", b"m5"]
        assert (
            clients.handle_heartbeat(peer.conn, sql_heartbeat("g2", "orders", "region IS")).code == 0
        )  # as Apache
        code, _, remark = await bodies(pull, push_pull("g2"))
        assert code == ResponseCode.FILTER_DATA_NOT_EXIST and "expression may be wrong" in remark
    finally:
        svc.store.shutdown()


def check(selector: str | None, expression_type: str = "SQL92") -> RemotingCommand:
    sub = None if selector is None else SubscriptionData.build("orders", selector, 1, expression_type)
    return RemotingCommand.request(
        RequestCode.CHECK_CLIENT_CONFIG,
        {},
        CheckClientRequestBody(client_id="c1", group="g", subscription_data=sub).to_json(),
    )


@on_loop
async def test_check_client_config_answers_as_apache(tmp_path):
    svc = sql_services(tmp_path)
    try:
        on, off = svc.make(ClientProcessor, property_filter=True), svc.make(ClientProcessor)
        conn = Peer().conn
        assert on.handle_check_client_config(conn, check("a > 1")).code == ResponseCode.SUCCESS
        assert on.handle_check_client_config(conn, check("TagA", "TAG")).code == ResponseCode.SUCCESS
        assert on.handle_check_client_config(conn, check(None)).code == ResponseCode.SUCCESS
        bad = on.handle_check_client_config(conn, check("a >"))
        assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and "a >" in bad.remark
        refused = off.handle_check_client_config(conn, check("a > 1"))
        assert (refused.code, refused.remark) == (
            ResponseCode.SYSTEM_ERROR,
            "The broker does not support consumer to filter message by SQL92",
        )
        assert off.handle_check_client_config(conn, check("TagA", "TAG")).code == ResponseCode.SUCCESS
    finally:
        svc.store.shutdown()


@on_loop
async def test_a_broker_without_property_filter_refuses_sql_pulls(tmp_path):
    svc = sql_services(tmp_path, enabled=False)
    try:
        await fill(svc, 2)
        code, _, remark = await bodies(
            svc.make(PullProcessor), wire.pull("orders", 0, 0, sub="a > 1", expression_type="SQL92")
        )
        assert (code, remark) == (
            ResponseCode.SYSTEM_ERROR,
            "The broker does not support consumer to filter message by SQL92",
        )
    finally:
        svc.store.shutdown()
