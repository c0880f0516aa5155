"""Connections and registrations that try to make a real name-server process hold memory or time
before they prove anything: a frame trickled a byte at a time is cut off at its deadline, the
partial frames of connections with no request accepted yet share one cap, and a decompression
bomb is refused without being inflated; well-behaved clients are served throughout."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
import zlib

from pyrocketmq.remoting.body import MAX_INFLATED_REGISTER_BODY
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient

from .procs import start_namesrv


def _served(addr: str) -> bool:
    async def ask() -> bool:
        client = RemotingClient()
        try:
            resp = await client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {}), 5
            )
            return resp.code == ResponseCode.SUCCESS
        finally:
            await client.close()

    return asyncio.run(ask())


def _closed(sock: socket.socket, wait: float) -> bool:
    sock.settimeout(wait)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:  # reset
        return True


def _wait_logged(proc, words: str, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if words in proc.log_text():
            return True
        time.sleep(0.05)
    return False


def test_a_trickled_frame_is_cut_off_at_its_deadline(tmp_path):
    ns = start_namesrv(tmp_path, serverFrameTimeoutSeconds=1)
    try:
        with socket.create_connection(("127.0.0.1", ns.port)) as sock:
            sock.sendall(struct.pack(">i", 1000))
            started = time.monotonic()
            closed_after = None
            while time.monotonic() - started < 10:
                try:
                    sock.sendall(b"x")  # never idle, never a whole frame
                except OSError:
                    closed_after = time.monotonic() - started
                    break
                if _closed(sock, 0.2):
                    closed_after = time.monotonic() - started
                    break
            assert closed_after is not None, "a frame trickled for 10 s was not cut off"
            assert 0.9 <= closed_after <= 4.0, closed_after
        assert _wait_logged(ns, "a frame not whole 1 s after its first byte")
        assert _served(ns.addr)
    finally:
        ns.stop()


def test_partial_frames_of_connections_that_proved_nothing_share_one_cap(tmp_path):
    ns = start_namesrv(tmp_path, serverMaxUnprovenBytes=1_000_000)
    socks: list[socket.socket] = []
    try:
        for _ in range(5):  # each announces a 2 MB frame and sends 300 kB of it
            s = socket.create_connection(("127.0.0.1", ns.port))
            s.sendall(struct.pack(">i", 2_000_000) + b"\0" * 300_000)
            socks.append(s)
            time.sleep(0.3)
        state = [_closed(s, 0.5) for s in socks]
        assert state == [False, False, False, True, True], state  # 3 × 300 kB fit, a fourth does not
        assert _wait_logged(ns, "would pass the 1000000 bytes all such connections may hold")
        assert _served(ns.addr)  # a small first request fits; once answered, the connection is proven
        for s in socks[:3]:
            s.close()
        time.sleep(0.3)
        again = socket.create_connection(("127.0.0.1", ns.port))
        socks.append(again)
        again.sendall(
            struct.pack(">i", 2_000_000) + b"\0" * 900_000
        )  # what the closed ones held is free again
        assert not _closed(again, 0.5)
    finally:
        for s in socks:
            s.close()
        ns.stop()


def _bomb(size: int) -> bytes:
    c = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    return b"".join(c.compress(chunk) for _ in range(size >> 20)) + c.flush()


def _peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_a_decompression_bomb_is_refused_and_the_name_server_serves_on(tmp_path):
    ns = start_namesrv(tmp_path)
    bomb = _bomb(256 << 20)
    ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster",
           "haServerAddr": "127.0.0.1:10912", "brokerId": "0", "compressed": "true"}

    async def attack() -> tuple[RemotingCommand, list[int]]:
        bad, good = RemotingClient(), RemotingClient()
        try:
            pending = asyncio.ensure_future(bad.invoke(ns.addr, RemotingCommand.request(
                RequestCode.REGISTER_BROKER, ext, bomb), 30))
            others = [
                await good.invoke(
                    ns.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {}), 10
                )
                for _ in range(20)
            ]
            return await pending, [r.code for r in others]
        finally:
            await bad.close()
            await good.close()

    try:
        resp, others = asyncio.run(attack())
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert f"inflates to more than {MAX_INFLATED_REGISTER_BODY} bytes" in (resp.remark or ""), resp.remark
        assert others == [ResponseCode.SUCCESS] * 20
        assert ns.proc is not None
        assert _peak_rss(ns.proc.pid) < 200 << 20, "the bomb was inflated"
        assert _served(ns.addr)
    finally:
        ns.stop()
