"""The 5.x endpoint of one broker: gRPC server, service, client sessions and route lookups, wired
from the broker's own parts (composition only; the logic lives in the modules it wires)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pyrocketmq.remoting.transport import Handler, RemotingClient

from .clients import ClientRegistry
from .routes import RouteLookup
from .server import GrpcServer
from .service import MessagingService

if TYPE_CHECKING:
    from ..client_manager import ProducerManager
    from ..settings import BrokerSettings
    from ..store.message_store import MessageStore
    from ..topic_config import TopicConfigManager

log = logging.getLogger("pyrocketmq.broker.proxy")


class GrpcEndpoint:
    def __init__(self, settings: BrokerSettings, *, handlers: Mapping[int, Handler], store: MessageStore,
                 topics: TopicConfigManager, producers: ProducerManager, client: RemotingClient,
                 on_call: Callable[[str, str], None] | None = None) -> None:
        self.settings = settings
        self.routes = RouteLookup(client, settings.network.namesrv_addrs, settings.network.grpc_port or 0)
        self.clients = ClientRegistry(settings.network.client_channel_expiry_ms / 1000)
        self.service = MessagingService(
            handlers=handlers, store=store, topics=topics, producers=producers, routes=self.routes,
            clients=self.clients, max_body_size=settings.store.max_message_size, on_call=on_call)
        self.server = GrpcServer(self.service)
        self.broker_addr = ""

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def grpc_addr(self) -> str:
        return f"{self.settings.network.broker_ip}:{self.server.port}"

    async def start(self, broker_addr: str) -> int:
        n = self.settings.network
        port = await self.server.start(n.bind_address, n.grpc_port or 0)
        self.routes.grpc_port = port
        self.broker_addr = broker_addr
        log.info("RocketMQ 5 gRPC endpoint on %s:%d", n.bind_address, port)
        return port

    async def announce(self) -> None:
        """Tell the name servers where this broker's gRPC endpoint is (repeated with registrations)."""
        await self.routes.announce(self.broker_addr, self.grpc_addr)

    def expire_clients(self) -> None:
        self.service.expire()

    async def stop(self) -> None:
        for session in list(self.clients.sessions.values()):
            session.end_stream()
        await self.server.stop()
        if self.broker_addr:
            await self.routes.withdraw(self.broker_addr)
