"""Per-connection limits on real loopback sockets: requests in flight, unread answers, connections.

A peer past a limit loses its own connection (closed, the reason logged) and the server keeps
serving everyone else; what the server holds for it stays within the limit.
"""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest

from pyrocketmq.remoting import transport
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import FrameDecoder, RemotingCommand, encode
from pyrocketmq.remoting.limits import ConnectionLimits
from pyrocketmq.remoting.log_limit import RateLimitedLog
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.server import RemotingServer

HOLD, PING = 900, 901


@pytest.fixture(autouse=True)
def fresh_peer_log(monkeypatch):
    """The peer log's rate limit is per process: earlier tests must not have used it up."""
    monkeypatch.setattr(transport, "peer_log", RateLimitedLog(transport.log))


async def _server(limits: ConnectionLimits, held: list[asyncio.Future]) -> RemotingServer:
    def hold(conn, cmd):  # answered later, as a held pull or a send waiting on a flush
        fut = asyncio.get_running_loop().create_future()
        held.append((fut, cmd))
        return fut

    server = RemotingServer("limits", limits=limits)
    server.register(HOLD, hold)
    server.register(PING, lambda conn, cmd: cmd.response(ResponseCode.SUCCESS, "pong"))
    await server.start("127.0.0.1", 0)
    return server


async def _closed_by_server(sock: socket.socket, timeout: float = 5.0) -> bool:
    loop = asyncio.get_running_loop()
    try:
        while True:
            data = await asyncio.wait_for(loop.sock_recv(sock, 1 << 20), timeout)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


async def _ping(port: int) -> str | None:
    client = RemotingClient()
    try:
        resp = await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(PING, {}), 3.0)
        return resp.remark
    finally:
        await client.close()


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


def test_more_requests_in_flight_than_allowed_closes_that_connection_only(caplog) -> None:
    caplog.set_level(logging.WARNING, "pyrocketmq.remoting")

    async def go():
        held: list = []
        server = await _server(ConnectionLimits(max_in_flight=50), held)
        loop = asyncio.get_running_loop()
        sock = _connect(server.port)
        try:
            await loop.sock_sendall(
                sock, b"".join(encode(RemotingCommand.request(HOLD, {})) for _ in range(50))
            )
            await asyncio.sleep(0.2)
            at_limit_open = len(server.connections) == 1
            await loop.sock_sendall(sock, encode(RemotingCommand.request(HOLD, {})))
            closed = await _closed_by_server(sock)
            pong = await _ping(server.port)
            for fut, _ in held:  # answers for a closed connection go nowhere, and do not fail
                fut.set_result(RemotingCommand.request(0, {}).response(ResponseCode.SUCCESS))
            await asyncio.sleep(0.05)
            return at_limit_open, closed, pong
        finally:
            sock.close()
            await server.stop()

    at_limit_open, closed, pong = asyncio.run(go())
    assert at_limit_open and closed and pong == "pong"
    assert sum("more than 50 requests in flight" in r.getMessage() for r in caplog.records) == 1


def test_answers_the_peer_does_not_read_are_bounded(caplog) -> None:
    caplog.set_level(logging.WARNING, "pyrocketmq.remoting")
    limit = 4 << 20
    body = b"z" * (256 << 10)

    async def go():
        held: list = []
        server = await _server(ConnectionLimits(max_queued_bytes=limit), held)
        sock = _connect(server.port)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        loop = asyncio.get_running_loop()
        try:
            await loop.sock_sendall(
                sock, b"".join(encode(RemotingCommand.request(HOLD, {})) for _ in range(200))
            )
            await asyncio.sleep(0.2)
            conn = next(iter(server.connections))
            peak = 0
            for fut, cmd in held:  # 200 × 256 KiB = 50 MiB of answers, none read
                fut.set_result(cmd.response(ResponseCode.SUCCESS, body=body))
                await asyncio.sleep(0)
                if not conn.closed:
                    peak = max(peak, conn.write_buffer_size + conn._out_bytes)
            await asyncio.sleep(0.1)
            return conn.closed, conn.close_reason, peak, await _ping(server.port)
        finally:
            sock.close()
            await server.stop()

    closed, reason, peak, pong = asyncio.run(go())
    assert closed and "bytes of answers queued" in reason and pong == "pong"
    assert peak <= limit + len(body) + 4096, peak
    assert sum("not reading its answers" in r.getMessage() for r in caplog.records) == 1


def test_connections_beyond_the_limit_are_refused_and_the_rest_served(caplog) -> None:
    caplog.set_level(logging.WARNING, "pyrocketmq.remoting")

    async def go():
        server = await _server(ConnectionLimits(max_connections=3), [])
        loop = asyncio.get_running_loop()
        socks = [_connect(server.port) for _ in range(3)]
        try:
            await asyncio.sleep(0.1)
            extra = _connect(server.port)
            refused = await _closed_by_server(extra, 2.0)
            extra.close()
            kept = len(server.connections)
            await loop.sock_sendall(socks[0], encode(RemotingCommand.request(PING, {})))
            answer = await asyncio.wait_for(loop.sock_recv(socks[0], 4096), 3)
            socks.pop().close()
            await asyncio.sleep(0.1)
            pong = await _ping(server.port)  # a place is free again
            return refused, kept, [c.remark for c in FrameDecoder().feed(answer)], pong
        finally:
            for s in socks:
                s.close()
            await server.stop()

    refused, kept, answers, pong = asyncio.run(go())
    assert refused and kept == 3 and answers == ["pong"] and pong == "pong"
    assert any("3 connections are open already" in r.getMessage() for r in caplog.records)
