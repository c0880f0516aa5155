"""RouteInfoManager: registration rules, departures, route picking (pure state, no sockets)."""

from __future__ import annotations

import pytest

from pyrocketmq.namesrv.route_info import RegisterBrokerResult, RouteInfoManager
from pyrocketmq.remoting.body import (
    BrokerData,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicConfigSerializeWrapper,
)

M_A, S_A, M_B = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"


def wrapper(*topics: TopicConfig, counter: int = 1, ts: int = 1000) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper({t.topic_name: t for t in topics}, DataVersion(ts, counter))


def register(
    r: RouteInfoManager,
    addr: str,
    name: str = "broker-a",
    bid: int = 0,
    *topics: TopicConfig,
    cluster: str = "DefaultCluster",
    counter: int = 1,
    channel: object = None,
    now: int = 0,
    filters: list[str] | None = None,
) -> RegisterBrokerResult:
    ha = addr.replace("10911", "10912")
    chan = channel if channel is not None else f"chan-{addr}"
    return r.register_broker(
        cluster, addr, name, bid, ha, wrapper(*topics, counter=counter), filters, chan, now
    )


T4 = TopicConfig("T", 4, 4, 6)


def test_master_registration_creates_route():
    r = RouteInfoManager()
    assert register(r, M_A, "broker-a", 0, T4) == RegisterBrokerResult()
    route = r.pick_route("T")
    assert route is not None
    assert route.queue_datas == [QueueData("broker-a", 4, 4, 6, 0)]
    assert route.broker_datas == [BrokerData("DefaultCluster", "broker-a", {0: M_A})]
    assert r.all_topics() == ["T"]


def test_slave_gets_master_and_ha_addr_and_its_topics_are_ignored():
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4)
    res = register(r, S_A, "broker-a", 1, T4, TopicConfig("SLAVE_ONLY", 1, 1))
    assert res == RegisterBrokerResult(master_addr=M_A, ha_server_addr="10.0.0.1:10912")
    assert r.pick_route("SLAVE_ONLY") is None  # queue data comes from masters only
    assert r.pick_route("T").broker_datas[0].broker_addrs == {0: M_A, 1: S_A}


def test_slave_before_master_gets_no_master_addr():
    r = RouteInfoManager()
    assert register(r, S_A, "broker-a", 1, T4) == RegisterBrokerResult()
    assert r.pick_route("T") is None  # no queue data: only a slave registered


def test_queue_data_updates_only_when_data_version_changes():
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4, counter=1)
    register(r, M_A, "broker-a", 0, TopicConfig("T", 8, 8, 6), counter=1)  # same version: ignored
    assert r.pick_route("T").queue_datas[0].write_queue_nums == 4
    register(r, M_A, "broker-a", 0, TopicConfig("T", 8, 8, 6), counter=2)
    assert r.pick_route("T").queue_datas[0].write_queue_nums == 8


def test_partial_registration_keeps_other_topics():
    """A Java 4.9 broker registers a single new topic with a partial table (registerIncrementBrokerData)."""
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4, counter=1)
    register(r, M_A, "broker-a", 0, TopicConfig("NEW", 2, 2), counter=2)
    assert r.all_topics() == ["NEW", "T"]


def test_is_topic_config_changed():
    r = RouteInfoManager()
    assert r.is_topic_config_changed(M_A, DataVersion(1000, 1))
    register(r, M_A, "broker-a", 0, T4, counter=1)
    assert not r.is_topic_config_changed(M_A, DataVersion(1000, 1))
    assert r.is_topic_config_changed(M_A, DataVersion(1000, 2))
    assert r.is_topic_config_changed(M_A, DataVersion(1001, 1))


def test_query_data_version_refreshes_liveness():
    r = RouteInfoManager()
    assert r.query_data_version(M_A, DataVersion(), 5) == (True, None)
    register(r, M_A, "broker-a", 0, T4, counter=1, now=0)
    assert r.query_data_version(M_A, DataVersion(1000, 1), 100_000) == (False, DataVersion(1000, 1))
    assert r.scan_expired(200_000) == []  # the query counted as a sign of life at 100 s


def test_slave_promoted_to_master_loses_slave_entry():
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4)
    register(r, S_A, "broker-a", 1)
    r.unregister_broker("DefaultCluster", M_A, "broker-a", 0)
    register(r, S_A, "broker-a", 0, T4, counter=5)
    assert r.pick_route("T").broker_datas[0].broker_addrs == {0: S_A}


def test_a_slave_elected_while_the_old_master_is_still_registered_takes_id_0_and_its_topics():
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4)
    register(r, S_A, "broker-a", 1, T4)  # same data version as the master's (copied from it)
    register(r, S_A, "broker-a", 0, T4, TopicConfig("NEW", 2, 2, 6))  # elected; the old master not gone yet
    route = r.pick_route("T")
    assert route.broker_datas[0].broker_addrs == {0: S_A}
    assert r.pick_route("NEW") is not None  # a new address at id 0 is read, whatever its data version


def test_two_brokers_and_clusters():
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4)
    register(r, M_B, "broker-b", 0, TopicConfig("T", 8, 8, 6), TopicConfig("U", 1, 1), cluster="Other")
    route = r.pick_route("T")
    assert sorted(q.broker_name for q in route.queue_datas) == ["broker-a", "broker-b"]
    info = r.cluster_info()
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"], "Other": ["broker-b"]}
    assert set(info.broker_addr_table) == {"broker-a", "broker-b"}
    assert r.topics_by_cluster("DefaultCluster") == ["T"]
    assert r.topics_by_cluster("Other") == ["T", "U"]
    assert r.topics_by_cluster("Nope") == []
    topics, master = r.system_topics()
    assert topics == ["DefaultCluster", "Other", "broker-a", "broker-b"] and master in (M_A, M_B)


def test_unregister_master_keeps_route_while_slave_remains():
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4)
    register(r, S_A, "broker-a", 1)
    r.unregister_broker("DefaultCluster", M_A, "broker-a", 0)
    route = r.pick_route("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {1: S_A}
    r.unregister_broker("DefaultCluster", S_A, "broker-a", 1)
    assert r.pick_route("T") is None
    assert r.all_topics() == [] and r.cluster_info().cluster_addr_table == {}
    assert r.broker_live_table == {}


def test_unregistering_an_id_another_broker_holds_now_keeps_it():
    """A deposed master stopping after its successor took brokerId 0 leaves the successor routed."""
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4)
    register(r, S_A, "broker-a", 0, T4)  # elected while M_A was frozen
    r.unregister_broker("DefaultCluster", M_A, "broker-a", 0)
    route = r.pick_route("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: S_A}


def test_unregister_unknown_broker_is_harmless():
    r = RouteInfoManager()
    r.unregister_broker("c", "x:1", "nope", 0)
    assert r.cluster_info().broker_addr_table == {}


def test_channel_close_removes_only_that_broker():
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4, channel="ca")
    register(r, M_B, "broker-b", 0, T4, channel="cb")
    assert r.on_channel_closed("ca") == [M_A]
    route = r.pick_route("T")
    assert [b.broker_name for b in route.broker_datas] == ["broker-b"]
    assert [q.broker_name for q in route.queue_datas] == ["broker-b"]
    assert r.on_channel_closed("ca") == []
    assert r.on_channel_closed("cb") == [M_B]
    assert r.pick_route("T") is None and r.all_topics() == []


def test_channel_of_an_older_registration_does_not_remove_the_broker():
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4, channel="old")
    register(r, M_A, "broker-a", 0, T4, channel="new")
    assert r.on_channel_closed("old") == []
    assert r.pick_route("T") is not None


@pytest.mark.parametrize(
    "last, now, expired",
    [(0, 120_000, False), (0, 120_001, True), (10_000, 100_000, False), (0, 10**9, True)],
)
def test_scan_expired_boundary(last, now, expired):
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4, now=last)
    removed = r.scan_expired(now)
    assert [x.broker_addr for x in removed] == ([M_A] if expired else [])
    assert (r.pick_route("T") is None) is expired
    if expired:
        assert removed[0].channel == f"chan-{M_A}"  # the caller closes it


def test_scan_expired_custom_expiry_and_refresh():
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4, now=0)
    register(r, M_B, "broker-b", 0, T4, now=0)
    register(r, M_A, "broker-a", 0, T4, now=4_000)
    assert [x.broker_addr for x in r.scan_expired(6_000, expiry_ms=5_000)] == [M_B]


def test_pick_route_rules():
    r = RouteInfoManager()
    assert r.pick_route("T") is None  # nothing at all
    register(r, M_A, "broker-a", 0, T4)
    assert r.pick_route("OTHER") is None  # no queue data
    route = r.pick_route("T")
    route.queue_datas[0].write_queue_nums = 99  # a copy: the state does not change
    route.broker_datas[0].broker_addrs[5] = "x"
    again = r.pick_route("T")
    assert again.queue_datas[0].write_queue_nums == 4 and 5 not in again.broker_datas[0].broker_addrs


def test_filter_servers_in_route():
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4, filters=["fs1:1", "fs2:2"])
    assert r.pick_route("T").filter_server_table == {M_A: ["fs1:1", "fs2:2"]}
    register(r, M_A, "broker-a", 0, T4, filters=[])
    assert r.pick_route("T").filter_server_table == {}


@pytest.mark.parametrize(
    "cluster, left",
    [
        (None, []),
        ("DefaultCluster", ["broker-b"]),
        ("Other", ["broker-a"]),
        ("Nope", ["broker-a", "broker-b"]),
    ],
)
def test_delete_topic_everywhere_or_per_cluster(cluster, left):
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4)
    register(r, M_B, "broker-b", 0, T4, cluster="Other")
    r.delete_topic("T", cluster)
    route = r.pick_route("T")
    assert (sorted(q.broker_name for q in route.queue_datas) if route else []) == left


def test_delete_unknown_topic():
    assert RouteInfoManager().delete_topic("T") is False


def test_wipe_write_perm():
    r = RouteInfoManager()
    register(r, M_A, "broker-a", 0, T4, TopicConfig("R", 1, 1, 4))
    assert r.wipe_write_perm("broker-a") == 1  # R is read-only already
    assert r.pick_route("T").queue_datas[0].perm == 4
    assert r.wipe_write_perm("nope") == 0


def test_register_without_topic_table():
    r = RouteInfoManager()
    res = r.register_broker("c", M_A, "broker-a", 0, None, None, None, "ch", 0)
    assert res == RegisterBrokerResult()
    assert r.broker_live_table[M_A].data_version == DataVersion()
    assert r.cluster_info().cluster_addr_table == {"c": ["broker-a"]}
