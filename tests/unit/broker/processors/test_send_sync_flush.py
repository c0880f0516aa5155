"""SYNC_FLUSH sends through a real Connection: the request is held (no future) and answered by the
sync that covers it; the observer hears it once, when answered; a gRPC channel gets a future."""

from __future__ import annotations

import asyncio
import inspect

from pyrocketmq.broker.processors.send import SendProcessor
from pyrocketmq.broker.proxy.clients import ClientSession, ProxyChannel
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import FrameDecoder, RemotingCommand, encode
from pyrocketmq.remoting.transport import Connection
from tests.helpers.transport import RecordingTransport
from tests.integration import wire

from .conftest import build


class _Registry(dict):  # type: ignore[type-arg]
    def register(self, code: int, handler) -> None:  # type: ignore[no-untyped-def]
        self[int(code)] = handler


def _answers(transport: RecordingTransport) -> list[RemotingCommand]:
    return list(FrameDecoder().feed(bytes(transport.written)))


async def _until(cond, seconds: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + seconds
    while not cond():
        assert asyncio.get_running_loop().time() < deadline, "no answer in time"
        await asyncio.sleep(0.005)


def test_a_sync_flush_send_is_held_until_its_sync_then_answered_once(tmp_path) -> None:
    svc = build(str(tmp_path), flushDiskType="SYNC_FLUSH")
    svc.create_topic("orders")
    svc.store.start()
    seen: list[tuple[int, int | None, float]] = []

    async def main() -> None:
        registry = _Registry()
        send = svc.make(SendProcessor)
        send.register(registry)
        conn = Connection(
            registry, name="test", observer=lambda code, answer, s: seen.append((code, answer, s))
        )
        transport = RecordingTransport()
        conn.connection_made(transport)  # type: ignore[arg-type]
        cmds = [wire.send_v2("orders", b"m%d" % i) for i in range(20)]
        conn.data_received(b"".join(encode(c) for c in cmds))
        assert conn.in_flight >= 1, "held: the first send at least waits for a sync"
        await _until(lambda: len(_answers(transport)) == len(cmds))
        answers = _answers(transport)
        assert sorted(a.opaque for a in answers) == sorted(c.opaque for c in cmds)
        assert all(a.code == ResponseCode.SUCCESS for a in answers), [a.remark for a in answers]
        assert conn.in_flight == 0 and len(send.durable) == 0
        assert svc.store.flush_service.flushed_offset >= svc.store.commit_log.queue.max_offset

    try:
        asyncio.run(main())
        assert len(seen) == 20, "the observer hears each send once, when it is answered"
        assert {(code, answer) for code, answer, _ in seen} == {
            (wire.send_v2("x", b"").code, ResponseCode.SUCCESS)
        }
        assert all(s > 0 for _, _, s in seen)
    finally:
        svc.store.shutdown()


def test_a_send_from_a_grpc_channel_gets_a_future_not_a_held_answer(tmp_path) -> None:
    svc = build(str(tmp_path), flushDiskType="SYNC_FLUSH")
    svc.create_topic("orders")
    svc.store.start()

    async def main() -> RemotingCommand:
        send = svc.make(SendProcessor)
        channel = ProxyChannel(ClientSession("client-1", "127.0.0.1:50001"))
        result = send.handle_send(channel, wire.send_v2("orders", b"over grpc"))
        assert inspect.isawaitable(result), "the proxy awaits what the handler returns"
        assert channel.in_flight == 0
        return await asyncio.wait_for(result, 5)

    try:
        assert asyncio.run(main()).code == ResponseCode.SUCCESS
    finally:
        svc.store.shutdown()
