"""Every port of a broker gives a TLS handshake the same short time: the gRPC port's server is
made with the remoting ports' handshake timeout, not gRPC's own 120 s."""

from __future__ import annotations

import asyncio

from pyrocketmq.remoting.server import HANDSHAKE_TIMEOUT


class _NoRpcs:
    """Stands for the services: the test serves no RPC."""

    def __getattr__(self, name: str):
        async def rpc(*args, **kwargs):
            raise AssertionError(name)

        return rpc


def test_the_grpc_port_has_the_remoting_ports_handshake_timeout(monkeypatch):
    import grpc.aio as grpc_aio  # a dependency of the broker: missing is a failure, never a skip

    from pyrocketmq.broker.proxy import server as proxy_server

    seen: list[dict[str, object]] = []
    real = grpc_aio.server

    def server(*args, **kwargs):
        seen.append(dict(kwargs.get("options") or ()))
        return real(*args, **kwargs)

    monkeypatch.setattr(proxy_server.grpc.aio, "server", server)

    async def go() -> None:
        grpc_server = proxy_server.GrpcServer(_NoRpcs(), _NoRpcs())
        try:
            await grpc_server.start("127.0.0.1", 0)
        finally:
            await grpc_server.stop(0)

    asyncio.run(go())
    assert seen and seen[0].get("grpc.server_handshake_timeout_ms") == int(HANDSHAKE_TIMEOUT * 1000)
    assert HANDSHAKE_TIMEOUT <= 10
