"""Departures of many brokers cost what they remove: counted, not timed.

The tables are swapped for dictionaries that count the entries anyone walks; removing thousands of
brokers (by their connections closing, by expiry, by unregistering) must walk a number of entries
linear in what goes, not every topic and every broker per broker. A random sequence of operations
then checks that the indexes behind that always agree with the tables.
"""

from __future__ import annotations

import random

import pytest

from pyrocketmq.namesrv.route_info import RouteInfoManager
from pyrocketmq.remoting.body import DataVersion, TopicConfig, TopicConfigSerializeWrapper

N = 2000
SHARED = [TopicConfig(f"Shared{i}", 4, 4, 6) for i in range(20)]


class Counting(dict):
    """A dict that counts the entries walked over it (iteration, keys, values, items)."""

    walked = 0

    def _count(self, it):
        for x in it:
            Counting.walked += 1
            yield x

    def __iter__(self):
        return self._count(super().__iter__())

    def keys(self):
        return list(self._count(super().keys()))

    def values(self):
        return list(self._count(super().values()))

    def items(self):
        return list(self._count(super().items()))


def _routes() -> RouteInfoManager:
    r = RouteInfoManager()
    for name in ("topic_queue_table", "broker_addr_table", "cluster_addr_table", "broker_live_table",
                 "filter_server_table"):
        setattr(r, name, Counting())
    return r


def _register(r: RouteInfoManager, i: int, now: int = 0, channel: object = None, counter: int = 1) -> str:
    addr = f"10.{i // 250}.{i % 250}.1:10911"
    own = [TopicConfig(f"Own{i}_{k}", 4, 4, 6) for k in range(3)]
    wrapper = TopicConfigSerializeWrapper({t.topic_name: t for t in [*own, *SHARED]}, DataVersion(1, counter))
    r.register_broker(f"Cluster{i % 7}", addr, f"broker-{i}", 0, addr, wrapper, None,
                      channel if channel is not None else f"chan-{i}", now)
    return addr


def _full(n: int = N) -> RouteInfoManager:
    r = _routes()
    for i in range(n):
        _register(r, i)
    assert len(r.topic_queue_table) == 3 * n + len(SHARED)
    return r


def test_closed_connections_remove_their_brokers_walking_only_what_goes():
    r = _full()
    Counting.walked = 0
    for i in range(N):
        assert r.on_channel_closed(f"chan-{i}") == [f"10.{i // 250}.{i % 250}.1:10911"]
    assert r.topic_queue_table == {} and r.broker_addr_table == {} and r.cluster_addr_table == {}
    assert Counting.walked <= 4 * N, (
        Counting.walked
    )  # the old code walked every topic and broker each time: ~N²


def test_expiry_of_thousands_walks_the_live_table_once():
    r = _full()
    _register(r, 0, now=200_000)  # one keeps registering
    Counting.walked = 0
    expired = r.scan_expired(200_000)
    assert len(expired) == N - 1
    assert r.all_topics() == sorted([f"Own0_{k}" for k in range(3)] + [t.topic_name for t in SHARED])
    assert Counting.walked <= 2 * N + len(r.topic_queue_table), Counting.walked


def test_unregistering_thousands_walks_only_what_goes():
    r = _full()
    Counting.walked = 0
    for i in range(N):
        r.unregister_broker(f"Cluster{i % 7}", f"10.{i // 250}.{i % 250}.1:10911", f"broker-{i}", 0)
    assert r.topic_queue_table == {} and r.cluster_addr_table == {}
    assert Counting.walked <= 4 * N, Counting.walked


def test_thousands_of_ids_of_one_broker_name_come_and_go_walking_only_what_changes(monkeypatch):
    """A peer may register one broker name under any number of ids (a Long): each registration and
    each departure touches its own entry, not every id of the name."""
    from pyrocketmq.namesrv import route_info

    monkeypatch.setattr(route_info._BrokerGroup, "__init__", _counting_group_init)
    r = _routes()
    wrapper = TopicConfigSerializeWrapper({"T": TopicConfig("T", 4, 4, 6)}, DataVersion(1, 1))
    Counting.walked = 0
    for i in range(N):
        r.register_broker(
            "C", f"10.0.{i // 250}.{i % 250}:10911", "broker-a", i, None, wrapper, None, f"chan-{i}", 0
        )
    for i in range(N):
        r.on_channel_closed(f"chan-{i}")
    assert r.broker_addr_table == {} and r.topic_queue_table == {}
    assert Counting.walked <= 4 * N, Counting.walked


def _counting_group_init(self, cluster, addrs=None, ids=None):
    self.cluster, self.addrs, self.ids = cluster, Counting(addrs or {}), Counting(ids or {})


def test_topic_queries_of_one_broker_or_cluster_walk_only_theirs():
    r = _full(500)
    Counting.walked = 0
    assert r.wipe_write_perm("broker-3") == 3 + len(SHARED)
    assert len(r.topics_by_cluster("Cluster3")) == 3 * len([i for i in range(500) if i % 7 == 3]) + len(
        SHARED
    )
    assert Counting.walked <= 10, Counting.walked


def _indexes_agree(r: RouteInfoManager) -> None:
    topics_of: dict[str, set[str]] = {}
    for topic, per_broker in dict.items(r.topic_queue_table):
        for name in per_broker:
            topics_of.setdefault(name, set()).add(topic)
    assert r._topics_of == topics_of
    clusters_of: dict[str, set[str]] = {}
    for cluster, names in dict.items(r.cluster_addr_table):
        for name in names:
            clusters_of.setdefault(name, set()).add(cluster)
    assert r._clusters_of == clusters_of
    names_of: dict[str, set[str]] = {}
    for name, group in dict.items(r.broker_addr_table):
        assert group.addrs, name
        assert group.ids == {a: b for b, a in group.addrs.items()}, name  # one id per address
        for addr in group.addrs.values():
            names_of.setdefault(addr, set()).add(name)
    assert r._names_of == names_of
    addrs_of: dict[object, set[str]] = {}
    for addr, live in dict.items(r.broker_live_table):
        if live.channel is not None:
            addrs_of.setdefault(live.channel, set()).add(addr)
    assert {c: set(a) for c, a in r._addrs_of.items()} == addrs_of


@pytest.mark.parametrize("seed", range(20))
def test_the_indexes_always_agree_with_the_tables(seed):
    rng = random.Random(seed)
    r = RouteInfoManager()
    names, addrs, clusters, channels = (
        ["a", "b", "c", "d"],
        [f"10.0.0.{i}:1" for i in range(6)],
        ["C1", "C2"],
        ["x", "y", "z"],
    )
    topics = [TopicConfig(f"T{i}", 4, 4, 6) for i in range(8)]
    now = 0
    for _ in range(300):
        now += rng.randrange(0, 40_000)
        op = rng.randrange(8)
        if op < 3:
            table = {t.topic_name: t for t in rng.sample(topics, rng.randrange(0, 4))}
            r.register_broker(
                rng.choice(clusters),
                rng.choice(addrs),
                rng.choice(names),
                rng.randrange(3),
                None,
                TopicConfigSerializeWrapper(table, DataVersion(1, rng.randrange(3))),
                None,
                rng.choice(channels),
                now,
            )
        elif op == 3:
            r.unregister_broker(rng.choice(clusters), rng.choice(addrs), rng.choice(names), rng.randrange(3))
        elif op == 4:
            r.on_channel_closed(rng.choice(channels))
        elif op == 5:
            r.scan_expired(now)
        elif op == 6:
            r.delete_topic(rng.choice(topics).topic_name, rng.choice([None, *clusters]))
        else:
            r.wipe_write_perm(rng.choice(names))
        _indexes_agree(r)
