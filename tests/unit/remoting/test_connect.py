"""Client connects: a caller's own bound on the wait, and a one-line reason when it runs out."""

from __future__ import annotations

import asyncio
import socket

import pytest

from pyrocketmq.client.request_errors import transport_error
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import RemotingConnectError


def silent_listener() -> tuple[socket.socket, list[socket.socket], str]:
    """A loopback port whose accept queue is full: the kernel drops further SYNs, so a connect
    hangs like one to an address that is gone (nothing leaves the machine)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    addr = f"127.0.0.1:{server.getsockname()[1]}"
    fillers = []
    for _ in range(4):  # the queue holds backlog + 1; the rest stay in SYN_SENT
        c = socket.socket()
        c.setblocking(False)
        try:
            c.connect(server.getsockname())
        except BlockingIOError:
            pass
        fillers.append(c)
    return server, fillers, addr


def test_a_connect_gives_up_at_the_callers_bound_and_says_it_timed_out() -> None:
    server, fillers, addr = silent_listener()

    async def go() -> None:
        client = RemotingClient(connect_timeout=30.0)
        try:
            waits = [client.connection(addr, timeout=0.3) for _ in range(2)]  # the second shares the first
            results = await asyncio.wait_for(asyncio.gather(*waits, return_exceptions=True), 10)
        finally:
            await client.close()
        for r in results:
            assert isinstance(r, RemotingConnectError), r
        first = results[0]
        assert str(first) == f"cannot connect to {addr}: TimeoutError"
        assert str(transport_error(first, addr)) == f"cannot reach broker {addr}: connection timed out"

    try:
        asyncio.run(go())
    finally:
        for s in (server, *fillers):
            s.close()


def test_a_bound_never_lengthens_the_clients_connect_timeout() -> None:
    server, fillers, addr = silent_listener()

    async def go() -> None:
        client = RemotingClient(connect_timeout=0.2)
        try:
            with pytest.raises(RemotingConnectError):
                await asyncio.wait_for(client.connection(addr, timeout=60.0), 10)
        finally:
            await client.close()

    try:
        asyncio.run(go())
    finally:
        for s in (server, *fillers):
            s.close()
