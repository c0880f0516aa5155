"""A request that times out on a connection the peer sent nothing on (a frozen or cut-off host, whose
kernel keeps the connection open) closes it, so the next request connects afresh; a peer that is
merely slow to answer this request, but talks, keeps its connection."""

from __future__ import annotations

import asyncio

import pytest

from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import FrameDecoder, RemotingCommand, encode
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import RemotingTimeoutError


async def _server(answer_heartbeats: bool) -> tuple[asyncio.Server, str]:
    """Accepts and reads; never answers, or answers only HEART_BEAT requests (a live, slow peer)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            for cmd in decoder.feed(data):
                if answer_heartbeats and cmd.code == RequestCode.HEART_BEAT:
                    writer.write(encode(cmd.response()))

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, f"127.0.0.1:{server.sockets[0].getsockname()[1]}"


@pytest.mark.parametrize("talks", [False, True])
def test_a_timeout_closes_the_connection_only_when_the_peer_was_silent(talks: bool) -> None:
    async def go() -> tuple[bool, bool]:
        server, addr = await _server(answer_heartbeats=talks)
        client = RemotingClient()
        try:
            conn = await client.connection(addr)

            async def keep_talking() -> None:
                while True:
                    await client.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT), 1.0)
                    await asyncio.sleep(0.05)

            chatter = asyncio.create_task(keep_talking()) if talks else None
            with pytest.raises(RemotingTimeoutError):
                await client.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE), 0.4)
            if chatter is not None:
                chatter.cancel()
            closed = not conn.is_open
            again = await client.connection(addr)
            return closed, again is conn
        finally:
            await client.close()
            server.close()

    closed, same = asyncio.run(go())
    assert closed is not talks and same is talks
