"""Controller mode: a master serves consumers only what every in-sync replica holds (RocketMQ 5's
confirm offset). A message its slave has not received yet would be lost with the master, and a
consumer that had read it would skip the message the elected slave writes at the same queue
offset; so it is not pulled, nor announced to a held pull, until the slave holds it, and a pull
held meanwhile answers as soon as the slave acknowledges. The second test plays the loss itself:
the replication stream cut (iptables, removed afterwards), the master killed holding a message,
and a reader that goes on at its own offset on the elected slave gets the message written there."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient

from ..helpers.prereq import missing_prerequisite
from .failover import controller_group, in_sync_with_topic, until, view
from .wire import max_phy_offset, pull, send_v2

TOPIC = "ConfirmedReadTopic"
HOLD_MS = 20_000


def test_a_message_is_read_only_once_the_in_sync_slave_holds_it(tmp_path) -> None:
    with controller_group(tmp_path, 2) as (ns, replicas):
        asyncio.run(_scenario(ns, replicas))


async def _scenario(ns, replicas) -> None:
    client = RemotingClient()
    try:
        first, other = await in_sync_with_topic(client, ns.addr, replicas, TOPIC)
        master, slave = replicas[first], replicas[other]
        assert (await client.invoke(master.addr, send_v2(TOPIC, b"first"), 10)).code == ResponseCode.SUCCESS
        assert await _bodies(client, master.addr, 0) == ["first"]

        before = await max_phy_offset(client, master.addr)
        os.kill(slave.proc.pid, signal.SIGSTOP)  # connected, silent: it acknowledges nothing
        try:
            sending = asyncio.create_task(client.invoke(master.addr, send_v2(TOPIC, b"second"), 30))
            await until("the second message in the master's commitlog",
                        lambda: _grew(client, master.addr, before), timeout=10)
            resp = await client.invoke(master.addr, pull(TOPIC, 0, 1), 10)
            assert resp.code == ResponseCode.PULL_NOT_FOUND, (
                f"read before the slave holds it: {resp.code} {resp.remark}"
            )
            held = asyncio.create_task(client.invoke(master.addr, pull(TOPIC, 0, 1, suspend_ms=HOLD_MS), 40))
            await asyncio.sleep(1.0)
            assert not held.done(), "a held pull was answered before the slave held the message"
        finally:
            os.kill(slave.proc.pid, signal.SIGCONT)
        resumed = time.monotonic()
        resp = await held
        waited = time.monotonic() - resumed
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        assert [m.body.decode() for m in decode_messages(resp.body)] == ["second"]
        # held for 20 s: answered well before, it was woken by the slave's acknowledgement
        assert waited < HOLD_MS / 2000, f"the held pull answered {waited:.1f} s after the slave resumed"
        assert (await sending).code == ResponseCode.SUCCESS
        print(f"\nheld pull answered {waited * 1000:.0f} ms after the slave resumed")
    finally:
        await client.close()


def test_a_reader_following_a_failover_misses_nothing(tmp_path) -> None:
    if os.geteuid() != 0 or shutil.which("iptables") is None:
        missing_prerequisite("failover", "cutting the replication stream needs root and iptables")
    with controller_group(tmp_path, 2) as (ns, replicas):
        asyncio.run(_failover(ns, replicas))


@contextmanager
def replication_cut(master_port: int) -> Iterator[None]:
    """Drop what the master's HA port (``listenPort + 1``) sends on loopback: its slave gets nothing more."""
    rule = ["INPUT", "-i", "lo", "-p", "tcp", "--sport", str(master_port + 1), "-m", "comment", "--comment",
            f"pyrocketmq-test-{os.getpid()}", "-j", "DROP"]
    subprocess.run(["iptables", "-I", *rule], check=True)
    try:
        yield
    finally:
        subprocess.run(["iptables", "-D", *rule], check=True)


async def _failover(ns, replicas) -> None:
    """The master dies holding a message its slave never got; the reader goes on at its own offset
    on the elected slave and gets the message written there in its place."""
    client = RemotingClient()
    try:
        first, other = await in_sync_with_topic(client, ns.addr, replicas, TOPIC)
        master, slave = replicas[first], replicas[other]
        assert (await client.invoke(master.addr, send_v2(TOPIC, b"kept"), 10)).code == ResponseCode.SUCCESS
        assert await _bodies(client, master.addr, 0) == ["kept"]
        before = await max_phy_offset(client, master.addr)
        # The cut stays until the slave is elected and has written: the dead master's socket still
        # holds the doomed bytes, and the kernel keeps sending them after the process is gone.
        with replication_cut(master.port):
            doomed = asyncio.create_task(client.invoke(master.addr, send_v2(TOPIC, b"doomed"), 30))
            await until("the doomed message in the master's commitlog",
                        lambda: _grew(client, master.addr, before), timeout=10)
            resp = await client.invoke(master.addr, pull(TOPIC, 0, 1), 10)
            got = (
                [m.body.decode() for m in decode_messages(resp.body)]
                if resp.code == ResponseCode.SUCCESS
                else []
            )
            nxt = int(resp.ext_fields["nextBeginOffset"])
            master.kill9()
            assert isinstance((await asyncio.gather(doomed, return_exceptions=True))[0], Exception)
            await until("the slave elected", lambda: _master_is(client, ns.addr, other), timeout=30)
            sent = await _send_until_stored(client, slave.addr, b"instead")
        assert sent.ext_fields["queueOffset"] == "1", sent.ext_fields  # where the doomed one was
        await until("the reader's next pull on the new master",
                    lambda: _read_on(client, slave.addr, nxt, got), timeout=10)
        assert got == ["instead"], f"the reader saw {got}"
    finally:
        await client.close()


async def _master_is(client: RemotingClient, ns: str, rid: int) -> bool:
    v = await view(client, ns)
    return v["masterId"] == rid and v["epochStart"] >= 0


async def _send_until_stored(client: RemotingClient, addr: str, body: bytes):
    deadline = time.monotonic() + 30
    while True:
        resp = await client.invoke(addr, send_v2(TOPIC, body), 10)
        if resp.code == ResponseCode.SUCCESS or time.monotonic() > deadline:
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            return resp
        await asyncio.sleep(0.2)  # not serving writes yet


async def _read_on(client: RemotingClient, addr: str, offset: int, got: list[str]) -> bool:
    resp = await client.invoke(addr, pull(TOPIC, 0, offset), 10)
    if resp.code == ResponseCode.SUCCESS:
        got.extend(m.body.decode() for m in decode_messages(resp.body))
        return True
    return False


async def _bodies(client: RemotingClient, addr: str, offset: int) -> list[str]:
    resp = await client.invoke(addr, pull(TOPIC, 0, offset), 10)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return [m.body.decode() for m in decode_messages(resp.body)]


async def _grew(client: RemotingClient, addr: str, before: int) -> bool:
    return await max_phy_offset(client, addr) > before
