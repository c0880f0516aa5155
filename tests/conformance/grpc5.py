"""Helpers of the 5.x (gRPC) conformance tests: a name server + broker serving the gRPC endpoint, and
a 4.x read-back of what the 5.x clients stored (so the test judges the stored messages themselves)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import MessageExt, decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient
from tests.helpers.cluster import free_port
from tests.integration.procs import Proc, start_broker, start_namesrv
from tests.integration.wire import create_topic, pull


@dataclass
class GrpcCluster:
    namesrv: Proc
    broker: Proc
    grpc_port: int

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def stop(self) -> None:
        self.broker.stop()
        self.namesrv.stop()

    def log_tails(self, lines: int = 60) -> str:
        return "\n".join(f"===== {p.name} =====\n" + "\n".join(p.log_text().splitlines()[-lines:])
                         for p in (self.namesrv, self.broker))


def start_grpc_cluster(tmp: Path, **broker_conf: object) -> GrpcCluster:
    ns = start_namesrv(tmp)
    grpc_port = free_port()
    try:
        broker = start_broker(tmp, ns.addr, grpcListenPort=grpc_port, **broker_conf)
    except BaseException:
        ns.stop()
        raise
    return GrpcCluster(ns, broker, grpc_port)


def cluster_fixture(name: str, **broker_conf: object) -> Any:
    """A test module's ``cluster`` fixture: a :class:`GrpcCluster` of its own (``broker_conf`` as for
    :func:`start_grpc_cluster`), stopped after the module."""

    @pytest.fixture(scope="module", name="cluster")
    def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GrpcCluster]:
        c = start_grpc_cluster(tmp_path_factory.mktemp(name), **broker_conf)
        try:
            yield c
        finally:
            c.stop()

    return cluster


def admin(addr: str, cmd: RemotingCommand, ssl: object = None) -> RemotingCommand:
    async def go() -> RemotingCommand:
        client = RemotingClient(ssl=ssl)
        try:
            return await client.invoke(addr, cmd, 10)
        finally:
            await client.close()

    return asyncio.run(go())


def make_topic(cluster: GrpcCluster, topic: str, queues: int = 4, ssl: object = None) -> None:
    resp = admin(cluster.broker.addr, create_topic(topic, queues), ssl)
    assert resp.code == ResponseCode.SUCCESS, resp.remark


def read_topic(addr: str, topic: str, queues: int = 4) -> list[MessageExt]:
    """Every message stored in ``topic``'s queues, in queue order (4.x pulls from offset 0)."""
    async def go() -> list[MessageExt]:
        client = RemotingClient()
        out: list[MessageExt] = []
        try:
            for qid in range(queues):
                offset = 0
                while True:
                    resp = await client.invoke(addr, pull(topic, qid, offset, group="grpc5-readback"), 10)
                    if resp.code != ResponseCode.SUCCESS:
                        break
                    batch = decode_messages(resp.payload)
                    if not batch:
                        break
                    out.extend(batch)
                    offset = batch[-1].queue_offset + 1
        finally:
            await client.close()
        return out

    return asyncio.run(go())
