"""A connection silent both ways for longer than the server's idle timeout is closed (Apache's
``serverChannelMaxIdleTimeSeconds``); one that keeps talking stays open."""

from __future__ import annotations

import asyncio
import socket

from pyrocketmq.broker.settings import BrokerSettings
from pyrocketmq.namesrv.settings import NamesrvSettings
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand, encode
from pyrocketmq.remoting.server import RemotingServer


def test_an_idle_connection_is_closed_and_a_talking_one_is_kept():
    async def go() -> tuple[bytes, bool]:
        server = RemotingServer("idle", idle_timeout=0.4)
        server.register(10, lambda conn, cmd: cmd.response(ResponseCode.SUCCESS))
        port = await server.start("127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        silent = socket.create_connection(("127.0.0.1", port))
        talking = socket.create_connection(("127.0.0.1", port))
        silent.setblocking(False)
        talking.setblocking(False)
        try:
            for _ in range(12):  # 1.2 s: three idle timeouts
                await loop.sock_sendall(talking, encode(RemotingCommand.request(10, {})))
                await asyncio.wait_for(loop.sock_recv(talking, 4096), 2)
                await asyncio.sleep(0.1)
            closed = await asyncio.wait_for(loop.sock_recv(silent, 100), 2)
            still_open = len(server.connections) == 1
            return closed, still_open
        finally:
            silent.close()
            talking.close()
            await server.stop()

    closed, still_open = asyncio.run(go())
    assert closed == b"" and still_open


def test_the_idle_timeout_is_configured_as_in_apache():
    assert BrokerSettings.from_conf({}).network.server_channel_max_idle_s == 120
    assert (
        BrokerSettings.from_conf({"serverChannelMaxIdleTimeSeconds": "30"}).network.server_channel_max_idle_s
        == 30
    )
    assert NamesrvSettings.from_conf({"serverChannelMaxIdleTimeSeconds": "0"}).server_channel_max_idle_s == 0
