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

Indexes kept beside the tables (broker name → its topics and its clusters, address → the broker
names holding it, channel → the addresses registered through it) make every departure cost what
it removes, never a walk over every topic or broker: thousands of brokers leaving at once (a
partition healing, a hostile peer registering and dropping names) do not stall the name server.
What a peer can make this module log goes through one rate-limited log (:attr:`events`).
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
from pyrocketmq.remoting.log_limit import RateLimitedLog
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
    """The addresses of one broker name by id, and the id of each address (one each)."""

    cluster: str
    addrs: dict[int, str] = field(default_factory=dict)
    ids: dict[str, int] = field(default_factory=dict)

    def put(self, broker_id: int, addr: str) -> str | None:
        """``addr`` at ``broker_id`` (leaving any other id it had); the address it displaced, if any."""
        old_id = self.ids.get(addr)
        if old_id is not None and old_id != broker_id:
            del self.addrs[old_id]
        displaced = self.addrs.get(broker_id)
        self.addrs[broker_id] = addr
        self.ids[addr] = broker_id
        if displaced is not None and displaced != addr:
            del self.ids[displaced]
            return displaced
        return None

    def pop_id(self, broker_id: int) -> str | None:
        addr = self.addrs.pop(broker_id, None)
        if addr is not None:
            del self.ids[addr]
        return addr

    def pop_addr(self, addr: str) -> int | None:
        broker_id = self.ids.pop(addr, None)
        if broker_id is not None:
            del self.addrs[broker_id]
        return broker_id


class RouteInfoManager:
    """Routing tables and the rules that change them; see the module docstring."""

    def __init__(self) -> None:
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, _BrokerGroup] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.filter_server_table: dict[str, list[str]] = {}
        self._topics_of: dict[str, set[str]] = {}  # broker name → topics with its queue data
        self._clusters_of: dict[str, set[str]] = {}  # broker name → clusters listing it
        self._names_of: dict[str, set[str]] = {}  # broker address → broker names holding it
        self._addrs_of: dict[Hashable, dict[str, None]] = {}  # channel → addresses live through it, in order
        self.events = RateLimitedLog(log, burst=50)
        """What peers make the name server log (registrations, departures, refusals)."""

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
        self._clusters_of.setdefault(broker_name, set()).add(cluster_name)
        group = self.broker_addr_table.get(broker_name)
        first = group is None
        if group is None:
            group = self.broker_addr_table[broker_name] = _BrokerGroup(cluster_name)
        else:
            group.cluster = cluster_name
        first = group.addrs.get(broker_id) != broker_addr or first  # new here, or a master elected elsewhere
        # one address, one id: a slave switched to master loses its slave entry
        displaced = group.put(broker_id, broker_addr)
        if displaced is not None:
            self._left_group(displaced, broker_name)
        self._names_of.setdefault(broker_addr, set()).add(broker_name)

        version = DataVersion()
        if topic_config_wrapper is not None:
            version = topic_config_wrapper.data_version or DataVersion()
            if broker_id == MASTER_ID and (first or self.is_topic_config_changed(broker_addr, version)):
                self._put_queue_datas(broker_name, broker_addr, topic_config_wrapper)

        old = self.broker_live_table.get(broker_addr)
        if old is None:
            self.events.info("new broker registered: %s (%s, cluster %s, id %d)", broker_addr, broker_name,
                             cluster_name, broker_id)
        elif old.channel != channel:
            self._unindex_channel(old.channel, broker_addr)
        self.broker_live_table[broker_addr] = BrokerLiveInfo(
            broker_addr, now_ms, version, channel, ha_server_addr
        )
        if channel is not None:
            self._addrs_of.setdefault(channel, {})[broker_addr] = None

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

    def query_data_version(
        self, broker_addr: str, version: DataVersion, now_ms: int
    ) -> tuple[bool, DataVersion | None]:
        """QUERY_DATA_VERSION: (changed, the version we hold); also counts as a sign of life."""
        live = self.broker_live_table.get(broker_addr)
        if live is None:
            return True, None
        live.last_update_ms = now_ms
        return live.data_version != version, live.data_version

    def _put_queue_datas(
        self, broker_name: str, broker_addr: str, wrapper: TopicConfigSerializeWrapper
    ) -> None:
        """A master's topic table into the routes; one line for what is new or changed."""
        added: list[str] = []
        changed: list[str] = []
        topics = self._topics_of.setdefault(broker_name, set())
        for tc in wrapper.topic_config_table.values():
            qd = QueueData(broker_name, tc.read_queue_nums, tc.write_queue_nums, tc.perm, tc.topic_sys_flag)
            per_broker = self.topic_queue_table.setdefault(tc.topic_name, {})
            old = per_broker.get(broker_name)
            if old != qd:
                (added if old is None else changed).append(tc.topic_name)
                per_broker[broker_name] = qd
                topics.add(tc.topic_name)
        if not topics:
            del self._topics_of[broker_name]
        for what, names in (("new", added), ("changed", changed)):
            if names:
                self.events.info(
                    "%d topic routes %s on %s (%s): %s%s",
                    len(names),
                    what,
                    broker_name,
                    broker_addr,
                    ", ".join(names[:20]),
                    ", ..." if len(names) > 20 else "",
                )

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        """A broker shutting down cleanly (UNREGISTER_BROKER)."""
        live = self.broker_live_table.pop(broker_addr, None)
        if live is not None:
            self._unindex_channel(live.channel, broker_addr)
        self.filter_server_table.pop(broker_addr, None)
        group = self.broker_addr_table.get(broker_name)
        if group is None:
            return
        if group.addrs.get(broker_id, broker_addr) != broker_addr:
            # another broker holds that id now: a deposed master stopping after its successor
            # registered (Apache's name server drops the id whoever holds it; that loses the new master)
            self.events.info("broker %s unregistered as id %d of %s, which %s holds now: kept", broker_addr,
                             broker_id, broker_name, group.addrs[broker_id])
            return
        gone = group.pop_id(broker_id)
        if gone is not None:
            self._left_group(gone, broker_name)
        self.events.info("broker unregistered: %s (%s, id %d)", broker_addr, broker_name, broker_id)
        if not group.addrs:
            del self.broker_addr_table[broker_name]
            self._forget_broker_names(cluster_name, {broker_name})

    def _left_group(self, addr: str, broker_name: str) -> None:
        """``addr`` lost its id (its only one) in ``broker_name``'s group."""
        names = self._names_of.get(addr)
        if names is not None:
            names.discard(broker_name)
            if not names:
                del self._names_of[addr]

    def _unindex_channel(self, channel: Hashable | None, addr: str) -> None:
        if channel is None:
            return
        addrs = self._addrs_of.get(channel)
        if addrs is not None:
            addrs.pop(addr, None)
            if not addrs:
                del self._addrs_of[channel]

    def _forget_broker_names(self, cluster_name: str | None, names: set[str]) -> None:
        """Broker names without any address left: out of their cluster (``None``: every cluster) and
        of every topic."""
        gone = []
        for name in names:
            clusters = self._clusters_of.get(name, set())
            for cluster in list(clusters) if cluster_name is None else [cluster_name]:
                members = self.cluster_addr_table.get(cluster)
                if members is not None:
                    members.discard(name)
                    if not members:
                        del self.cluster_addr_table[cluster]
                clusters.discard(cluster)
            if not clusters:
                self._clusters_of.pop(name, None)
            for topic in self._topics_of.pop(name, ()):
                per_broker = self.topic_queue_table.get(topic)
                if per_broker is None:
                    continue
                per_broker.pop(name, None)
                if not per_broker:
                    del self.topic_queue_table[topic]
                    gone.append(topic)
        if gone:
            self.events.info(
                "%d topics have no broker left, routes removed: %s", len(gone), ", ".join(sorted(gone)[:20])
            )

    # -- departures ---------------------------------------------------------------------------------
    def on_channel_closed(self, channel: Hashable) -> list[str]:
        """The connection a broker registered through closed: remove it at once; its addresses."""
        addrs = list(self._addrs_of.pop(channel, {}))
        for addr in addrs:
            self._remove_broker_addr(addr)
        return addrs

    def scan_expired(self, now_ms: int, expiry_ms: int = BROKER_EXPIRY_MS) -> list[BrokerLiveInfo]:
        """Remove brokers silent for longer than ``expiry_ms``; the removed entries (close their channels)."""
        expired = [
            live for live in self.broker_live_table.values() if live.last_update_ms + expiry_ms < now_ms
        ]
        for live in expired:
            self.events.warning("broker %s expired: no registration for %d ms", live.broker_addr,
                                now_ms - live.last_update_ms)
            self._remove_broker_addr(live.broker_addr)
        return expired

    def _remove_broker_addr(self, broker_addr: str) -> None:
        live = self.broker_live_table.pop(broker_addr, None)
        if live is not None:
            self._unindex_channel(live.channel, broker_addr)
        self.filter_server_table.pop(broker_addr, None)
        emptied: set[str] = set()
        for name in self._names_of.pop(broker_addr, ()):
            group = self.broker_addr_table.get(name)
            if group is None:
                continue
            bid = group.pop_addr(broker_addr)
            if bid is not None:
                self.events.info("broker %s (%s, id %d) removed", broker_addr, name, bid)
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
            broker_addr_table={
                n: BrokerData(g.cluster, n, dict(g.addrs)) for n, g in self.broker_addr_table.items()
            },
            cluster_addr_table={c: sorted(names) for c, names in self.cluster_addr_table.items()},
        )

    def all_topics(self) -> list[str]:
        return sorted(self.topic_queue_table)

    def topics_by_cluster(self, cluster: str) -> list[str]:
        topics: set[str] = set()
        for name in self.cluster_addr_table.get(cluster, ()):
            topics |= self._topics_of.get(name, set())
        return sorted(topics)

    def system_topics(self) -> tuple[list[str], str | None]:
        """Cluster and broker names (each is also a topic), and some master's address."""
        topics = set(self.cluster_addr_table)
        for names in self.cluster_addr_table.values():
            topics |= names
        master = next(
            (g.addrs[MASTER_ID] for g in self.broker_addr_table.values() if MASTER_ID in g.addrs), None
        )
        return sorted(topics), master

    # -- administration -----------------------------------------------------------------------------
    def delete_topic(self, topic: str, cluster: str | None = None) -> bool:
        """Forget a topic everywhere, or only its queues on ``cluster``'s brokers; True if anything went."""
        per_broker = self.topic_queue_table.get(topic)
        if per_broker is None:
            return False
        names = self.cluster_addr_table.get(cluster, set()) if cluster is not None else None
        gone = [n for n in per_broker if names is None or n in names]
        for n in gone:
            del per_broker[n]
            topics = self._topics_of.get(n)
            if topics is not None:
                topics.discard(topic)
                if not topics:
                    del self._topics_of[n]
        if not per_broker:
            del self.topic_queue_table[topic]
        return bool(gone)

    def wipe_write_perm(self, broker_name: str) -> int:
        """Take the write bit off every queue data of ``broker_name`` (draining it); how many topics."""
        count = 0
        for topic in self._topics_of.get(broker_name, ()):
            per_broker = self.topic_queue_table[topic]
            qd = per_broker.get(broker_name)
            if qd is not None and qd.perm & PERM_WRITE:
                per_broker[broker_name] = QueueData(
                    qd.broker_name,
                    qd.read_queue_nums,
                    qd.write_queue_nums,
                    qd.perm & ~PERM_WRITE,
                    qd.topic_sys_flag,
                )
                count += 1
        return count
