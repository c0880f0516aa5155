"""The name server's routing state (Java ``RouteInfoManager``): pure, synchronous, no I/O.

Tables, as in RocketMQ 4.x:

- ``topic_queue_table``: topic → broker name → :class:`QueueData` (from masters only);
- ``broker_addr_table``: broker name → cluster and broker id → address (0 is the master);
- ``cluster_addr_table``: cluster → broker names;
- ``broker_live_table``: broker address → :class:`BrokerLiveInfo` (last heartbeat, data version,
  the channel it registered through, its HA address);
- ``filter_server_table``: broker address → filter server addresses.

Invariants: a broker address appears under at most one broker id (a slave promoted to master
first loses its old id); a broker name is in ``broker_addr_table`` only while it has at least one
address; a topic is in ``topic_queue_table`` only while it has queue data. Queue data of a broker
name survives its master's departure as long as a slave of that name remains, so consumers keep
reading from the slave. The caller serialises access (one asyncio loop); nothing here awaits.

``channel`` is any hashable token for the connection a broker registered through (the server
passes the connection itself); it is how a closed connection finds the brokers to remove.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from dataclasses import dataclass, field

from pyrocketmq.remoting.body import (
    MASTER_ID,
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfigSerializeWrapper,
    TopicRouteData,
)
from pyrocketmq.remoting.names import PERM_WRITE

log = logging.getLogger("pyrocketmq.namesrv")

BROKER_EXPIRY_MS = 120_000


@dataclass(slots=True)
class BrokerLiveInfo:
    """What the name server knows of a live broker address since its last registration."""

    broker_addr: str
    last_update_ms: int
    data_version: DataVersion
    channel: Hashable | None
    ha_server_addr: str | None


@dataclass(frozen=True, slots=True)
class RegisterBrokerResult:
    """For a slave: its master's address and HA address (both ``None`` for a master or an orphan)."""

    master_addr: str | None = None
    ha_server_addr: str | None = None


@dataclass(slots=True)
class _BrokerGroup:
    cluster: str
    addrs: dict[int, str] = field(default_factory=dict)


class RouteInfoManager:
    """Routing tables and the rules that change them; see the module docstring."""

    def __init__(self) -> None:
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, _BrokerGroup] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.filter_server_table: dict[str, list[str]] = {}

    # -- registration -----------------------------------------------------------------------------
    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str | None,
        topic_config_wrapper: TopicConfigSerializeWrapper | None,
        filter_server_list: list[str] | None,
        channel: Hashable | None,
        now_ms: int,
    ) -> RegisterBrokerResult:
        """Record a broker's registration (at start, every 30 s, after a topic change).

        Queue data comes from the master (id 0) only, and is re-read only when the data version
        differs from the last one this address registered with, or on a first registration.
        Topics a broker no longer lists are not dropped here (a Java 4.9 broker also registers
        single new topics with a partial table); DELETE_TOPIC_IN_NAMESRV removes them.
        """
        self.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)
        group = self.broker_addr_table.get(broker_name)
        first = group is None
        if group is None:
            group = self.broker_addr_table[broker_name] = _BrokerGroup(cluster_name)
        else:
            group.cluster = cluster_name
        # one address, one id: a slave switched to master must lose its slave entry
        for bid in [b for b, a in group.addrs.items() if a == broker_addr and b != broker_id]:
            del group.addrs[bid]
        first = group.addrs.get(broker_id) != broker_addr or first  # new here, or a master elected elsewhere
        group.addrs[broker_id] = broker_addr

        version = DataVersion()
        if topic_config_wrapper is not None:
            version = topic_config_wrapper.data_version or DataVersion()
            if broker_id == MASTER_ID and (first or self.is_topic_config_changed(broker_addr, version)):
                for tc in topic_config_wrapper.topic_config_table.values():
                    self._put_queue_data(
                        tc.topic_name,
                        QueueData(broker_name, tc.read_queue_nums, tc.write_queue_nums, tc.perm, tc.topic_sys_flag),
                    )

        if broker_addr not in self.broker_live_table:
            log.info("new broker registered: %s (%s, cluster %s, id %d)", broker_addr, broker_name, cluster_name, broker_id)
        self.broker_live_table[broker_addr] = BrokerLiveInfo(broker_addr, now_ms, version, channel, ha_server_addr)

        if filter_server_list:
            self.filter_server_table[broker_addr] = list(filter_server_list)
        else:
            self.filter_server_table.pop(broker_addr, None)

        if broker_id != MASTER_ID:
            master = group.addrs.get(MASTER_ID)
            live = self.broker_live_table.get(master) if master else None
            if live is not None:
                return RegisterBrokerResult(master_addr=master, ha_server_addr=live.ha_server_addr)
        return RegisterBrokerResult()

    def is_topic_config_changed(self, broker_addr: str, version: DataVersion) -> bool:
        live = self.broker_live_table.get(broker_addr)
        return live is None or live.data_version != version

    def query_data_version(self, broker_addr: str, version: DataVersion, now_ms: int) -> tuple[bool, DataVersion | None]:
        """QUERY_DATA_VERSION: (changed, the version we hold); also counts as a sign of life."""
        live = self.broker_live_table.get(broker_addr)
        if live is None:
            return True, None
        live.last_update_ms = now_ms
        return live.data_version != version, live.data_version

    def _put_queue_data(self, topic: str, qd: QueueData) -> None:
        per_broker = self.topic_queue_table.setdefault(topic, {})
        old = per_broker.get(qd.broker_name)
        if old != qd:
            if old is None:
                log.info("new topic route: %s on %s", topic, qd.broker_name)
            else:
                log.info("topic route changed: %s on %s: %s -> %s", topic, qd.broker_name, old, qd)
            per_broker[qd.broker_name] = qd

    def unregister_broker(self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        """A broker shutting down cleanly (UNREGISTER_BROKER)."""
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        group = self.broker_addr_table.get(broker_name)
        if group is None:
            return
        group.addrs.pop(broker_id, None)
        log.info("broker unregistered: %s (%s, id %d)", broker_addr, broker_name, broker_id)
        if not group.addrs:
            del self.broker_addr_table[broker_name]
            self._forget_broker_names(cluster_name, {broker_name})

    def _forget_broker_names(self, cluster_name: str | None, names: set[str]) -> None:
        """Broker names without any address left: out of their cluster and of every topic."""
        for cluster, members in list(self.cluster_addr_table.items()):
            if cluster_name is not None and cluster != cluster_name:
                continue
            members -= names
            if not members:
                del self.cluster_addr_table[cluster]
        gone = []
        for topic, per_broker in list(self.topic_queue_table.items()):
            for name in names:
                per_broker.pop(name, None)
            if not per_broker:
                del self.topic_queue_table[topic]
                gone.append(topic)
        if gone:
            log.info("%d topics have no broker left, routes removed: %s", len(gone), ", ".join(sorted(gone)[:20]))

    # -- departures ---------------------------------------------------------------------------------
    def on_channel_closed(self, channel: Hashable) -> list[str]:
        """The connection a broker registered through closed: remove it at once; its addresses."""
        addrs = [a for a, live in self.broker_live_table.items() if live.channel is channel or live.channel == channel]
        for addr in addrs:
            self._remove_broker_addr(addr)
        return addrs

    def scan_expired(self, now_ms: int, expiry_ms: int = BROKER_EXPIRY_MS) -> list[BrokerLiveInfo]:
        """Remove brokers silent for longer than ``expiry_ms``; the removed entries (close their channels)."""
        expired = [live for live in self.broker_live_table.values() if live.last_update_ms + expiry_ms < now_ms]
        for live in expired:
            log.warning("broker %s expired: no registration for %d ms", live.broker_addr, now_ms - live.last_update_ms)
            self._remove_broker_addr(live.broker_addr)
        return expired

    def _remove_broker_addr(self, broker_addr: str) -> None:
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        emptied: set[str] = set()
        for name, group in list(self.broker_addr_table.items()):
            for bid in [b for b, a in group.addrs.items() if a == broker_addr]:
                del group.addrs[bid]
                log.info("broker %s (%s, id %d) removed", broker_addr, name, bid)
            if not group.addrs:
                del self.broker_addr_table[name]
                emptied.add(name)
        if emptied:
            self._forget_broker_names(None, emptied)

    # -- queries ------------------------------------------------------------------------------------
    def pick_route(self, topic: str) -> TopicRouteData | None:
        """The topic's route; ``None`` unless it has queue data and at least one live broker name.

        The result is a copy: callers may change it (add ``order_topic_conf``) freely.
        """
        per_broker = self.topic_queue_table.get(topic)
        if not per_broker:
            return None
        route = TopicRouteData(
            queue_datas=[
                QueueData(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
                for q in per_broker.values()
            ]
        )
        for name in per_broker:
            group = self.broker_addr_table.get(name)
            if group is None:
                continue
            route.broker_datas.append(BrokerData(group.cluster, name, dict(group.addrs)))
            for addr in group.addrs.values():
                servers = self.filter_server_table.get(addr)
                if servers:
                    route.filter_server_table[addr] = list(servers)
        return route if route.broker_datas else None

    def broker_data(self, broker_name: str) -> BrokerData | None:
        group = self.broker_addr_table.get(broker_name)
        return None if group is None else BrokerData(group.cluster, broker_name, dict(group.addrs))

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            broker_addr_table={n: BrokerData(g.cluster, n, dict(g.addrs)) for n, g in self.broker_addr_table.items()},
            cluster_addr_table={c: sorted(names) for c, names in self.cluster_addr_table.items()},
        )

    def all_topics(self) -> list[str]:
        return sorted(self.topic_queue_table)

    def topics_by_cluster(self, cluster: str) -> list[str]:
        names = self.cluster_addr_table.get(cluster, set())
        return sorted(t for t, per_broker in self.topic_queue_table.items() if names & per_broker.keys())

    def system_topics(self) -> tuple[list[str], str | None]:
        """Cluster and broker names (each is also a topic), and some master's address."""
        topics = set(self.cluster_addr_table)
        for names in self.cluster_addr_table.values():
            topics |= names
        master = next((g.addrs[MASTER_ID] for g in self.broker_addr_table.values() if MASTER_ID in g.addrs), None)
        return sorted(topics), master

    # -- administration -----------------------------------------------------------------------------
    def delete_topic(self, topic: str, cluster: str | None = None) -> bool:
        """Forget a topic everywhere, or only its queues on ``cluster``'s brokers; True if anything went."""
        per_broker = self.topic_queue_table.get(topic)
        if per_broker is None:
            return False
        if cluster is None:
            del self.topic_queue_table[topic]
            return True
        names = self.cluster_addr_table.get(cluster, set())
        gone = [n for n in per_broker if n in names]
        for n in gone:
            del per_broker[n]
        if not per_broker:
            del self.topic_queue_table[topic]
        return bool(gone)

    def wipe_write_perm(self, broker_name: str) -> int:
        """Take the write bit off every queue data of ``broker_name`` (draining it); how many topics."""
        count = 0
        for per_broker in self.topic_queue_table.values():
            qd = per_broker.get(broker_name)
            if qd is not None and qd.perm & PERM_WRITE:
                per_broker[broker_name] = QueueData(
                    qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, qd.perm & ~PERM_WRITE, qd.topic_sys_flag
                )
                count += 1
        return count
