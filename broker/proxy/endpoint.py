"""The 5.x endpoint of one broker: gRPC server, service, client sessions and route lookups, wired
from the broker's own parts (composition only; the logic lives in the modules it wires)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import Handler, call_handler
from pyrocketmq.server.acl import AclValidator
from pyrocketmq.server.acl_service import UserAccess

from ..quota import QuotaTable
from .auth import GrpcAccess
from .clients import ClientRegistry, ClientSession
from .consume import ConsumeRpcs
from .pb import definition_pb2 as pb
from .pop import PopService
from .quota_meter import GrpcMeter
from .routes import RouteLookup
from .server import GrpcServer
from .service import ClientTerms, MessagingService, peer_of

if TYPE_CHECKING:
    from ..client_manager import ProducerManager
    from ..consumer_offset import ConsumerOffsetManager
    from ..settings import BrokerSettings
    from ..store.message_store import MessageStore
    from ..subscription_group import SubscriptionGroupManager
    from ..topic_config import TopicConfigManager

log = logging.getLogger("pyrocketmq.broker.proxy")


@dataclass(frozen=True)
class EndpointObservers:
    """What the broker's metrics hear from the 5.x endpoint."""

    on_call: Callable[[str, str], None]
    """Every answered call's RPC name and status code."""
    observe_receive: Callable[[float], None]
    """Seconds each ReceiveMessage call that handed out messages took."""


class GrpcEndpoint:
    def __init__(self, settings: BrokerSettings, *, handlers: Mapping[int, Handler], store: MessageStore,
                 topics: TopicConfigManager, groups: SubscriptionGroupManager, offsets: ConsumerOffsetManager,
                 producers: ProducerManager, client: RemotingClient, acl: AclValidator | None = None,
                 users: UserAccess | None = None, quotas: QuotaTable | None = None,
                 observers: EndpointObservers | None = None) -> None:
        self.settings = settings
        self.handlers = handlers
        self.routes = RouteLookup(client, settings.network.namesrv_addrs, settings.network.grpc_port or 0)
        self.clients = ClientRegistry(settings.network.client_channel_expiry_ms / 1000)
        self._internal = ClientSession("%broker%", "127.0.0.1:0")
        self.pop = PopService(store, offsets, os.path.join(settings.store.config_dir, "popState.json"),
                              settings.identity.broker_name, self._send_back)
        self.access = GrpcAccess(acl, users) if acl is not None or users is not None else None
        """ACL 1.0 (``acl``, the plain_acl.yml accounts) and ACL 2.0 (``users``) on every call."""
        refusal = self._refusal if self.access is not None else None
        self.service = MessagingService(
            handlers=handlers, store=store, topics=topics, producers=producers, routes=self.routes,
            clients=self.clients, groups=groups, access=refusal, broker_name=settings.identity.broker_name,
            terms=ClientTerms(settings.store.max_message_size, settings.store.delay_levels_ms[2:]),
            on_call=observers.on_call if observers is not None else None)
        self.consume = ConsumeRpcs(
            pop=self.pop,
            topics=topics,
            groups=groups,
            routes=self.routes,
            clients=self.clients,
            sql_enabled=settings.pull.property_filter,
            broker_name=settings.identity.broker_name,
            seen=self.service.seen,
            observe_receive=observers.observe_receive if observers is not None else None,
        )
        self.server = GrpcServer(self.service, self.consume, refusal,
                                 GrpcMeter(quotas) if quotas is not None else None)  # fmt: skip
        self.broker_addr = ""

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def grpc_addr(self) -> str:
        return f"{self.settings.network.broker_ip}:{self.server.port}"

    def _refusal(self, request: object, context: Any) -> pb.Status | None:
        assert self.access is not None
        peer_certs = (context.auth_context() or {}).get("x509_pem_cert") or [None]
        refusal = self.access.refusal(
            context.invocation_metadata() or (), peer_of(context).rpartition(":")[0].strip("[]"), request,
            peer_cert=peer_certs[0],
        )
        if refusal is not None:
            log.warning("5.x call from %s refused: %s", peer_of(context), refusal.message)
        return refusal

    async def _send_back(self, cmd: RemotingCommand) -> RemotingCommand | None:
        return await call_handler(self.handlers, self._internal.channel, cmd, "5.x endpoint")

    async def start(self, broker_addr: str) -> int:
        self.pop.load()
        n = self.settings.network
        port = await self.server.start(n.bind_address, n.grpc_port or 0, n.tls)
        self.routes.grpc_port = port
        self.broker_addr = broker_addr
        log.info("RocketMQ 5 gRPC endpoint on %s:%d", n.bind_address, port)
        return port

    async def announce(self) -> None:
        """Tell the name servers where this broker's gRPC endpoint is (repeated with registrations)."""
        await self.routes.announce(self.broker_addr, self.grpc_addr)

    def expire_clients(self) -> None:
        self.service.expire()

    def renew_and_persist(self) -> None:
        """Every second: auto-renewed leases pushed out, the POP table written if it changed."""
        self.consume.renew_leases()
        self.pop.persist()

    async def stop(self) -> None:
        for session in list(self.clients.sessions.values()):
            session.end_stream()
        await self.server.stop()
        self.pop.persist(force=True)
        if self.broker_addr:
            await self.routes.withdraw(self.broker_addr)
