"""Administration of a cluster (Java's ``DefaultMQAdminExt``, the part ``mqadmin`` uses most).

Where each request goes:

============================  =====  ========================================================
operation                     code   sent to
============================  =====  ========================================================
create / update topic         17     one broker, or every master of a cluster (from 106)
delete topic                  215    every master of the cluster, then
                              216    every name server
topic list / route            206 / 105  a name server
topic stats                   202    the master of every broker in the topic's route
cluster info                  106    a name server
create / update group         200    one broker, or every master of a cluster
consume stats (progress)      208    the masters in the route of ``%RETRY%<group>`` (all masters
                                     when that topic has no route)
consumer connections          203    the masters of the group's retry topic (or of the cluster);
                              38     when a broker does not implement 203 (ids only)
reset offset by time          222    every master of the topic (they tell the consumers: 220);
                              15     per queue, when no consumer of the group is online (206)
view message by offset id     33     the ``ip:port`` encoded in the id
query by unique key           12     every master in the topic's route
min / max / search offset     31 / 30 / 29  the queue's master
broker runtime info           28     one broker
============================  =====  ========================================================

:class:`Admin` is the asyncio API, :class:`SyncAdmin` its blocking facade. The plumbing all requests
share is in :mod:`.admin_base`, the offset requests in :mod:`.admin_offsets`, ACL 2.0's users and ACLs
in :mod:`.admin_auth`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import orjson

from pyrocketmq.remoting.body import (
    ClientConnection,
    ConsumerConnection,
    ConsumeStats,
    GetConsumerStatusBody,
    MessageQueue,
    ProducerConnection,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicStatsTable,
)
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import (
    MessageExt,
    decode_offset_msg_id,
)
from pyrocketmq.remoting.message_type import MESSAGE_TYPE, TYPES
from pyrocketmq.remoting.names import (
    AUTO_CREATE_TOPIC,
    ORDER_TOPIC_CONFIG_NAMESPACE,
)
from pyrocketmq.remoting.properties import parse_properties

from . import admin_lookups as lookups
from .admin_auth import AdminAuth
from .admin_base import master_of
from .admin_offsets import AdminOffsets
from .errors import MQBrokerError, MQClientError, MQConnectionError, MQTimeoutError
from .loop_thread import LoopThread, SyncFacade
from .message import check_topic
from .request_errors import check_response
from .settings import DEFAULT_NAMESRV, ClientSettings

log = logging.getLogger("pyrocketmq.client")


@dataclass(slots=True, frozen=True)
class TopicSpec:
    """The settings of a topic as UPDATE_AND_CREATE_TOPIC carries them."""

    topic: str
    read_queue_nums: int = 8
    write_queue_nums: int = 8
    perm: int = 6
    order: bool = False
    topic_sys_flag: int = 0
    topic_filter_type: str = "SINGLE_TAG"
    attributes: str = ""
    """RocketMQ 5 topic attributes, ``+message.type=FIFO`` (left out when empty)."""

    def ext_fields(self, default_topic: str = AUTO_CREATE_TOPIC) -> dict[str, Any]:
        extra = {"attributes": self.attributes} if self.attributes else {}
        return {**extra,
            "topic": self.topic,
            "defaultTopic": default_topic,
            "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums,
            "perm": self.perm,
            "topicFilterType": self.topic_filter_type,
            "topicSysFlag": self.topic_sys_flag,
            "order": self.order,
        }


class Admin(AdminOffsets, AdminAuth):
    """Administer topics, groups and messages of the cluster behind ``namesrv_addr``.

    Example::

        async with Admin("127.0.0.1:9876") as admin:
            await admin.create_topic("Orders", cluster="DefaultCluster", read_queues=4, write_queues=4)
            print(await admin.topic_list())
            stats = await admin.topic_stats("Orders")
    """

    # -- topics ---------------------------------------------------------------------------------
    async def create_topic(
        self,
        topic: str,
        *,
        broker_addr: str | None = None,
        cluster: str | None = None,
        read_queues: int = 8,
        write_queues: int = 8,
        perm: int = 6,
        order: bool = False,
        topic_sys_flag: int = 0,
        message_type: str | None = None,
    ) -> list[str]:
        """Create or update ``topic`` on one broker or on every master of ``cluster``.

        ``message_type`` (NORMAL, FIFO, DELAY, TRANSACTION or MIXED) sets the topic's RocketMQ 5
        ``message.type`` attribute: a pyrocketmq broker then refuses messages of another type.

        Returns the broker addresses updated. With ``order`` and a cluster, the name servers also
        get the ordered-topic config (``brokerName:writeQueues;…``), as mqadmin's ``-o true`` does.
        """
        check_topic(topic)
        if not (0 < read_queues <= 1024 and 0 < write_queues <= 1024):
            raise MQClientError("read and write queue counts must be within 1..1024")
        if not 0 <= perm <= 15:
            raise MQClientError(f"perm {perm} is invalid: use 2 (W), 4 (R) or 6 (RW)")
        if message_type is not None and message_type not in TYPES:
            raise MQClientError(f"message type {message_type!r}: use one of {', '.join(TYPES)}")
        attributes = f"+{MESSAGE_TYPE}={message_type}" if message_type else ""
        spec = TopicSpec(topic, read_queues, write_queues, perm, order, topic_sys_flag, attributes=attributes)
        targets = await self.target_brokers(broker_addr, cluster)
        await asyncio.gather(
            *(self._broker(a, RequestCode.UPDATE_AND_CREATE_TOPIC, spec.ext_fields()) for a in targets)
        )
        if order and cluster:
            info = await self.cluster_info()
            conf = ";".join(
                f"{name}:{write_queues}" for name in sorted(info.cluster_addr_table.get(cluster, ()))
            )
            await self.put_kv_config(ORDER_TOPIC_CONFIG_NAMESPACE, topic, conf)
        return targets

    async def delete_topic(self, topic: str, cluster: str) -> list[str]:
        """Delete ``topic`` from every master of ``cluster`` and from every name server."""
        check_topic(topic)
        targets = await self.master_addrs_of_cluster(cluster)
        await asyncio.gather(
            *(self._broker(a, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic}) for a in targets)
        )
        for ns in self.instance.namesrv_addrs:
            resp = await self.instance.invoke(
                ns,
                RemotingCommand.request(
                    RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": topic, "clusterName": cluster}
                ),
                what="name server",
            )
            check_response(resp, ns)
        return targets

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        """PUT_KV_CONFIG on every name server."""
        for ns in self.instance.namesrv_addrs:
            cmd = RemotingCommand.request(
                RequestCode.PUT_KV_CONFIG, {"namespace": namespace, "key": key, "value": value}
            )
            check_response(await self.instance.invoke(ns, cmd, what="name server"), ns)

    async def topic_list(self) -> list[str]:
        """Every topic the name servers know (sorted)."""
        resp = await self._namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return sorted(TopicList.from_json(resp.payload or b"{}").topic_list)

    async def topic_stats(self, topic: str) -> dict[MessageQueue, Any]:
        """Min/max offset and last update time of every queue of ``topic`` (``TopicOffset`` values)."""
        route = await self.topic_route(topic)
        table: dict[MessageQueue, Any] = {}
        for bd in route.broker_datas:
            addr = master_of(bd)
            if addr is None:
                continue
            table.update((await self.broker_topic_stats(addr, topic)).offset_table)
        return dict(sorted(table.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id)))

    # -- one broker (Apache's MQAdminExt calls that take a broker address) ------------------------
    async def broker_topic_configs(self, broker_addr: str) -> dict[str, TopicConfig]:
        """Every topic config the broker at ``broker_addr`` holds (GET_ALL_TOPIC_CONFIG)."""
        resp = await self._broker(broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        return dict(TopicConfigSerializeWrapper.from_json(resp.payload or b"{}").topic_config_table)

    async def broker_subscription_groups(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        """Every subscription group config the broker holds (GET_ALL_SUBSCRIPTIONGROUP_CONFIG)."""
        resp = await self._broker(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        return dict(SubscriptionGroupWrapper.from_json(resp.payload or b"{}").subscription_group_table)

    async def delete_subscription_group(self, group: str, broker_addr: str) -> None:
        """Remove ``group``'s config from one broker (DELETE_SUBSCRIPTIONGROUP)."""
        await self._broker(broker_addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": group})

    async def broker_consume_stats(self, broker_addr: str, group: str) -> ConsumeStats:
        """``group``'s offsets and lag on one broker (GET_CONSUME_STATS)."""
        resp = await self._broker(broker_addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": group})
        return ConsumeStats.from_json(resp.payload or b"{}")

    async def broker_topic_stats(self, broker_addr: str, topic: str) -> TopicStatsTable:
        """Min/max offsets of ``topic``'s queues on one broker (GET_TOPIC_STATS_INFO)."""
        resp = await self._broker(broker_addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic})
        return TopicStatsTable.from_json(resp.payload or b"{}")

    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        """A broker's configuration (GET_BROKER_CONFIG), key → value."""
        resp = await self._broker(broker_addr, RequestCode.GET_BROKER_CONFIG)
        return parse_properties(bytes(resp.payload or b"").decode("utf-8", "replace"))

    async def update_broker_config(self, broker_addr: str, key: str, value: str) -> None:
        """Ask a broker to change one setting at run time (UPDATE_BROKER_CONFIG; pyrocketmq brokers
        refuse)."""
        await self._broker(broker_addr, RequestCode.UPDATE_BROKER_CONFIG, body=f"{key}={value}\n".encode())

    async def producer_connection(self, group: str, topic: str) -> ProducerConnection:
        """The producers of ``group`` connected to a master serving ``topic``."""
        route = await self.topic_route(topic)
        for bd in sorted(route.broker_datas, key=lambda b: b.broker_name):
            addr = master_of(bd)
            if addr:
                resp = await self._broker(
                    addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": group}
                )
                return ProducerConnection.from_json(resp.payload or b"{}")
        raise MQClientError(f"topic {topic!r} has no master broker in its route")

    async def consumer_status(
        self, group: str, topic: str, client_id: str = ""
    ) -> dict[str, dict[MessageQueue, int]]:
        """The offsets on ``topic`` each online consumer of ``group`` holds (or the one ``client_id``)."""
        route = await self.topic_route(topic)
        for bd in sorted(route.broker_datas, key=lambda b: b.broker_name):
            addr = master_of(bd)
            if addr:
                resp = await self._broker(addr, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                                          {"topic": topic, "group": group, "clientAddr": client_id})
                return GetConsumerStatusBody.from_json(resp.payload or b"{}").consumer_table
        raise MQClientError(f"topic {topic!r} has no master broker in its route")

    async def clone_group_offset(
        self, src: str, dest: str, topic: str, *, offline: bool = False
    ) -> list[str]:
        """Copy ``src``'s committed offsets on ``topic`` to ``dest`` on every master (CLONE_GROUP_OFFSET)."""
        route = await self.topic_route(topic)
        done = []
        for bd in route.broker_datas:
            addr = master_of(bd)
            if addr:
                await self._broker(addr, RequestCode.CLONE_GROUP_OFFSET,
                                   {"srcGroup": src, "destGroup": dest, "topic": topic, "offline": offline})
                done.append(addr)
        return done

    async def topic_clusters(self, topic: str) -> list[str]:
        """The clusters whose brokers serve ``topic``."""
        route, info = await self.topic_route(topic), await self.cluster_info()
        names = {bd.broker_name for bd in route.broker_datas}
        return sorted(c for c, members in info.cluster_addr_table.items() if names & set(members))

    async def broker_runtime_info(self, broker_addr: str) -> dict[str, str]:
        """The broker's runtime KV table (version, TPS, disk use …)."""
        resp = await self._broker(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        doc = orjson.loads(resp.payload or b"{}")
        return {str(k): str(v) for k, v in (doc.get("table") or {}).items()}

    # -- subscription groups --------------------------------------------------------------------
    async def create_subscription_group(
        self, config: SubscriptionGroupConfig, *, broker_addr: str | None = None, cluster: str | None = None
    ) -> list[str]:
        """Create or update a consumer group on one broker or every master of ``cluster``; the
        brokers it was sent to."""
        if not config.group_name:
            raise MQClientError("the group name is empty")
        targets = await self.target_brokers(broker_addr, cluster)
        body = config.to_json()
        await asyncio.gather(
            *(self._broker(a, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body) for a in targets)
        )
        return targets

    async def consume_stats(
        self, group: str, topic: str | None = None
    ) -> tuple[dict[MessageQueue, Any], float]:
        """The group's progress per queue (``OffsetWrapper``: broker offset, consumer offset, last
        timestamp) and its total consume TPS, merged over the brokers."""
        table: dict[MessageQueue, Any] = {}
        tps = 0.0
        fields = {"consumerGroup": group, "topic": topic}
        for addr in await self._group_brokers(group, topic):
            resp = await self._broker(addr, RequestCode.GET_CONSUME_STATS, fields)
            stats = ConsumeStats.from_json(resp.payload or b"{}")
            table.update(stats.offset_table)
            tps += float(stats.consume_tps or 0.0)
        ordered = dict(sorted(table.items(), key=lambda kv: (kv[0].topic, kv[0].broker_name, kv[0].queue_id)))
        return ordered, tps

    async def consumer_ids(self, group: str) -> list[str]:
        """Client ids of the group's online consumers (GET_CONSUMER_LIST_BY_GROUP); [] when none."""
        ids: set[str] = set()
        for addr in await self._group_brokers(group):
            resp = await self.instance.invoke(
                addr,
                RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}),
            )
            if resp.code == ResponseCode.SUCCESS and resp.body:
                ids.update(orjson.loads(resp.payload).get("consumerIdList") or [])
        return sorted(ids)

    async def consumer_connection(self, group: str) -> ConsumerConnection:
        """The group's members (client id, address, language, version) and subscriptions.

        Asks GET_CONSUMER_CONNECTION_LIST (203); a broker that does not implement it is asked
        GET_CONSUMER_LIST_BY_GROUP (38) and only the client ids are filled in.
        """
        for addr in await self._group_brokers(group):
            resp = await self.instance.invoke(
                addr,
                RemotingCommand.request(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}),
            )
            if resp.code == ResponseCode.SUCCESS and resp.body:
                conn = ConsumerConnection.from_json(resp.payload)
                if conn.connection_set:
                    return conn
            elif resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                ids = await self.consumer_ids(group)
                if ids:
                    return ConsumerConnection(connection_set=[ClientConnection(client_id=i) for i in ids])
        raise MQBrokerError.for_code(
            ResponseCode.CONSUMER_NOT_ONLINE, f"no consumer of group {group} is connected", None
        )

    # -- messages -------------------------------------------------------------------------------
    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """The message stored at the broker address and commitlog offset encoded in the id."""
        try:
            ip, port, offset = decode_offset_msg_id(offset_msg_id)
        except ValueError as e:
            raise MQClientError(f"{offset_msg_id!r} is not an offset message id: {e}") from None
        if not 0 < port < 65536:
            raise MQClientError(f"{offset_msg_id!r} is not an offset message id: it names port {port}")
        addr = f"{ip}:{port}"
        resp = await self._broker(addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": offset})
        msgs = lookups.decode(resp.payload, addr)
        if not msgs:
            raise MQBrokerError.for_code(ResponseCode.QUERY_NOT_FOUND, f"no message at offset {offset}", addr)
        return msgs[0]

    async def query_message_by_key(self, topic: str, key: str, begin_ms: int = 0, end_ms: int = 2**63 - 1,
                                   max_num: int = 64) -> list[MessageExt]:
        """Messages of ``topic`` with ``key`` among their KEYS, stored within [begin_ms, end_ms]."""
        return await lookups.by_key(
            self.instance, await self.topic_route(topic), topic, key, begin_ms, end_ms, max_num
        )

    async def query_message_by_unique_key(
        self, topic: str, unique_key: str, max_num: int = 32
    ) -> list[MessageExt]:
        """Messages of ``topic`` whose ``UNIQ_KEY`` (the producer's message id) is ``unique_key``."""
        route = await self.topic_route(topic)
        every = (0, 2**63 - 1)
        return await lookups.by_key(self.instance, route, topic, unique_key, *every, max_num, unique=True)

    query_by_unique_key = query_message_by_unique_key

    async def message_at(self, mq: MessageQueue, offset: int) -> MessageExt:
        """The message at ``offset`` of ``mq`` (mqadmin ``queryMsgByOffset``)."""
        return await lookups.message_at(self.instance, mq, offset)

    async def find_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """By offset id first; then, when a topic is given, by unique id (mqadmin ``queryMsgById``)."""
        first_error: Exception | None = None
        try:
            return await self.view_message(msg_id)
        except (MQClientError, MQBrokerError, MQConnectionError, MQTimeoutError) as e:
            first_error = e
        if topic:
            msgs = await self.query_message_by_unique_key(topic, msg_id)
            if msgs:
                return msgs[0]
            raise MQBrokerError.for_code(
                ResponseCode.QUERY_NOT_FOUND, f"no message with id {msg_id} in topic {topic}"
            )
        first_error.add_note("if this is a unique id (UNIQ_KEY), also give its topic (-t TOPIC)")
        raise first_error

class SyncAdmin(SyncFacade):
    """A blocking :class:`Admin` on the shared background loop thread.

    Example::

        with SyncAdmin("127.0.0.1:9876") as admin:
            admin.create_topic("Orders", cluster="DefaultCluster")
            print(admin.topic_list())
    """

    def __init__(self, namesrv_addr: str = DEFAULT_NAMESRV, client: ClientSettings | None = None,
                 *, loop_thread: LoopThread | None = None) -> None:
        self.admin = Admin(namesrv_addr, client)
        super().__init__(self.admin, loop_thread)

    def __getattr__(self, name: str) -> Any:
        # Every other public coroutine method of Admin, made blocking.
        attr = getattr(self.admin, name)
        if name.startswith("_") or not asyncio.iscoroutinefunction(attr):
            return attr

        def blocking(*args: Any, **kwargs: Any) -> Any:
            return self._lt.run(attr(*args, **kwargs))

        blocking.__doc__ = attr.__doc__
        blocking.__name__ = name
        return blocking
