"""Name-server request handlers, called directly (no sockets): answers, codes, remarks, bodies."""

from __future__ import annotations

import zlib

import orjson
import pytest

from pyrocketmq.namesrv.kv_config import KVConfigManager
from pyrocketmq.namesrv.processor import NamesrvProcessor
from pyrocketmq.namesrv.route_info import RouteInfoManager
from pyrocketmq.remoting.body import (
    ClusterInfo,
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
)
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand


class FakeConn:
    remote_addr = "127.0.0.1:55555"


@pytest.fixture
def ns():
    now = [1_000]
    p = NamesrvProcessor(RouteInfoManager(), KVConfigManager(), clock=lambda: now[0])
    p.now = now  # type: ignore[attr-defined]
    return p


def call(p: NamesrvProcessor, code: int, ext: dict | None = None, body: bytes | None = None, conn=None):
    cmd = RemotingCommand.request(code, ext or {}, body)
    resp = p.handlers()[int(code)](conn or FakeConn(), cmd)
    assert resp is not None and resp.is_response
    return resp


def reg_body(*topics: TopicConfig, counter: int = 1) -> bytes:
    w = TopicConfigSerializeWrapper({t.topic_name: t for t in topics}, DataVersion(1, counter))
    return RegisterBrokerBody(w, []).to_json()


def reg_ext(addr="10.0.0.1:10911", name="broker-a", bid=0, body: bytes | None = None, **kw) -> dict:
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": "DefaultCluster",
           "haServerAddr": "10.0.0.1:10912", "brokerId": bid, "compressed": False}  # fmt: skip
    if body is not None:
        ext["bodyCrc32"] = zlib.crc32(body) & 0x7FFFFFFF
    ext.update(kw)
    return ext


def register(p, *topics, addr="10.0.0.1:10911", name="broker-a", bid=0, conn=None):
    body = reg_body(*topics)
    return call(p, RequestCode.REGISTER_BROKER, reg_ext(addr, name, bid, body), body, conn)


def test_register_then_route(ns):
    resp = register(ns, TopicConfig("T", 4, 4))
    assert resp.code == ResponseCode.SUCCESS
    assert resp.ext_fields == {} and resp.body is None  # master: no masterAddr; no order config
    route_resp = call(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert route_resp.code == ResponseCode.SUCCESS
    route = TopicRouteData.from_json(route_resp.body)
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911"}
    assert "orderTopicConf" not in orjson.loads(route_resp.body)


def test_slave_register_answers_master_and_ha(ns):
    register(ns, TopicConfig("T"))
    resp = register(ns, addr="10.0.0.2:10911", bid=1)
    assert resp.ext_fields == {"masterAddr": "10.0.0.1:10911", "haServerAddr": "10.0.0.1:10912"}


def test_register_crc_mismatch_and_unchecked(ns):
    body = reg_body(TopicConfig("T"))
    bad = call(ns, RequestCode.REGISTER_BROKER, reg_ext(bodyCrc32=12345), body)
    assert (bad.code, bad.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    ok = call(ns, RequestCode.REGISTER_BROKER, reg_ext(bodyCrc32=0), body)
    assert ok.code == ResponseCode.SUCCESS


def test_register_compressed_body(ns):
    body = RegisterBrokerBody(
        TopicConfigSerializeWrapper({"Z": TopicConfig("Z", 2, 2)}, DataVersion(3, 3))
    ).to_compressed()
    resp = call(ns, RequestCode.REGISTER_BROKER, reg_ext(body=body, compressed=True), body)
    assert resp.code == ResponseCode.SUCCESS
    assert ns.routes.pick_route("Z").queue_datas[0].write_queue_nums == 2


def test_register_bad_header_and_body(ns):
    resp = call(ns, RequestCode.REGISTER_BROKER, {"brokerName": "b"})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "'brokerAddr' is missing" in resp.remark
    resp = call(ns, RequestCode.REGISTER_BROKER, reg_ext(), b"{not json")
    assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark.startswith(
        "Failed to decode RegisterBrokerBody"
    )


def test_register_without_body(ns):
    assert call(ns, RequestCode.REGISTER_BROKER, reg_ext()).code == ResponseCode.SUCCESS
    assert ns.routes.cluster_info().cluster_addr_table == {"DefaultCluster": ["broker-a"]}


def test_route_not_found(ns):
    resp = call(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"})
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark == "No topic route info in name server for the topic: Nope"
    assert resp.body is None


def test_order_topic_conf_in_route_and_register_answer(ns):
    register(ns, TopicConfig("T"))
    call(
        ns, RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"}
    )
    route = TopicRouteData.from_json(call(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).body)
    assert route.order_topic_conf == "broker-a:4"
    resp = register(ns, TopicConfig("T"))
    assert KVTable.from_json(resp.body).table == {"T": "broker-a:4"}


def test_unregister(ns):
    register(ns, TopicConfig("T"))
    ext = {
        "brokerName": "broker-a",
        "brokerAddr": "10.0.0.1:10911",
        "clusterName": "DefaultCluster",
        "brokerId": 0,
    }
    assert call(ns, RequestCode.UNREGISTER_BROKER, ext).code == ResponseCode.SUCCESS
    assert call(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).code == ResponseCode.TOPIC_NOT_EXIST


def test_cluster_info_topic_lists_and_delete(ns):
    register(ns, TopicConfig("T"), TopicConfig("U"))
    info = ClusterInfo.from_json(call(ns, RequestCode.GET_BROKER_CLUSTER_INFO).body)
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    assert TopicList.from_json(call(ns, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body).topic_list == [
        "T",
        "U",
    ]
    by_cluster = call(ns, RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"})
    assert TopicList.from_json(by_cluster.body).topic_list == ["T", "U"]
    assert call(ns, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T"}).code == ResponseCode.SUCCESS
    assert TopicList.from_json(call(ns, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body).topic_list == [
        "U"
    ]
    system = TopicList.from_json(call(ns, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS).body)
    assert system.topic_list == ["DefaultCluster", "broker-a"] and system.broker_addr == "10.0.0.1:10911"


def test_kv_config_handlers(ns):
    ext = {"namespace": "ns", "key": "k"}
    miss = call(ns, RequestCode.GET_KV_CONFIG, ext)
    assert (miss.code, miss.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: ns Key: k")
    assert call(ns, RequestCode.PUT_KV_CONFIG, {**ext, "value": "v"}).code == ResponseCode.SUCCESS
    hit = call(ns, RequestCode.GET_KV_CONFIG, ext)
    assert (hit.code, hit.ext_fields) == (ResponseCode.SUCCESS, {"value": "v"})
    listing = call(ns, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"})
    assert KVTable.from_json(listing.body).table == {"k": "v"}
    assert call(ns, RequestCode.DELETE_KV_CONFIG, ext).code == ResponseCode.SUCCESS
    empty = call(ns, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"})
    assert (empty.code, empty.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: ns")
    assert call(ns, RequestCode.PUT_KV_CONFIG, ext).code == ResponseCode.SYSTEM_ERROR  # no value


def test_query_data_version(ns):
    ext = {
        "brokerName": "broker-a",
        "brokerAddr": "10.0.0.1:10911",
        "clusterName": "DefaultCluster",
        "brokerId": 0,
    }
    unknown = call(ns, RequestCode.QUERY_DATA_VERSION, ext, DataVersion(1, 1).to_json())
    assert unknown.ext_fields == {"changed": "true"} and unknown.body is None
    register(ns, TopicConfig("T"))
    same = call(ns, RequestCode.QUERY_DATA_VERSION, ext, DataVersion(1, 1).to_json())
    assert same.ext_fields == {"changed": "false"} and DataVersion.from_json(same.body) == DataVersion(1, 1)


def test_wipe_write_perm(ns):
    register(ns, TopicConfig("T"))
    resp = call(ns, RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert resp.ext_fields == {"wipeTopicCount": "1"}
    assert ns.routes.pick_route("T").queue_datas[0].perm == 4


def test_every_handler_answers_a_bad_header_with_system_error(ns):
    for code, handler in ns.handlers().items():
        resp = handler(FakeConn(), RemotingCommand.request(code, {}))
        assert resp is not None, code
        assert resp.code in (ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR), code


def test_register_routes_valid_topics_and_skips_invalid_ones(ns, caplog):
    good = TopicConfig("T", 4, 4, 6)
    bad = [TopicConfig("../x", 4, 4, 6), TopicConfig("P", 4, 4, 2**40), TopicConfig("Q", 2**31, 4, 6)]
    resp = register(ns, good, *bad)
    assert resp.code == ResponseCode.SUCCESS  # the broker stays registered: its valid topics are routed
    assert call(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).code == ResponseCode.SUCCESS
    for topic in ("../x", "P", "Q"):
        assert (
            call(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).code
            == ResponseCode.TOPIC_NOT_EXIST
        )
    assert sum("not routed" in r.getMessage() for r in caplog.records) == 3


def test_register_refuses_brokerid_out_of_range(ns):
    for bid, words in ((-1, "negative"), (2**63, "out of range for a Long")):
        body = reg_body(TopicConfig("T", 4, 4, 6))
        resp = call(ns, RequestCode.REGISTER_BROKER, reg_ext(bid=bid, body=body), body)
        assert resp.code == ResponseCode.SYSTEM_ERROR and words in resp.remark
    assert call(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).code == ResponseCode.TOPIC_NOT_EXIST
