"""kill -9 of a SYNC_FLUSH broker mid-send: every acknowledged message survives, in order per queue,
with no duplicate consume-queue entries; a torn last record is dropped and logged."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import MAGIC, decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import RemotingError

from .procs import start_broker
from .wire import create_topic, pull, send_v2

TOPIC = "CrashTopic"
QUEUES = 4


async def _send_until_killed(broker, acked: list[tuple[int, int, bytes]], kill_after: float) -> None:
    client = RemotingClient()
    assert (await client.invoke(broker.addr, create_topic(TOPIC, QUEUES), 5)).code == 0
    stop = asyncio.Event()

    async def sender(worker: int) -> None:
        i = 0
        while not stop.is_set():
            body = f"w{worker}-m{i}".encode()
            try:
                resp = await client.invoke(broker.addr, send_v2(TOPIC, body, queue_id=worker % QUEUES), 5)
            except RemotingError:
                return
            if resp.code == ResponseCode.SUCCESS:
                acked.append((int(resp.ext_fields["queueId"]), int(resp.ext_fields["queueOffset"]), body))
            i += 1

    tasks = [asyncio.ensure_future(sender(w)) for w in range(8)]
    await asyncio.sleep(kill_after)
    broker.kill9()
    stop.set()
    await asyncio.gather(*tasks)
    await client.close()


async def _read_all(addr: str) -> dict[int, list]:
    client = RemotingClient()
    out: dict[int, list] = {}
    for qid in range(QUEUES):
        offset, msgs = 0, []
        while True:
            resp = await client.invoke(addr, pull(TOPIC, qid, offset, max_nums=32), 10)
            if resp.code != ResponseCode.SUCCESS:
                assert resp.code == ResponseCode.PULL_NOT_FOUND, resp
                break
            batch = decode_messages(resp.body)
            msgs.extend(batch)
            offset = int(resp.ext_fields["nextBeginOffset"])
        out[qid] = msgs
    await client.close()
    return out


def _check(acked, stored):
    for qid, msgs in stored.items():
        # No duplicates and no gaps: the n-th entry of a queue holds queue offset n.
        assert [m.queue_offset for m in msgs] == list(range(len(msgs))), f"queue {qid} offsets not contiguous"
        assert len({m.body for m in msgs}) == len(msgs), f"queue {qid} has duplicate messages"
    for qid, offset, body in acked:
        assert offset < len(stored[qid]), f"acknowledged message {body!r} at {qid}/{offset} lost"
        assert stored[qid][offset].body == body
    # Per-queue order equals send order per worker (each worker owns one queue here).
    for msgs in stored.values():
        seq: dict[str, int] = {}
        for m in msgs:
            worker, n = m.body.decode().split("-m")
            assert int(n) > seq.get(worker, -1), "out of order"
            seq[worker] = int(n)


def _valid_end(segment: Path) -> int:
    data = segment.read_bytes()
    pos = 0
    while pos + 8 <= len(data):
        size, magic = struct.unpack_from(">iI", data, pos)
        if size <= 0 or magic != MAGIC:
            break
        pos += size
    return pos


def test_kill9_sync_flush_keeps_every_acknowledged_message(tmp_path, namesrv):
    extra = {"flushDiskType": "SYNC_FLUSH", "mappedFileSizeCommitLog": 4 * 1024 * 1024}
    broker = start_broker(tmp_path, namesrv.addr, **extra)
    acked: list[tuple[int, int, bytes]] = []
    try:
        asyncio.run(_send_until_killed(broker, acked, kill_after=2.0))
    finally:
        broker.kill9()
    assert len(acked) > 50, f"only {len(acked)} messages acknowledged before the kill"

    broker = start_broker(tmp_path, namesrv.addr, port=broker.port, **extra)
    try:
        stored = asyncio.run(_read_all(broker.addr))
        _check(acked, stored)
        assert "abnormal" in broker.log_text().lower() or "abort" in broker.log_text().lower()
    finally:
        broker.kill9()

    # Tear the tail: half a record after the last valid one, as a crash mid-write would leave.
    segments = sorted((tmp_path / "broker-a" / "store" / "commitlog").iterdir())
    last = segments[-1]
    end = _valid_end(last)
    good = last.read_bytes()[:end]
    first_size = struct.unpack_from(">i", good, 0)[0]
    torn = bytearray(good[:first_size])
    torn[-5:] = b"\xff" * 5  # the body no longer matches its CRC
    with open(last, "r+b") as f:
        f.seek(end)
        f.write(bytes(torn[: max(40, first_size - 3)]))

    broker = start_broker(tmp_path, namesrv.addr, port=broker.port, **extra)
    try:
        stored_again = asyncio.run(_read_all(broker.addr))
        _check(acked, stored_again)
        assert {q: len(m) for q, m in stored_again.items()} == {q: len(m) for q, m in stored.items()}
        log = broker.log_text()
        assert "torn" in log or "dropped" in log, "the dropped record was not logged"

        async def send_more():
            client = RemotingClient()
            resp = await client.invoke(broker.addr, send_v2(TOPIC, b"after-recovery", queue_id=0), 5)
            assert resp.code == 0
            assert int(resp.ext_fields["queueOffset"]) == len(stored_again[0])
            await client.close()

        asyncio.run(send_more())
    finally:
        broker.stop()
