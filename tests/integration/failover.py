"""Helpers of the controller-mode tests: a name server with the controller, a group of replicas,
the controller's view, a continuous producer that records what was acknowledged, and the checker
that reads every acknowledged message back at its queue offset."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyrocketmq.client import Message, Producer
from pyrocketmq.client.errors import MQError
from pyrocketmq.client.settings import ClientSettings, ProducerSettings
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.msg_id import decode_offset_msg_id
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import RemotingError

from .procs import Proc, free_port, start_broker, start_namesrv
from .wire import create_topic, pull

GROUP = "broker-a"


def start_controller_namesrv(tmp: Path, name: str = "namesrv", **sets: object) -> Proc:
    return start_namesrv(tmp, name, enableControllerInNamesrv="true",
                         controllerStorePath=tmp / name / "controller.json", **sets)


def start_replica(
    tmp: Path, ns: str, rid: int, role: str = "SYNC_MASTER", port: int | None = None, **extra: object
) -> Proc:
    return start_broker(
        tmp,
        ns,
        name=f"{GROUP}-{rid}",
        port=port or free_port(span=1),
        brokerName=GROUP,
        brokerId=rid,
        brokerRole=role,
        enableControllerMode="true",
        controllerAddr=ns,
        **extra,
    )


@contextmanager
def all_stopped() -> Iterator[Callable[[Proc], Proc]]:
    """``keep(proc)`` registers a started process; every one is stopped afterwards (resumed first if
    a test paused it)."""
    started: list[Proc] = []

    def keep(proc: Proc) -> Proc:
        started.append(proc)
        return proc

    try:
        yield keep
    finally:
        for proc in reversed(started):
            if proc.proc is not None and proc.proc.poll() is None:
                os.kill(proc.proc.pid, signal.SIGCONT)
            proc.stop()


@contextmanager
def controller_group(
    tmp: Path,
    replicas: int = 2,
    role: str = "SYNC_MASTER",
    ns_sets: dict[str, object] | None = None,
    **extra: object,
) -> Iterator[tuple[Proc, dict[int, Proc]]]:
    """A name server with the controller and a group of ``replicas`` (ids 1..n); every process that
    started is stopped afterwards, also when a later one failed to start."""
    with all_stopped() as keep:
        ns = keep(start_controller_namesrv(tmp, **(ns_sets or {})))
        yield (
            ns,
            {rid: keep(start_replica(tmp, ns.addr, rid, role, **extra)) for rid in range(1, replicas + 1)},
        )


async def view(client: RemotingClient, ns: str) -> dict[str, Any]:
    """The leading controller's view of the group ({} before its first replica reported); ``ns`` may
    list several controllers (``a;b;c``)."""
    body = json.dumps({"brokerName": GROUP}).encode()
    for addr in ns.split(";"):
        try:
            resp = await client.invoke(
                addr, RemotingCommand.request(RequestCode.CONTROLLER_GET_METADATA_INFO, {}, body), 2
            )
        except RemotingError:
            continue
        if resp.code == ResponseCode.CONTROLLER_NOT_LEADER:
            continue
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        groups = json.loads(bytes(resp.payload))["groups"]
        return groups[0] if groups else {}
    raise AssertionError(f"no controller leads among {ns}")


async def until(what: str, check: Callable[[], Awaitable[bool]], timeout: float = 60.0) -> float:
    """Poll ``check`` every 0.1 s; the seconds it took."""
    start = time.monotonic()
    while True:
        try:
            if await check():
                return time.monotonic() - start
        except (RemotingError, AssertionError, KeyError):
            pass
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.1)


@dataclass
class Acked:
    """What a continuous producer was told: body → (queue id, queue offset, broker address)."""

    sent: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    at: dict[str, float] = field(default_factory=dict)
    """body → monotonic time of its acknowledgement."""
    stored_at: dict[str, int] = field(default_factory=dict)
    """body → the commitlog offset it was stored at (from its offset message id)."""
    failures: int = 0


async def produce(ns: str, topic: str, stop: asyncio.Event, acked: Acked, tag: str,
                  on_ok: Callable[[str], None] | None = None) -> None:
    """Send one message at a time until ``stop``; record every SEND_OK (with its broker's address)."""
    settings = ClientSettings(instance_name=f"failover-{tag}", client_ip="127.0.0.1", request_timeout=3)
    async with Producer(f"failover_pg_{tag}", ns, ProducerSettings(send_timeout=3), client=settings) as p:
        i = 0
        while not stop.is_set():
            body = f"{tag}-{i}"
            i += 1
            try:
                r = await p.send(Message(topic, body.encode()))
            except MQError:
                acked.failures += 1
                await asyncio.sleep(0.05)
                continue
            if r.status.name == "SEND_OK":
                host, port, phy = decode_offset_msg_id(
                    r.offset_msg_id
                )  # the broker that stored it, and where
                addr = f"{host}:{port}"
                acked.sent[body] = (r.message_queue.queue_id, r.queue_offset, addr)
                acked.stored_at[body] = phy
                acked.at[body] = time.monotonic()
                if on_ok is not None:
                    on_ok(addr)
            else:
                acked.failures += 1


async def read_queue(client: RemotingClient, addr: str, topic: str, qid: int) -> dict[int, str]:
    """Queue offset → body of every message of one queue on one broker."""
    out: dict[int, str] = {}
    offset = 0
    while True:
        resp = await client.invoke(addr, pull(topic, qid, offset, max_nums=32), 10)
        if resp.code != ResponseCode.SUCCESS:
            return out
        for m in decode_messages(resp.body):
            out[m.queue_offset] = m.body.decode()
        offset = int(resp.ext_fields["nextBeginOffset"])


async def lost(client: RemotingClient, addr: str, topic: str, queues: int, acked: Acked) -> list[str]:
    """Acknowledged messages not found at their queue offset on ``addr``."""
    stored = {q: await read_queue(client, addr, topic, q) for q in range(queues)}
    return [body for body, (q, off, _) in acked.sent.items() if stored[q].get(off) != body]


async def in_sync(client: RemotingClient, ns: str, n: int = 2) -> bool:
    """A master that recorded its epoch start, with ``n`` replicas in the in-sync set."""
    v = await view(client, ns)
    return v.get("masterId", -1) > 0 and v["epochStart"] >= 0 and len(v["syncStateSet"]) == n


async def has_topic(client: RemotingClient, addr: str, topic: str) -> bool:
    """The broker at ``addr`` has ``topic`` (a slave: once its config sync copied it)."""
    resp = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {}), 5)
    return topic.encode() in bytes(resp.payload or b"")


async def in_sync_with_topic(
    client: RemotingClient, ns: str, replicas: dict[int, Proc], topic: str
) -> tuple[int, int]:
    """Once a master has both replicas in sync: ``topic`` (one queue) made on it and copied to its
    slave. ``(master id, slave id)``."""
    await until("a master with both replicas in sync", lambda: in_sync(client, ns))
    first = (await view(client, ns))["masterId"]
    other = 3 - first
    assert (await client.invoke(replicas[first].addr, create_topic(topic, 1), 10)).code == 0
    await until("the topic on the slave", lambda: has_topic(client, replicas[other].addr, topic))
    return first, other


async def count(acked: Acked, n: int) -> bool:
    return len(acked.sent) >= n
