"""Clients that flood a real name server and broker (processes) and never read: the servers'
memory stays bounded, the flooding connection is closed with a logged reason, everyone else is
served throughout.

Each flood is bounded in count and time. The limits are set low in the configs so that the test
is quick; the defaults (10000 connections, 65536 requests in flight, 64 MiB unread per connection)
work the same way.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from pathlib import Path

import pytest

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand, encode
from pyrocketmq.remoting.remoting_client import RemotingClient

from . import wire
from .procs import Proc, free_port, start_broker

LIMITS = {"serverMaxConnections": 2500, "serverMaxRequestsInFlight": 2000, "serverMaxQueuedBytes": 8 << 20}
IDLE, SLOW, OVER = 2300, 100, 200
"""Connections held idle, connections trickling a frame a byte at a time, and more than the limit."""
MAX_GROWTH = 120 << 20
"""What a flood may add to a server's resident memory (Python keeps some of what it used)."""


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def start_namesrv_with(tmp: Path, **conf: object) -> Proc:
    port = free_port()
    path = tmp / "namesrv.conf"
    path.write_text("".join(f"{k}={v}\n" for k, v in {"listenPort": port, **conf}.items()))
    return Proc("namesrv", [sys.executable, "-m", "pyrocketmq", "namesrv", "-c", str(path)],
                tmp / "logs" / "namesrv.log", port).start()


def flood(port: int, frame: bytes, count: int, seconds: float) -> bool:
    """Send ``count`` copies of ``frame`` without reading an answer; True when the server closed
    the connection before ``seconds`` passed (or stopped taking requests: that counts as False)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(0.5)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 10)
    deadline = time.monotonic() + seconds
    chunk = frame * 200
    try:
        sent = 0
        while sent < count and time.monotonic() < deadline:
            try:
                sock.sendall(chunk)
                sent += 200
            except TimeoutError:
                continue  # the server stopped reading us: keep trying until it closes or time is up
            except (BrokenPipeError, ConnectionResetError):
                return True
        while time.monotonic() < deadline:  # nothing more to send: does the server let go of us?
            try:
                sock.sendall(frame)
                time.sleep(0.05)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                return True
        return False
    finally:
        sock.close()


async def served(addr: str, code: int, ext: dict, cmd: RemotingCommand | None = None) -> int:
    client = RemotingClient()
    try:
        return (await client.invoke(addr, cmd or RemotingCommand.request(code, ext), 5.0)).code
    finally:
        await client.close()


@pytest.fixture
def servers(tmp_path):
    ns = start_namesrv_with(tmp_path, **LIMITS)
    broker = start_broker(tmp_path, ns.addr, **LIMITS)
    try:
        yield ns, broker
    finally:
        broker.stop()
        ns.stop()


def test_floods_are_closed_and_memory_stays_bounded(servers):
    ns, broker = servers

    async def setup():
        client = RemotingClient()
        try:
            assert (
                await client.invoke(broker.addr, wire.create_topic("flood", 1), 5)
            ).code == ResponseCode.SUCCESS
            sub = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {},
                                          b'{"groupName":"test-group"}')
            assert (await client.invoke(broker.addr, sub, 5)).code == ResponseCode.SUCCESS
        finally:
            await client.close()

    asyncio.run(setup())
    time.sleep(0.5)
    base = {"ns": rss(ns.proc.pid), "broker": rss(broker.proc.pid)}

    # 1. held pulls (long polling an empty queue), never read: past 2000 in flight, closed
    held = encode(wire.pull("flood", 0, 0, suspend_ms=60_000))
    assert flood(broker.port, held, 20_000, 20.0), "the broker kept a connection holding 20000 pulls"
    # 2. big answers never read (every topic config, every route): closed once 8 MiB are unread
    #    or, at least, not read any further while they wait; either way memory stays bounded
    flood(broker.port, encode(RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {})), 200_000, 8.0)
    flood(ns.port, encode(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "flood"})),
          200_000, 8.0)
    # 3. thousands of idle connections and slowloris ones (a frame a byte at a time): a well-behaved
    #    client still sends; connections past the limit are refused; those within are kept
    socks: list[socket.socket] = []
    refused = 0
    try:
        for _ in range(IDLE + SLOW):
            socks.append(socket.create_connection(("127.0.0.1", broker.port)))
        slow = socks[IDLE:]
        frame = encode(wire.send_v2("flood", b"slow"))
        for i in range(12):  # ~3 s of trickling, one byte per connection per round
            for s_ in slow:
                s_.send(frame[i : i + 1])
            time.sleep(0.25)
        sent_meanwhile = asyncio.run(
            served(broker.addr, RequestCode.SEND_MESSAGE_V2, {}, wire.send_v2("flood", b"ok"))
        )
        extra = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(OVER)]
        socks += extra
        time.sleep(0.5)
        for s_ in extra:
            s_.settimeout(0.01)
            try:
                refused += s_.recv(1) == b""
            except TimeoutError:
                pass
            except ConnectionResetError:
                refused += 1
        kept_rss = rss(broker.proc.pid) - base["broker"]
    finally:
        for s_ in socks:
            s_.close()
    assert sent_meanwhile == ResponseCode.SUCCESS
    over_limit = IDLE + SLOW + OVER - LIMITS["serverMaxConnections"]
    assert over_limit - 5 <= refused <= over_limit, refused  # past the limit turned away, the others kept
    assert kept_rss < MAX_GROWTH, kept_rss
    time.sleep(1.0)  # the broker sees those connections go

    # everyone else was served throughout, and is now
    assert asyncio.run(served(broker.addr, RequestCode.GET_BROKER_RUNTIME_INFO, {})) == ResponseCode.SUCCESS
    assert (
        asyncio.run(served(ns.addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "flood"}))
        == ResponseCode.SUCCESS
    )
    grown = {"ns": rss(ns.proc.pid) - base["ns"], "broker": rss(broker.proc.pid) - base["broker"]}
    assert grown["broker"] < MAX_GROWTH and grown["ns"] < MAX_GROWTH, grown
    log = broker.log_text()
    assert log.count("more than 2000 requests in flight") == 1
    assert "connections are open already" in log
    print(f"RSS growth under floods: broker {grown['broker'] >> 20} MiB ({kept_rss >> 20} MiB while holding "
          f"{IDLE + SLOW} connections), name server {grown['ns'] >> 20} MiB")
