"""Request handlers of the name server: request code → :class:`RouteInfoManager` / KV call → answer.

Every handler answers synchronously (the state is in memory), never raises for a bad request
(a malformed header or body gets SYSTEM_ERROR with a remark saying which field or why), and
follows the Java name server's answers (PROTOCOL.md §2, §6):

- REGISTER_BROKER refuses a broker or cluster name that is no name and an address that is no
  ``host:port`` (SYSTEM_ERROR, the remark says which), checks ``bodyCrc32`` (``crc32(body) &
  0x7FFFFFFF``; 0 = unchecked), reads a plain or zlib-compressed body (refused, not inflated, past
  :data:`~pyrocketmq.remoting.body.MAX_INFLATED_REGISTER_BODY`), answers ``masterAddr``/
  ``haServerAddr`` for a slave and the ORDER_TOPIC_CONFIG namespace as a KVTable body (or no body);
- GET_ROUTEINFO_BY_TOPIC answers TOPIC_NOT_EXIST with no body when the topic has no route, and
  adds ``orderTopicConf`` from ORDER_TOPIC_CONFIG when present;
- KV reads of a missing item answer QUERY_NOT_FOUND.

Codes not handled here are answered by the transport (REQUEST_CODE_NOT_SUPPORTED). Whatever a
peer makes the name server log is rate-limited (:class:`~pyrocketmq.remoting.log_limit.RateLimitedLog`).
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable
from typing import TypeVar

from pyrocketmq.remoting.address import address_problem
from pyrocketmq.remoting.body import DataVersion, RegisterBrokerBody, TopicList
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import (
    DeleteTopicRequestHeader,
    Header,
    HeaderError,
)
from pyrocketmq.remoting.log_limit import RateLimitedLog
from pyrocketmq.remoting.names import check_broker_name
from pyrocketmq.remoting.namesrv_header import (
    DeleteKVConfigRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from pyrocketmq.remoting.transport import Connection, Handler, HandlerRegistry
from pyrocketmq.server.config_checks import MAX_ROUTED_QUEUE_NUMS, topic_config_problem

from .kv_config import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from .route_info import RouteInfoManager

log = logging.getLogger("pyrocketmq.namesrv")


def registration_problem(h: RegisterBrokerRequestHeader) -> str | None:
    """Why a REGISTER_BROKER header names no broker we can route to, or None."""
    if h.broker_id < 0:
        return f"brokerId {h.broker_id} is negative: 0 is the master, 1.. the slaves"
    for what, name in (("brokerName", h.broker_name), ("clusterName", h.cluster_name)):
        if (problem := check_broker_name(name, what)) is not None:
            return problem
    if (problem := address_problem(h.broker_addr)) is not None:
        return f"brokerAddr: {problem}"
    if h.ha_server_addr and (problem := address_problem(h.ha_server_addr)) is not None:
        return f"haServerAddr: {problem}"
    return None


def _ms() -> int:
    return time.time_ns() // 1_000_000


class _BadRequest(Exception):
    pass


_H = TypeVar("_H", bound=Header)


def _header(cls: type[_H], cmd: RemotingCommand) -> _H:
    try:
        return cls.from_command(cmd)
    except HeaderError as e:
        raise _BadRequest(str(e)) from None


class NamesrvProcessor:
    """Handlers bound to one name server's state; :meth:`register` puts them on a server."""

    def __init__(self, routes: RouteInfoManager, kv: KVConfigManager, clock: Callable[[], int] = _ms) -> None:
        self.routes = routes
        self.kv = kv
        self.clock = clock
        self._refusals = RateLimitedLog(log)

    def handlers(self) -> dict[int, Handler]:
        table: dict[int, Callable[[Connection, RemotingCommand], RemotingCommand]] = {
            RequestCode.REGISTER_BROKER: self.handle_register_broker,
            RequestCode.UNREGISTER_BROKER: self.handle_unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.handle_get_route,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.handle_cluster_info,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.handle_all_topics,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.handle_topics_by_cluster,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.handle_delete_topic,
            RequestCode.PUT_KV_CONFIG: self.handle_put_kv,
            RequestCode.GET_KV_CONFIG: self.handle_get_kv,
            RequestCode.DELETE_KV_CONFIG: self.handle_delete_kv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.handle_kv_list,
            RequestCode.QUERY_DATA_VERSION: self.handle_query_data_version,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.handle_wipe_write_perm,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.handle_system_topics,
        }
        return {int(code): self._guarded(fn) for code, fn in table.items()}

    def register(self, server: HandlerRegistry) -> None:
        for code, handler in self.handlers().items():
            server.register(code, handler)

    def _guarded(self, fn: Callable[[Connection, RemotingCommand], RemotingCommand]) -> Handler:
        def handle(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            try:
                return fn(conn, cmd)
            except _BadRequest as e:
                self._refusals.warning("bad request code %d from %s: %.300s", cmd.code,
                                       conn.remote_addr if conn else "?", e)
                return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))

        handle.__name__ = fn.__name__
        return handle

    # -- brokers ------------------------------------------------------------------------------------
    def handle_register_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h: RegisterBrokerRequestHeader = _header(RegisterBrokerRequestHeader, cmd)
        if (problem := registration_problem(h)) is not None:
            raise _BadRequest(f"register refused: {problem}")
        body = bytes(cmd.payload) if cmd.body else b""
        if h.body_crc32 != 0:
            crc = zlib.crc32(body) & 0x7FFFFFFF
            if crc != h.body_crc32:
                self._refusals.warning("register from %s (%s): body crc32 %d, header says %d", h.broker_addr,
                                       h.broker_name, crc, h.body_crc32)
                return cmd.response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        if body:
            try:
                reg = RegisterBrokerBody.decode(body, h.compressed)
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                raise _BadRequest(f"Failed to decode RegisterBrokerBody: {e}") from None
        else:
            reg = RegisterBrokerBody()
            reg.topic_config_serialize_wrapper.data_version = DataVersion(0, 0)
        table = reg.topic_config_serialize_wrapper.topic_config_table
        for name, config in list(table.items()):
            problem = topic_config_problem(config, MAX_ROUTED_QUEUE_NUMS) or (
                None if name == config.topic_name else "its key is not its name"
            )
            if problem is not None:  # not routed; the rest of the registration stands
                del table[name]
                self._refusals.warning(
                    "register from %s (%s): topic %r not routed: %s",
                    h.broker_addr,
                    h.broker_name,
                    name[:64],
                    problem,
                )
        result = self.routes.register_broker(
            h.cluster_name,
            h.broker_addr,
            h.broker_name,
            h.broker_id,
            h.ha_server_addr,
            reg.topic_config_serialize_wrapper,
            reg.filter_server_list,
            conn,
            self.clock(),
        )
        ext = RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
        ).to_ext()
        return cmd.response(
            ResponseCode.SUCCESS, ext_fields=ext, body=self.kv.namespace_body(NAMESPACE_ORDER_TOPIC_CONFIG)
        )

    def handle_unregister_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h: UnRegisterBrokerRequestHeader = _header(UnRegisterBrokerRequestHeader, cmd)
        self.routes.unregister_broker(h.cluster_name, h.broker_addr, h.broker_name, h.broker_id)
        return cmd.response(ResponseCode.SUCCESS)

    def handle_query_data_version(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h: QueryDataVersionRequestHeader = _header(QueryDataVersionRequestHeader, cmd)
        try:
            version = DataVersion.from_json(cmd.payload) if cmd.body else DataVersion()
        except ValueError as e:
            raise _BadRequest(f"bad DataVersion body: {e}") from None
        changed, ours = self.routes.query_data_version(h.broker_addr, version, self.clock())
        ext = QueryDataVersionResponseHeader(changed=changed).to_ext()
        return cmd.response(
            ResponseCode.SUCCESS, ext_fields=ext, body=None if ours is None else ours.to_json()
        )

    def handle_wipe_write_perm(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h: WipeWritePermOfBrokerRequestHeader = _header(WipeWritePermOfBrokerRequestHeader, cmd)
        count = self.routes.wipe_write_perm(h.broker_name)
        self.routes.events.info(
            "write permission of broker %.127s wiped on %d topics (from %s)",
            h.broker_name,
            count,
            conn.remote_addr,
        )
        return cmd.response(
            ResponseCode.SUCCESS, ext_fields=WipeWritePermOfBrokerResponseHeader(count).to_ext()
        )

    # -- routes and topics ----------------------------------------------------------------------------
    def handle_get_route(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h: GetRouteInfoRequestHeader = _header(GetRouteInfoRequestHeader, cmd)
        route = self.routes.pick_route(h.topic)
        if route is None:
            return cmd.response(
                ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {h.topic}"
            )
        route.order_topic_conf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, h.topic)
        # Java picks fastjson's bare numeric keys for old clients; quoted keys parse everywhere
        return cmd.response(ResponseCode.SUCCESS, body=route.to_json())

    def handle_cluster_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, body=self.routes.cluster_info().to_json())

    def handle_all_topics(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, body=TopicList(self.routes.all_topics()).to_json())

    def handle_topics_by_cluster(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h: GetTopicsByClusterRequestHeader = _header(GetTopicsByClusterRequestHeader, cmd)
        return cmd.response(
            ResponseCode.SUCCESS, body=TopicList(self.routes.topics_by_cluster(h.cluster)).to_json()
        )

    def handle_system_topics(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        topics, master = self.routes.system_topics()
        return cmd.response(ResponseCode.SUCCESS, body=TopicList(topics, master).to_json())

    def handle_delete_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h: DeleteTopicRequestHeader = _header(DeleteTopicRequestHeader, cmd)
        if self.routes.delete_topic(h.topic, h.cluster_name):
            where = f" on cluster {h.cluster_name[:127]}" if h.cluster_name else ""
            self.routes.events.info("topic %s deleted%s (requested by %s)", h.topic, where, conn.remote_addr)
        return cmd.response(ResponseCode.SUCCESS)

    # -- KV config ----------------------------------------------------------------------------------
    def handle_put_kv(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h: PutKVConfigRequestHeader = _header(PutKVConfigRequestHeader, cmd)
        self.kv.put(h.namespace, h.key, h.value)
        return cmd.response(ResponseCode.SUCCESS)

    def handle_get_kv(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h: GetKVConfigRequestHeader = _header(GetKVConfigRequestHeader, cmd)
        value = self.kv.get(h.namespace, h.key)
        if value is None:
            return cmd.response(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace} Key: {h.key}"
            )
        return cmd.response(ResponseCode.SUCCESS, ext_fields=GetKVConfigResponseHeader(value).to_ext())

    def handle_delete_kv(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h: DeleteKVConfigRequestHeader = _header(DeleteKVConfigRequestHeader, cmd)
        self.kv.delete(h.namespace, h.key)
        return cmd.response(ResponseCode.SUCCESS)

    def handle_kv_list(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h: GetKVListByNamespaceRequestHeader = _header(GetKVListByNamespaceRequestHeader, cmd)
        body = self.kv.namespace_body(h.namespace)
        if body is None:
            return cmd.response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace}")
        return cmd.response(ResponseCode.SUCCESS, body=body)
