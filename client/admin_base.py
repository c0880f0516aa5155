"""What every family of admin requests stands on: the admin's life (a shared client instance
acquired on start, released on shutdown), one request to a name server or a broker with its
answer checked, and where requests go (the cluster's masters, a topic's route, the brokers that
hold a group's progress).

:class:`~.admin.Admin` is this plus its request families (:mod:`.admin` for topics, brokers,
groups and messages; :mod:`.admin_offsets` for offsets).
"""

from __future__ import annotations

from typing import Any, Self

from pyrocketmq.remoting.body import BrokerData, ClusterInfo, TopicRouteData
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.names import RETRY_GROUP_TOPIC_PREFIX

from .errors import MQBrokerError, MQClientError
from .instance import ClientInstance
from .request_errors import check_response
from .route import MASTER_ID
from .settings import DEFAULT_NAMESRV, ClientSettings


def master_of(bd: BrokerData) -> str | None:
    """The address of the master of broker group ``bd`` (None when it has none)."""
    return {int(k): v for k, v in (bd.broker_addrs or {}).items()}.get(MASTER_ID)


class AdminBase:
    """The admin's life and plumbing (see the module docstring)."""

    def __init__(self, namesrv_addr: str = DEFAULT_NAMESRV, client: ClientSettings | None = None) -> None:
        self.client_settings = client or ClientSettings()
        self.client_settings.namesrv_addr = namesrv_addr or self.client_settings.namesrv_addr
        self._instance: ClientInstance | None = None

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise MQClientError("the admin is not started: call 'await admin.start()' first")
        return self._instance

    async def start(self) -> None:
        if self._instance is None:
            self._instance = ClientInstance.acquire(self.client_settings)

    async def shutdown(self) -> None:
        inst, self._instance = self._instance, None
        if inst is not None:
            await inst.release()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # -- one request ----------------------------------------------------------------------------
    async def _namesrv(
        self, code: int, fields: dict[str, Any] | None = None, body: bytes | None = None
    ) -> RemotingCommand:
        resp, addr = await self.instance.invoke_namesrv(RemotingCommand.request(code, fields, body))
        return check_response(resp, addr)

    async def _broker(self, addr: str, code: int, fields: dict[str, Any] | None = None,
                      body: bytes | None = None, timeout: float | None = None) -> RemotingCommand:
        resp = await self.instance.invoke(addr, RemotingCommand.request(code, fields, body), timeout)
        return check_response(resp, addr)

    # -- where requests go ----------------------------------------------------------------------
    async def cluster_info(self) -> ClusterInfo:
        resp = await self._namesrv(RequestCode.GET_BROKER_CLUSTER_INFO)
        return ClusterInfo.from_json(resp.payload or b"{}")

    async def master_addrs_of_cluster(self, cluster: str) -> list[str]:
        """Addresses of the masters of ``cluster`` (sorted by broker name)."""
        info = await self.cluster_info()
        names = info.cluster_addr_table.get(cluster)
        if names is None:
            known = ", ".join(sorted(info.cluster_addr_table)) or "none"
            raise MQClientError(f"cluster {cluster!r} is not known to the name server (known: {known})")
        out = []
        for name in sorted(names):
            bd = info.broker_addr_table.get(name)
            addr = master_of(bd) if bd is not None else None
            if addr:
                out.append(addr)
        return out

    async def target_brokers(self, broker_addr: str | None, cluster: str | None) -> list[str]:
        """``[broker_addr]``, or the masters of ``cluster`` (exactly one must be given; mqadmin's
        -b/-c)."""
        if bool(broker_addr) == bool(cluster):
            raise MQClientError("give exactly one of broker_addr (-b) and cluster (-c)")
        if broker_addr:
            return [broker_addr]
        addrs = await self.master_addrs_of_cluster(cluster or "")
        if not addrs:
            raise MQClientError(f"cluster {cluster!r} has no master broker registered")
        return addrs

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The topic's route; :class:`~.errors.TopicNotFoundError` when it has none."""
        route = await self.instance.fetch_route(topic)
        if route is None:
            ns = self.instance.namesrv_addrs[0]
            raise MQBrokerError.for_code(ResponseCode.TOPIC_NOT_EXIST, f"no route info of topic {topic}", ns)
        return route

    async def _group_brokers(self, group: str, topic: str | None = None) -> list[str]:
        """The masters holding ``group``'s progress: those of ``topic`` when it is named (its rows
        are there, also where the group never heartbeat and so has no retry topic yet), else those
        of the group's retry topic, else every master of the cluster."""
        route = await self.instance.fetch_route(topic or RETRY_GROUP_TOPIC_PREFIX + group)
        if route is not None:
            return [a for bd in route.broker_datas if (a := master_of(bd))]
        info = await self.cluster_info()
        return [a for bd in info.broker_addr_table.values() if (a := master_of(bd))]
