"""REGISTER_BROKER from a careless or hostile peer, handlers called directly (no sockets): names
and addresses are checked for form and length, a compressed body is inflated only up to its limit,
and nothing a peer sends makes the name server log without bound."""

from __future__ import annotations

import logging
import zlib

import pytest

from pyrocketmq.namesrv.kv_config import KVConfigManager
from pyrocketmq.namesrv.processor import NamesrvProcessor
from pyrocketmq.namesrv.route_info import RouteInfoManager
from pyrocketmq.remoting.body import MAX_INFLATED_REGISTER_BODY, RegisterBrokerBody, TopicConfig
from pyrocketmq.remoting.code import RequestCode, ResponseCode

from .test_processor import FakeConn, call, reg_body, reg_ext, register


@pytest.fixture
def ns():
    return NamesrvProcessor(RouteInfoManager(), KVConfigManager(), clock=lambda: 1_000)


@pytest.mark.parametrize(("fields", "words"), [
    ({"brokerName": ""}, "brokerName is empty"),
    ({"brokerName": "broker-a\n"}, "brokerName 'broker-a\\n' contains characters"),
    ({"brokerName": "b" * 128}, "brokerName is longer than 127"),
    ({"brokerName": "a b"}, "contains characters"),
    ({"clusterName": "Default Cluster"}, "clusterName 'Default Cluster' contains characters"),
    ({"clusterName": "c" * 1000}, "clusterName is longer than 127"),
    ({"brokerAddr": "10.0.0.1"}, "brokerAddr: address '10.0.0.1' has no port"),
    ({"brokerAddr": "10.0.0.1:0"}, "brokerAddr: port 0 is outside 1..65535"),
    ({"brokerAddr": "10.0.0.1:70000"}, "brokerAddr: port 70000 is outside 1..65535"),
    ({"brokerAddr": "bad host:10911"}, "brokerAddr: host 'bad host' is neither"),
    ({"brokerAddr": "x" * 5000 + ":1"}, "brokerAddr: the address is longer than"),
    ({"haServerAddr": "10.0.0.1:abc"}, "haServerAddr: port 'abc' is not a number"),
])
def test_names_and_addresses_are_checked(ns, fields, words):
    body = reg_body(TopicConfig("T", 4, 4, 6))
    resp = call(ns, RequestCode.REGISTER_BROKER, reg_ext(body=body, **fields), body)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark.startswith("register refused: ") and words in resp.remark, resp.remark
    assert len(resp.remark) < 300
    assert ns.routes.broker_live_table == {} and ns.routes.all_topics() == []


def test_an_ipv6_or_dns_address_registers(ns):
    for i, addr in enumerate(["fe80::1:10911", "broker-a-0.broker-a.ns.svc:10911"]):
        body = reg_body(TopicConfig("T", 4, 4, 6))
        resp = call(
            ns, RequestCode.REGISTER_BROKER, reg_ext(addr, f"broker-{i}", body=body, haServerAddr=""), body
        )
        assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert len(ns.routes.broker_live_table) == 2


def test_a_topic_with_a_trailing_newline_is_not_routed(ns):
    assert register(ns, TopicConfig("T", 4, 4, 6), TopicConfig("T\n", 4, 4, 6)).code == ResponseCode.SUCCESS
    assert ns.routes.all_topics() == ["T"]


def _bomb(size: int) -> bytes:
    c = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    return b"".join(c.compress(chunk) for _ in range(size >> 20)) + c.flush()


def test_a_decompression_bomb_is_refused_and_the_name_server_serves_on(ns):
    bomb = _bomb(MAX_INFLATED_REGISTER_BODY + (1 << 20))
    resp = call(ns, RequestCode.REGISTER_BROKER, reg_ext(body=bomb, compressed=True), bomb)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert f"inflates to more than {MAX_INFLATED_REGISTER_BODY} bytes" in resp.remark, resp.remark
    assert ns.routes.broker_live_table == {}
    good = RegisterBrokerBody.decode(reg_body(TopicConfig("T", 4, 4, 6))).to_compressed()
    assert (
        call(ns, RequestCode.REGISTER_BROKER, reg_ext(body=good, compressed=True), good).code
        == ResponseCode.SUCCESS
    )
    assert call(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).code == ResponseCode.SUCCESS


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "pyrocketmq.namesrv"]


def test_refusals_are_logged_rate_limited(ns, caplog):
    caplog.set_level(logging.INFO, "pyrocketmq.namesrv")
    for i in range(500):
        body = reg_body(TopicConfig("T", 4, 4, 6))
        call(ns, RequestCode.REGISTER_BROKER, reg_ext(body=body, brokerAddr=f"nope{i}"), body)
        call(ns, RequestCode.REGISTER_BROKER, reg_ext(body=body, bodyCrc32=1), body)  # crc mismatch
        call(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {})  # a header without its field
    assert 0 < len(_lines(caplog)) <= 11


def test_registrations_and_departures_of_many_brokers_are_logged_rate_limited(ns, caplog):
    caplog.set_level(logging.INFO, "pyrocketmq.namesrv")
    conns = [FakeConn() for _ in range(1000)]
    for i, conn in enumerate(conns):
        topics = [TopicConfig(f"T{i}_{k}", 4, 4, 6) for k in range(5)]
        assert (
            register(ns, *topics, addr=f"10.0.{i // 250}.{i % 250}:10911", name=f"b{i}", conn=conn).code == 0
        )
    for conn in conns:
        ns.routes.on_channel_closed(conn)
    ns.kv.put("ORDER_TOPIC_CONFIG", "T\n" * 1000, "x" * 100_000)
    lines = _lines(caplog)
    assert len(lines) <= 51, len(lines)
    assert all(len(line) < 2_000 for line in lines)
