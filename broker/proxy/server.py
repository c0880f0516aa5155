"""The gRPC server of the 5.x endpoint: grpcio's asyncio server on the broker's event loop.

The service is registered as a generic handler built from the protobuf classes (no generated
``_pb2_grpc`` stubs): each implemented RPC maps its full name to a method of
:class:`~.service.MessagingService`; the RPCs it does not serve answer gRPC UNIMPLEMENTED, and the
first call of each such method is logged (a second generic handler, consulted only when the first has
no handler for the method, so the served RPCs pay nothing for it).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import grpc.aio

from pyrocketmq.remoting.listener import HANDSHAKE_TIMEOUT
from pyrocketmq.remoting.tls import ServerTls, TlsMode

from .auth import Access
from .consume import ConsumeRpcs
from .quota_meter import GrpcMeter
from .service import MessagingService

log = logging.getLogger("pyrocketmq.broker.proxy")

SERVICE = "apache.rocketmq.v2.MessagingService"
MAX_MESSAGE_BYTES = 130 * 1024 * 1024
"""Largest gRPC message taken or sent (a 4 MiB body is far below; RocketMQ's proxy allows 130 MiB)."""


def _handlers(service: MessagingService, consume: ConsumeRpcs, access: Access | None,
              meter: GrpcMeter | None = None) -> dict[str, grpc.RpcMethodHandler[Any, Any]]:
    from .pb import service_pb2 as spb

    def unary(fn: Callable[..., Any], request: Any, response: Any) -> grpc.RpcMethodHandler[Any, Any]:
        return grpc.unary_unary_rpc_method_handler(
            guarded(fn, response, access, meter), request_deserializer=request.FromString,
            response_serializer=response.SerializeToString)

    def streaming(
        fn: Callable[..., Any], request: Any, response: Any, *, client_stream: bool
    ) -> grpc.RpcMethodHandler[Any, Any]:
        make = (
            grpc.stream_stream_rpc_method_handler if client_stream else grpc.unary_stream_rpc_method_handler
        )
        return make(
            guarded_stream(fn, response, access, client_stream, meter),
            request_deserializer=request.FromString,
            response_serializer=response.SerializeToString,
        )

    return {
        "QueryRoute": unary(service.query_route, spb.QueryRouteRequest, spb.QueryRouteResponse),
        "Heartbeat": unary(service.heartbeat, spb.HeartbeatRequest, spb.HeartbeatResponse),
        "SendMessage": unary(service.send_message, spb.SendMessageRequest, spb.SendMessageResponse),
        "EndTransaction": unary(
            service.end_transaction, spb.EndTransactionRequest, spb.EndTransactionResponse
        ),
        "RecallMessage": unary(service.recall_message, spb.RecallMessageRequest, spb.RecallMessageResponse),
        "NotifyClientTermination": unary(
            service.notify_client_termination,
            spb.NotifyClientTerminationRequest,
            spb.NotifyClientTerminationResponse,
        ),
        "QueryAssignment": unary(
            consume.query_assignment, spb.QueryAssignmentRequest, spb.QueryAssignmentResponse
        ),
        "ReceiveMessage": streaming(
            consume.receive_message,
            spb.ReceiveMessageRequest,
            spb.ReceiveMessageResponse,
            client_stream=False,
        ),
        "AckMessage": unary(consume.ack_message, spb.AckMessageRequest, spb.AckMessageResponse),
        "ChangeInvisibleDuration": unary(
            consume.change_invisible_duration,
            spb.ChangeInvisibleDurationRequest,
            spb.ChangeInvisibleDurationResponse,
        ),
        "ForwardMessageToDeadLetterQueue": unary(
            consume.forward_message_to_dead_letter_queue,
            spb.ForwardMessageToDeadLetterQueueRequest,
            spb.ForwardMessageToDeadLetterQueueResponse,
        ),
        "Telemetry": streaming(
            service.telemetry, spb.TelemetryCommand, spb.TelemetryCommand, client_stream=True
        ),
    }


def guarded(
    fn: Callable[..., Awaitable[Any]], response: Any, access: Access | None, meter: GrpcMeter | None = None
) -> Callable[..., Awaitable[Any]]:
    """``fn`` behind the access check (and the caller's quota, ``meter``), answering a status
    INTERNAL_SERVER_ERROR (logged) instead of raising: a bug or an unexpected request reaches the
    client as an ordinary failed call."""
    from .convert import status
    from .pb import definition_pb2 as pb

    async def call(request: Any, context: Any) -> Any:
        refused = access(request, context) if access is not None else None
        if refused is not None:
            return response(status=refused)
        if meter is not None:
            await meter.call(request)
        try:
            return await fn(request, context)
        except Exception as e:
            log.exception("%s failed", getattr(fn, "__name__", "a gRPC call"))
            return response(status=status(pb.INTERNAL_SERVER_ERROR, f"{type(e).__name__}: {e}"))

    return call


def guarded_stream(fn: Callable[..., AsyncIterator[Any]], response: Any, access: Access | None,
                   client_stream: bool, meter: GrpcMeter | None = None) -> Callable[..., AsyncIterator[Any]]:
    """A streaming ``fn`` behind the access check (a Telemetry stream is checked here on who opens it;
    what it announces is checked by the service, message by message)."""

    async def call(request: Any, context: Any) -> AsyncIterator[Any]:
        refused = access(None if client_stream else request, context) if access is not None else None
        if refused is not None:
            yield response(status=refused)
            return
        if meter is not None:
            await meter.call(None if client_stream else request)
        async for item in fn(request, context):
            if meter is not None and not client_stream:
                await meter.item(item)
            yield item

    return call


class Unserved(grpc.GenericRpcHandler):
    """The handler of last resort: logs the first call of each method nobody serves (which client, which
    language), then leaves it to gRPC to answer UNIMPLEMENTED."""

    LIMIT = 256
    """Method names logged at most (they are the callers' strings: the set must not grow without end)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> None:
        method = str(handler_call_details.method)
        if method not in self.seen and len(self.seen) < self.LIMIT:
            self.seen.add(method)
            meta = {k: v for k, v in handler_call_details.invocation_metadata or () if isinstance(v, str)}
            log.warning("gRPC %s (client %s, language %s): not served (UNIMPLEMENTED)", method,
                        meta.get("x-mq-client-id", "?"), meta.get("x-mq-language", "?"))


def credentials(tls: ServerTls) -> grpc.ServerCredentials:
    """gRPC server credentials from the broker's ``tls.server.*`` files (PEM; the key unencrypted)."""
    if tls.key_password:
        raise OSError("the gRPC port needs an unencrypted tls.server.keyPath (tls.server.keyPassword is set)")
    with open(tls.key_path, "rb") as key, open(tls.cert_path, "rb") as cert:
        pair = (key.read(), cert.read())
    roots = None
    if tls.need_client_auth != "none" and tls.trust_cert_path:
        with open(tls.trust_cert_path, "rb") as trust:
            roots = trust.read()
    return grpc.ssl_server_credentials(
        [pair],
        root_certificates=roots,
        require_client_auth=tls.need_client_auth == "require" and roots is not None,
    )


class GrpcServer:
    def __init__(self, service: MessagingService, consume: ConsumeRpcs, access: Access | None = None,
                 meter: GrpcMeter | None = None) -> None:
        self.service = service
        self.consume = consume
        self.access = access
        self.meter = meter
        self.server: grpc.aio.Server | None = None
        self.port = 0

    async def start(self, host: str, port: int, tls: ServerTls | None = None) -> int:
        """Bind ``host:port`` (0 picks a free port) and serve; returns the bound port. With ``tls`` in
        ``enforcing`` mode the port speaks TLS only (gRPC cannot take plaintext and TLS on one port as
        the 4.x ports do in ``permissive`` mode, so permissive leaves the gRPC port plaintext)."""
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 0),
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.http2.min_ping_interval_without_data_ms", 5000),
                (
                    "grpc.server_handshake_timeout_ms",
                    int(HANDSHAKE_TIMEOUT * 1000),
                ),  # as the remoting ports (gRPC: 120 s)
            ]
        )
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    SERVICE, _handlers(self.service, self.consume, self.access, self.meter)
                ),
                Unserved(),
            )
        )
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if tls is not None and tls.mode is TlsMode.ENFORCING:
            bound = server.add_secure_port(address, credentials(tls))
        else:
            bound = server.add_insecure_port(address)
        if bound == 0:
            raise OSError(f"cannot bind the gRPC port {address}")
        await server.start()
        self.server, self.port = server, int(bound)
        return self.port

    async def stop(self, grace: float = 1.0) -> None:
        if self.server is not None:
            await self.server.stop(grace)
            self.server = None
