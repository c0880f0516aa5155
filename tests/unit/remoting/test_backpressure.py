"""Transport back-pressure, on real loopback sockets.

A client that sends requests and never reads the answers stops being read by the server once the
answers it left unread fill the socket buffers: the server's memory holds at most about the
transport's high-water mark of answers, and nothing is lost — when the client reads again, every
request is answered. A client whose server stops reading waits in ``drain`` instead of queueing."""

from __future__ import annotations

import asyncio
import socket

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import FrameDecoder, RemotingCommand, encode
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.server import RemotingServer
from pyrocketmq.remoting.transport import RemotingTimeoutError

ANSWER = b"x" * 64 * 1024
REQUESTS = 2000  # 2000 × 64 KiB of answers = 125 MiB, far beyond any socket buffer


def test_a_client_that_never_reads_is_not_read_either_and_loses_nothing() -> None:
    async def go() -> tuple[int, int, int, int]:
        handled = 0

        def big(conn, cmd):
            nonlocal handled
            handled += 1
            return cmd.response(ResponseCode.SUCCESS, body=ANSWER)

        server = RemotingServer("bp")
        server.register(900, big)
        port = await server.start("127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setblocking(False)
        try:
            frames = b"".join(encode(RemotingCommand.request(900, {"n": str(i)})) for i in range(REQUESTS))
            await loop.sock_sendall(sock, frames)  # the requests are small: they all reach the server
            await asyncio.sleep(1.0)
            handled_while_unread = handled
            conn = next(iter(server.connections))
            buffered = conn.write_buffer_size
            paused = conn.writing_paused
            decoder, answered = FrameDecoder(), 0
            while answered < REQUESTS:
                data = await asyncio.wait_for(loop.sock_recv(sock, 1 << 20), 10)
                assert data, "the server closed the connection"
                answered += sum(1 for _ in decoder.feed(data))
            return handled_while_unread, buffered, int(paused), answered
        finally:
            sock.close()
            await server.stop()

    handled_while_unread, buffered, paused, answered = asyncio.run(go())
    assert paused == 1
    assert handled_while_unread < REQUESTS // 2, handled_while_unread
    assert buffered < 16 * 1024 * 1024, buffered
    assert answered == REQUESTS


def test_an_invoke_waits_while_the_server_does_not_read() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    addr = f"127.0.0.1:{listener.getsockname()[1]}"

    async def go() -> tuple[bool, int]:
        client = RemotingClient()
        try:
            conn = await client.connection(addr)
            body = b"y" * 256 * 1024
            sent = 0
            for _ in range(400):  # 100 MiB if nothing held the client back
                if conn.writing_paused:
                    break
                conn.invoke_oneway(RemotingCommand.request(901, {}, body))
                sent += 1
                await asyncio.sleep(0)
            paused = conn.writing_paused
            try:
                await conn.invoke(RemotingCommand.request(902, {}), 0.3)
            except RemotingTimeoutError:
                pass
            return paused, sent
        finally:
            await client.close()

    try:
        paused, sent = asyncio.run(go())
    finally:
        listener.close()
    assert paused and sent < 400
