"""What a connection may hold before it proves anything, without sockets: a frame must be whole
within ``frame_timeout_s`` of its first byte (a byte now and then does not extend it), and the
partial frames of connections with no request accepted yet share one cap."""

from __future__ import annotations

import asyncio
import functools

import pytest

from pyrocketmq.broker.settings import BrokerSettings
from pyrocketmq.namesrv.settings import NamesrvSettings
from pyrocketmq.remoting import transport
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand, encode
from pyrocketmq.remoting.limits import NO_LIMITS, ConnectionLimits, UnprovenBytes
from pyrocketmq.remoting.log_limit import RateLimitedLog
from pyrocketmq.remoting.server import RemotingServer
from tests.helpers.transport import RecordingTransport

PING = 901


@pytest.fixture(autouse=True)
def fresh_peer_log(monkeypatch):
    monkeypatch.setattr(transport, "peer_log", RateLimitedLog(transport.log))


def on_loop(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return run


class _Clock:
    """The loop's time as the connections read it, moved by the test."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.now = 1000.0
        self.loop = loop

    def __call__(self) -> float:
        return self.now


def _server(limits: ConnectionLimits, before=None) -> RemotingServer:
    server = RemotingServer("deadline", limits=limits, before=before)
    server.register(PING, lambda conn, cmd: cmd.response(ResponseCode.SUCCESS))
    return server


def _connect(server: RemotingServer, clock: _Clock):
    conn = server._make_connection()
    conn._loop = type("Loop", (), {"time": staticmethod(clock), "call_soon": clock.loop.call_soon,
                                   "create_future": clock.loop.create_future})()
    t = RecordingTransport()
    conn.connection_made(t)
    return conn, t


PING_FRAME = encode(RemotingCommand.request(PING, {"k": "v"}))


@on_loop
async def test_a_trickled_frame_keeps_the_time_of_its_first_byte_and_is_dropped_past_the_timeout():
    clock = _Clock(asyncio.get_running_loop())
    server = _server(ConnectionLimits(frame_timeout_s=10))
    conn, t = _connect(server, clock)
    assert conn.frame_started is None
    conn.data_received(PING_FRAME[:3])
    assert conn.frame_started == 1000.0
    for i in range(1, 9):  # a byte every second: never idle, never a whole frame
        clock.now = 1000.0 + i
        conn.data_received(PING_FRAME[2 + i : 3 + i])
        assert conn.frame_started == 1000.0
    assert server.close_stalled(now=1010.0) == 0  # at the limit, not past it
    assert server.close_stalled(now=1010.5) == 1
    assert t.aborted and "no whole frame within 10 s" in (conn.close_reason or "")


@on_loop
async def test_each_frame_gets_its_own_time():
    clock = _Clock(asyncio.get_running_loop())
    server = _server(ConnectionLimits(frame_timeout_s=10))
    conn, t = _connect(server, clock)
    conn.data_received(PING_FRAME[:5])
    clock.now = 1008.0
    conn.data_received(PING_FRAME[5:] + PING_FRAME[:4])  # the first ends, the next begins in this read
    assert conn.frame_started == 1008.0
    clock.now = 1016.0
    conn.data_received(PING_FRAME[4:])
    assert conn.frame_started is None
    assert server.close_stalled(now=5000.0) == 0 and not t.closing
    assert len(t.written) > 0  # both answered


@on_loop
async def test_no_frame_timeout_when_it_is_0():
    clock = _Clock(asyncio.get_running_loop())
    server = _server(ConnectionLimits(frame_timeout_s=0))
    conn, t = _connect(server, clock)
    conn.data_received(PING_FRAME[:5])
    assert server.close_stalled(now=10**9) == 0 and not t.closing


@on_loop
async def test_a_connection_not_read_while_its_peer_reads_no_answers_is_not_timed():
    clock = _Clock(asyncio.get_running_loop())
    server = _server(ConnectionLimits(frame_timeout_s=10))
    conn, t = _connect(server, clock)
    conn.data_received(PING_FRAME[:5])
    conn.pause_writing()
    assert server.close_stalled(now=1100.0) == 0
    clock.now = 1100.0
    conn.resume_writing()
    assert conn.frame_started == 1100.0


@on_loop
async def test_partial_frames_of_unproven_connections_share_one_cap():
    clock = _Clock(asyncio.get_running_loop())
    big = encode(RemotingCommand.request(PING, {}, b"x" * 10_000))
    server = _server(ConnectionLimits(max_unproven_bytes=25_000))
    a, ta = _connect(server, clock)
    b, tb = _connect(server, clock)
    c, tc = _connect(server, clock)
    a.data_received(big[:9_000])
    b.data_received(big[:9_000])
    assert server.unproven.held == 18_000
    c.data_received(big[:9_000])  # 27 000 > 25 000: the connection asking for more goes
    assert tc.aborted and not ta.closing and not tb.closing
    assert "unproven" in (c.close_reason or "")
    c.connection_lost(None)
    assert server.unproven.held == 18_000

    a.data_received(big[9_000:])  # a whole request: proven, its bytes no longer count
    assert server.unproven.held == 9_000
    a.data_received(big[:9_999])  # a proven connection's partial frames are not in the pool
    assert server.unproven.held == 9_000 and not ta.closing
    b.connection_lost(None)
    assert server.unproven.held == 0


@on_loop
async def test_a_request_refused_by_the_access_check_proves_nothing():
    clock = _Clock(asyncio.get_running_loop())

    def deny(conn, cmd):
        return cmd.response(ResponseCode.NO_PERMISSION, "who are you")

    server = _server(ConnectionLimits(max_unproven_bytes=1_000), before=deny)
    conn, t = _connect(server, clock)
    big = encode(RemotingCommand.request(PING, {}, b"x" * 10_000))
    conn.data_received(PING_FRAME + big[:10])
    assert server.unproven.held == 10 and t.written  # refused, and still counted
    conn.data_received(big[10:1_200])
    assert t.aborted


def test_the_unproven_pool_refuses_growth_past_its_cap_and_always_takes_shrinking():
    pool = UnprovenBytes(100)
    assert pool.resize(0, 100) and pool.held == 100
    assert not pool.resize(0, 1) and pool.held == 100
    assert pool.resize(100, 40) and pool.held == 40
    unlimited = UnprovenBytes(0)
    assert unlimited.resize(0, 10**12)


def test_limits_are_configured_with_sane_defaults():
    for limits in (BrokerSettings.from_conf({}).network.limits, NamesrvSettings.from_conf({}).limits):
        assert limits.frame_timeout_s == 30 and limits.max_unproven_bytes == 64 << 20
    conf = {"serverFrameTimeoutSeconds": "5", "serverMaxUnprovenBytes": "1000"}
    for limits in (BrokerSettings.from_conf(conf).network.limits, NamesrvSettings.from_conf(conf).limits):
        assert (limits.frame_timeout_s, limits.max_unproven_bytes) == (5, 1000)
    assert NO_LIMITS.frame_timeout_s == 0 and NO_LIMITS.max_unproven_bytes == 0
