"""The gRPC server of the 5.x endpoint: grpcio's asyncio server on the broker's event loop.

The service is registered as a generic handler built from the protobuf classes (no generated
``_pb2_grpc`` stubs): each implemented RPC maps its full name to a method of
:class:`~.service.MessagingService`; the RPCs it does not serve answer gRPC UNIMPLEMENTED.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import grpc.aio

from .consume import ConsumeRpcs
from .service import MessagingService

log = logging.getLogger("pyrocketmq.broker.proxy")

SERVICE = "apache.rocketmq.v2.MessagingService"
MAX_MESSAGE_BYTES = 130 * 1024 * 1024
"""Largest gRPC message taken or sent (a 4 MiB body is far below; RocketMQ's proxy allows 130 MiB)."""


def _handlers(service: MessagingService, consume: ConsumeRpcs) -> dict[str, grpc.RpcMethodHandler[Any, Any]]:
    from .pb import service_pb2 as spb

    def unary(fn: Callable[..., Any], request: Any, response: Any) -> grpc.RpcMethodHandler[Any, Any]:
        return grpc.unary_unary_rpc_method_handler(
            guarded(fn, response), request_deserializer=request.FromString, response_serializer=response.SerializeToString)

    return {
        "QueryRoute": unary(service.query_route, spb.QueryRouteRequest, spb.QueryRouteResponse),
        "Heartbeat": unary(service.heartbeat, spb.HeartbeatRequest, spb.HeartbeatResponse),
        "SendMessage": unary(service.send_message, spb.SendMessageRequest, spb.SendMessageResponse),
        "EndTransaction": unary(service.end_transaction, spb.EndTransactionRequest, spb.EndTransactionResponse),
        "NotifyClientTermination": unary(service.notify_client_termination, spb.NotifyClientTerminationRequest,
                                         spb.NotifyClientTerminationResponse),
        "QueryAssignment": unary(consume.query_assignment, spb.QueryAssignmentRequest, spb.QueryAssignmentResponse),
        "ReceiveMessage": grpc.unary_stream_rpc_method_handler(
            consume.receive_message, request_deserializer=spb.ReceiveMessageRequest.FromString,
            response_serializer=spb.ReceiveMessageResponse.SerializeToString),
        "AckMessage": unary(consume.ack_message, spb.AckMessageRequest, spb.AckMessageResponse),
        "ChangeInvisibleDuration": unary(consume.change_invisible_duration, spb.ChangeInvisibleDurationRequest,
                                         spb.ChangeInvisibleDurationResponse),
        "ForwardMessageToDeadLetterQueue": unary(
            consume.forward_message_to_dead_letter_queue, spb.ForwardMessageToDeadLetterQueueRequest,
            spb.ForwardMessageToDeadLetterQueueResponse),
        "Telemetry": grpc.stream_stream_rpc_method_handler(
            service.telemetry, request_deserializer=spb.TelemetryCommand.FromString,
            response_serializer=spb.TelemetryCommand.SerializeToString),
    }


def guarded(fn: Callable[..., Awaitable[Any]], response: Any) -> Callable[..., Awaitable[Any]]:
    """``fn`` answering a status INTERNAL_SERVER_ERROR (logged) instead of raising: a bug or an
    unexpected request reaches the client as an ordinary failed call, not a broken RPC."""
    from .convert import status
    from .pb import definition_pb2 as pb

    async def call(request: Any, context: Any) -> Any:
        try:
            return await fn(request, context)
        except Exception as e:
            log.exception("%s failed", getattr(fn, "__name__", "a gRPC call"))
            return response(status=status(pb.INTERNAL_SERVER_ERROR, f"{type(e).__name__}: {e}"))

    return call


class GrpcServer:
    def __init__(self, service: MessagingService, consume: ConsumeRpcs) -> None:
        self.service = service
        self.consume = consume
        self.server: grpc.aio.Server | None = None
        self.port = 0

    async def start(self, host: str, port: int) -> int:
        """Bind ``host:port`` (0 picks a free port) and serve; returns the bound port."""
        server = grpc.aio.server(options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.so_reuseport", 0),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_ping_interval_without_data_ms", 5000),
        ])
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, _handlers(self.service, self.consume)),))
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
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
