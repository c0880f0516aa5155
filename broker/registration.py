"""Registration with the name servers: at start, every 30 s, and right after a topic change.

Every name server gets the same REGISTER_BROKER (they never talk to each other). The body is the
topic table with its data version; ``bodyCrc32`` lets the name server reject a damaged body.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from pyrocketmq.remoting.acl_sign import sign as acl_sign
from pyrocketmq.remoting.body import RegisterBrokerBody
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.log_limit import RateLimitedLog
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import RemotingError
from pyrocketmq.server.auth_settings import outgoing_account

if TYPE_CHECKING:
    from .settings import BrokerSettings
    from .topic_config import TopicConfigManager

log = logging.getLogger("pyrocketmq.broker")
_unconfirmed = RateLimitedLog(log, burst=1, window=60.0)
"""The name-server catch-up asks every 2 s: say it once a minute while the role stays unconfirmed."""

CATCH_UP_INTERVAL = 2.0
"""Seconds between checks that every name server holds this broker's registration."""


def outgoing_client(settings: BrokerSettings) -> RemotingClient:
    """A client for this broker's own requests: TLS as configured, signed with ACL 2.0's
    ``innerClientAuthenticationCredentials`` when set, else ACL 1.0's ``accessKey``/``secretKey``."""
    n = settings.network
    account = outgoing_account(settings.auth, n.access_key, n.secret_key)
    sign = None if account is None else functools.partial(acl_sign, access_key=account[0],
                                                          secret_key=account[1])
    return RemotingClient(ssl=n.client_tls.context(), sign=sign)


class Registrar:
    def __init__(self, settings: BrokerSettings, topics: TopicConfigManager) -> None:
        self.settings = settings
        self.topics = topics
        self.port = 0
        """The broker's listen port, set once it is bound."""
        self.client = outgoing_client(settings)
        self.registered: set[str] = set()
        self._soon: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self.master_addr: str | None = None
        self.ha_server_addr: str | None = None
        """The master's HA address, from a slave's registration response."""
        self.controller_mode = False
        """The controller, not the name servers, says who the master is: their answers are not followed."""
        self.registered_as: tuple[str, int] | None = None
        """The address and broker id of the last registration a name server accepted."""
        self.role_fresh: Callable[[], bool] | None = None
        """Controller mode: False while the master role is not recently confirmed by a controller
        (a master resuming from a pause must not reclaim brokerId 0 before it learns it was replaced)."""

    @property
    def addr(self) -> str:
        return f"{self.settings.network.broker_ip}:{self.port}"

    @property
    def ha_addr(self) -> str:
        return f"{self.settings.network.broker_ip}:{self.port + 1}"

    async def announced_addr(self) -> str:
        """The address the name servers route to: ``masterServiceAddr`` (resolved) while this broker
        is its group's master and one is set, else ``addr``."""
        service = self.settings.network.master_service_addr
        if not service or self.settings.identity.broker_id != 0:
            return self.addr
        host, _, port = service.rpartition(":")
        try:
            found = await asyncio.get_running_loop().getaddrinfo(host, int(port), family=socket.AF_INET,
                                                                  type=socket.SOCK_STREAM)
        except OSError as e:
            log.warning("masterServiceAddr %s does not resolve (%s): registering %s", service, e, self.addr)
            return self.addr
        return f"{found[0][4][0]}:{port}"

    def _header(self, addr: str) -> dict[str, object]:
        s = self.settings
        return {
            "brokerName": s.identity.broker_name,
            "brokerAddr": addr,
            "clusterName": s.identity.cluster_name,
            "haServerAddr": self.ha_addr,
            "brokerId": s.identity.broker_id,
            "compressed": False,
        }

    async def register_all(self) -> int:
        """Register with every name server now; how many accepted."""
        if self.settings.identity.broker_id == 0 and self.role_fresh is not None and not self.role_fresh():
            _unconfirmed.info("not registering as master: the role is not confirmed by a controller lately")
            return 0
        body = RegisterBrokerBody(
            topic_config_serialize_wrapper=self.topics.wrapper(), filter_server_list=[]
        ).to_json()
        announced = await self.announced_addr()
        ext = self._header(announced)
        ext["bodyCrc32"] = zlib.crc32(body) & 0x7FFFFFFF
        results = await asyncio.gather(
            *(self._register_one(addr, ext, body) for addr in self.settings.network.namesrv_addrs),
            return_exceptions=True,
        )
        accepted = sum(1 for r in results if r is True)
        if accepted:
            before, self.registered_as = self.registered_as, (announced, self.settings.identity.broker_id)
            if before is not None and before[0] == self.addr != announced:
                # a slave became the master behind the service address: its own address leaves the route
                await self._unregister(*before)
        return accepted

    async def _register_one(self, addr: str, ext: dict[str, object], body: bytes) -> bool:
        try:
            resp = await self.client.invoke(
                addr, RemotingCommand.request(RequestCode.REGISTER_BROKER, ext, body), 6.0
            )
        except RemotingError as e:
            if addr in self.registered:
                log.warning("registering with name server %s failed: %s", addr, e)
            else:
                log.info("name server %s not reachable yet: %s", addr, e)
            self.registered.discard(addr)
            return False
        if resp.code != ResponseCode.SUCCESS:
            log.warning("name server %s refused the registration: %s %s", addr, resp.code, resp.remark)
            return False
        if addr not in self.registered:
            log.info("registered with name server %s", addr)
        self.registered.add(addr)
        master = resp.ext_fields.get("masterAddr")
        if self.controller_mode:
            return True
        if master:
            self.master_addr = master
        ha = resp.ext_fields.get("haServerAddr")
        if ha:
            self.ha_server_addr = ha
        return True

    async def unregister_all(self) -> None:
        """Leave every name server's route. The master Service's address only as a master whose role a
        controller confirmed lately: a deposed master (frozen, then stopped) would take its successor,
        which registers the same address, out of the routes."""
        broker_id = self.settings.identity.broker_id
        addr = self.addr
        if broker_id == 0 and (self.role_fresh is None or self.role_fresh()):
            addr = await self.announced_addr()
        await self._unregister(addr, broker_id)

    async def _unregister(self, broker_addr: str, broker_id: int) -> None:
        s = self.settings
        ext = {
            "brokerName": s.identity.broker_name,
            "brokerAddr": broker_addr,
            "clusterName": s.identity.cluster_name,
            "brokerId": broker_id,
        }
        for addr in s.network.namesrv_addrs:
            try:
                await self.client.invoke(
                    addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, ext), 3.0
                )
            except RemotingError as e:
                log.info("unregistering from %s failed: %s", addr, e)

    async def catch_up(self) -> None:
        """Register now when a name server has not taken this broker's registration yet or its
        connection closed since (it stopped: a new one at its address, a restarted pod, knows no
        broker): a name server that starts learns every broker within seconds, not at the next
        period."""
        addrs = self.settings.network.namesrv_addrs
        if any(a not in self.registered or not self.client.connected(a) for a in addrs):
            await self.register_all()

    def register_soon(self) -> None:
        """Topic change: register within a moment (changes in one burst share one registration)."""
        if self._soon is None:
            loop = asyncio.get_running_loop()
            self._soon = loop.call_later(0.05, self._fire)

    def _fire(self) -> None:
        self._soon = None
        asyncio.ensure_future(self.register_all())

    async def close(self) -> None:
        if self._soon is not None:
            self._soon.cancel()
        await self.client.close()
