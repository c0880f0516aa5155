"""Hostile headers are malformed frames: the codec raises FrameError (never RecursionError,
OverflowError …), the server closes that connection with a logged reason, serves everyone else,
and nothing reaches the event loop's error handler; what peers can make us log is rate-limited."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct

import pytest

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import FrameDecoder, FrameError, RemotingCommand, decode_frame, encode
from pyrocketmq.remoting.log_limit import RateLimitedLog
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.server import RemotingServer

HOSTILE = {
    "nested 5000 deep": b'{"code":10,"extFields":{"a":' + b"[" * 5000 + b"]" * 5000 + b"}}",
    "number beyond float range": b'{"code":1e999}',
    "NaN": b'{"code":NaN}',
    "opaque beyond int32": b'{"code":10,"opaque":1099511627776}',
    "negative overflow flag": b'{"code":10,"flag":-9999999999}',
    "language beyond a byte": b'{"code":10,"language":99999999999}',
    "code true": b'{"code":true}',
    "code 10.5": b'{"code":10.5}',
    "no code": b'{"opaque":1}',
    "version a list": b'{"code":10,"version":[1]}',
}


def frame(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_codec_calls_a_hostile_header_a_malformed_frame(name):
    with pytest.raises(FrameError):
        decode_frame(frame(HOSTILE[name])[4:])


def test_a_well_formed_header_still_decodes():
    cmd = decode_frame(
        frame(b'{"code":10,"opaque":7,"language":"JAVA","version":407,"extFields":{"a":"b","n":3}}')[4:]
    )
    assert (cmd.code, cmd.opaque, cmd.version, cmd.ext_fields) == (10, 7, 407, {"a": "b", "n": "3"})


def test_the_server_closes_hostile_connections_and_serves_the_others(caplog):
    async def go() -> tuple[list[bytes], int, list[dict]]:
        loop_errors: list[dict] = []
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, ctx: loop_errors.append(ctx))
        server = RemotingServer("hostile")
        server.register(10, lambda conn, cmd: cmd.response(ResponseCode.SUCCESS))
        port = await server.start("127.0.0.1", 0)
        client = RemotingClient()
        ends = []
        try:
            for header in HOSTILE.values():
                sock = socket.create_connection(("127.0.0.1", port))
                sock.setblocking(False)
                await loop.sock_sendall(sock, frame(header))
                ends.append(await asyncio.wait_for(loop.sock_recv(sock, 100), 5))  # b"": closed by the server
                sock.close()
            answer = await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(10, {}), 5)
            return ends, answer.code, loop_errors
        finally:
            await client.close()
            await server.stop()

    with caplog.at_level(logging.WARNING, logger="pyrocketmq.remoting"):
        ends, code, loop_errors = asyncio.run(go())
    assert ends == [b""] * len(HOSTILE)
    assert code == ResponseCode.SUCCESS
    assert loop_errors == []
    assert "malformed frame" in caplog.text


def test_peer_caused_log_lines_are_rate_limited(caplog):
    now = [0.0]
    limited = RateLimitedLog(logging.getLogger("test.limit"), burst=10, window=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="test.limit"):
        for i in range(1000):
            limited.warning("bad frame %d", i)
        now[0] = 11.0
        limited.warning("bad frame after the window")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[:10] == [f"bad frame {i}" for i in range(10)]
    assert lines[10] == "990 more lines like the next were suppressed in the last 10 s"
    assert lines[11] == "bad frame after the window" and len(lines) == 12


def test_a_decoder_keeps_the_frames_after_a_good_one_when_the_next_is_hostile():
    decoder = FrameDecoder()
    good = encode(RemotingCommand.request(10, {"a": "1"}))
    with pytest.raises(FrameError):
        list(decoder.feed(good + frame(HOSTILE["NaN"])))
