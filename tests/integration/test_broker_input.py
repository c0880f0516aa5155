"""Bad input, case by case, against a real broker process: each gets a clear error response or a
closed connection with a logged reason; the broker keeps serving; a rejected send stores nothing."""

from __future__ import annotations

import asyncio
import socket
import struct
import time

import orjson
import pytest

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand, encode
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient

from .wire import create_topic, max_phy_offset, pull, send_v2

TOPIC = "InputTopic"


def raw_exchange(port: int, payload: bytes, *, half_close: bool = False, timeout: float = 5.0) -> bytes:
    """Send bytes on a fresh connection; everything the broker sends back until it closes or goes quiet."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        chunks = []
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    break
                chunks.append(data)
        except TimeoutError:
            chunks.append(b"<open>")
        except ConnectionResetError:
            pass
        return b"".join(chunks)


async def _healthy(client: RemotingClient, addr: str) -> None:
    """A fresh connection can still send and read back."""
    body = f"alive-{time.monotonic_ns()}".encode()
    resp = await client.invoke(addr, send_v2(TOPIC, body, queue_id=1), 5)
    assert resp.code == ResponseCode.SUCCESS, resp
    offset = int(resp.ext_fields["queueOffset"])
    got = await client.invoke(addr, pull(TOPIC, 1, offset), 5)
    assert got.code == ResponseCode.SUCCESS
    assert decode_messages(got.body)[0].body == body


@pytest.fixture
def ready(broker):
    async def setup():
        client = RemotingClient()
        resp = await client.invoke(broker.addr, create_topic(TOPIC, 4), 5)
        assert resp.code == ResponseCode.SUCCESS
        await client.close()

    asyncio.run(setup())
    return broker


@pytest.mark.parametrize(
    "name, payload, reason",
    [
        ("length over 16 MiB", struct.pack(">ii", 16 * 1024 * 1024 + 1, 10) + b"x" * 64, "outside"),
        (
            "header length past the frame",
            struct.pack(">ii", 12, 500) + b"{}" + b"\0" * 6,
            "runs past the frame",
        ),
        ("garbage header JSON", struct.pack(">ii", 4 + 9, 9) + b"{garbage!", "not valid JSON"),
        ("unknown serialize type", struct.pack(">ii", 6, (9 << 24) | 2) + b"{}", "serialize type"),
    ],
)
def test_malformed_frame_closes_only_that_connection(ready, name, payload, reason):
    before = ready.log_text()
    out = raw_exchange(ready.port, payload)
    assert out == b"", f"{name}: expected the broker to close the connection, got {out[:80]!r}"
    deadline = time.monotonic() + 5
    while reason not in ready.log_text()[len(before):] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert reason in ready.log_text()[len(before):], f"{name}: no logged reason"

    async def check():
        client = RemotingClient()
        await _healthy(client, ready.addr)
        await client.close()

    asyncio.run(check())


def test_truncated_frame_then_close_is_logged_and_harmless(ready):
    frame = encode(send_v2(TOPIC, b"never-complete"))
    before = ready.log_text()
    out = raw_exchange(ready.port, frame[: len(frame) // 2], half_close=True)
    assert out == b""
    deadline = time.monotonic() + 5
    while "middle of a frame" not in ready.log_text()[len(before):] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "middle of a frame" in ready.log_text()[len(before):]

    async def check():
        client = RemotingClient()
        await _healthy(client, ready.addr)
        await client.close()

    asyncio.run(check())


def test_unknown_request_code_answered_with_3(ready):
    async def run():
        client = RemotingClient()
        resp = await client.invoke(ready.addr, RemotingCommand.request(9999), 5)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert "9999" in resp.remark and "not supported" in resp.remark
        await client.close()

    asyncio.run(run())


@pytest.mark.parametrize(
    "case",
    [
        "invalid topic name",
        "topic name too long",
        "body over maxMessageSize",
        "queueId out of range",
        "bad header",
    ],
)
def test_rejected_send_writes_nothing(ready, case):
    async def run():
        client = RemotingClient()
        addr = ready.addr
        before = await max_phy_offset(client, addr)
        if case == "invalid topic name":
            cmd, code, words = send_v2("bad topic!", b"x"), ResponseCode.SYSTEM_ERROR, "characters"
        elif case == "topic name too long":
            cmd, code, words = (
                send_v2("T" * 128, b"x"),
                ResponseCode.SYSTEM_ERROR,
                "longer than topic max length",
            )
        elif case == "body over maxMessageSize":
            cmd, code, words = (
                send_v2(TOPIC, b"x" * (64 * 1024 + 1)),
                ResponseCode.MESSAGE_ILLEGAL,
                "maxMessageSize",
            )
        elif case == "queueId out of range":
            cmd, code, words = (
                send_v2(TOPIC, b"x", queue_id=4),
                ResponseCode.SYSTEM_ERROR,
                "queueId[4] is illegal",
            )
        else:
            cmd = send_v2(TOPIC, b"x")
            cmd.ext_fields["g"] = "not-a-number"
            code, words = ResponseCode.SYSTEM_ERROR, "bad send request header"
        resp = await client.invoke(addr, cmd, 5)
        assert resp.code == code, resp
        assert words in (resp.remark or ""), resp.remark
        assert await max_phy_offset(client, addr) == before
        await _healthy(client, addr)
        await client.close()

    asyncio.run(run())


def test_runtime_info_is_json(ready):
    async def run():
        client = RemotingClient()
        from pyrocketmq.remoting.code import RequestCode

        resp = await client.invoke(
            ready.addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 5
        )
        assert "commitLogMaxOffset" in orjson.loads(resp.body)["table"]
        await client.close()

    asyncio.run(run())
