"""HA interoperability with Apache RocketMQ 4.9: our slave replicates from an Apache master, and an
Apache slave from our master. Messages are sent to the master, then read back from the slave by
pulls; the slave must hold each one at the queue offset and commitlog offset the master gave it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import RemotingError
from tests.conformance import apache
from tests.helpers.cluster import start_pyrocketmq_cluster, start_pyrocketmq_slave
from tests.integration.wire import create_topic, pull, send_v2

TOPIC = "HaConformance"
QUEUES = 2
COUNT = 30
DEADLINE = 90.0


async def _send_all(addr: str) -> dict[tuple[int, int], tuple[bytes, str]]:
    """(queue, queue offset) → (body, offset message id) of each message the master stored."""
    client = RemotingClient()
    sent = {}
    try:
        assert (await client.invoke(addr, create_topic(TOPIC, QUEUES), 10)).code == ResponseCode.SUCCESS
        for i in range(COUNT):
            body = f"ha-{i}".encode() * 10
            resp = await client.invoke(addr, send_v2(TOPIC, body, queue_id=i % QUEUES), 10)
            assert resp.code == ResponseCode.SUCCESS, resp
            sent[(i % QUEUES, int(resp.ext_fields["queueOffset"]))] = (body, resp.ext_fields["msgId"])
    finally:
        await client.close()
    return sent


async def _read_slave(addr: str) -> dict[tuple[int, int], tuple[bytes, str]]:
    client = RemotingClient()
    got = {}
    try:
        for q in range(QUEUES):
            offset = 0
            while True:
                try:
                    resp = await client.invoke(addr, pull(TOPIC, q, offset, max_nums=32), 10)
                except RemotingError:
                    break
                if resp.code != ResponseCode.SUCCESS:
                    break
                for m in decode_messages(resp.body):
                    got[(m.queue_id, m.queue_offset)] = (m.body, m.msg_id)
                offset = int(resp.ext_fields["nextBeginOffset"])
    finally:
        await client.close()
    return got


def _until_slave_holds(addr: str, sent: dict) -> None:
    end = time.monotonic() + DEADLINE
    got: dict = {}
    while time.monotonic() < end:
        got = asyncio.run(_read_slave(addr))
        if got == sent:
            return
        time.sleep(0.5)
    missing = sorted(set(sent) - set(got))[:5]
    wrong = sorted(k for k in sent if k in got and got[k] != sent[k])[:5]
    raise AssertionError(
        f"slave {addr} holds {len(got)} of {len(sent)}; missing {missing}, differing {wrong}"
    )


def test_our_slave_replicates_from_an_apache_master(rocketmq_jars, tmp_path: Path) -> None:
    cluster = apache.start_apache_cluster(tmp_path / "apache")
    try:
        slave, port = start_pyrocketmq_slave(cluster.namesrv_addr, tmp_path / "slave")
        cluster.processes.append(slave)
        sent = asyncio.run(_send_all(cluster.broker_addr))
        _until_slave_holds(f"127.0.0.1:{port}", sent)
    finally:
        cluster.stop()


def test_an_apache_slave_replicates_from_our_master(rocketmq_jars, tmp_path: Path) -> None:
    cluster = start_pyrocketmq_cluster(tmp_path / "ours")
    try:
        slave, port = apache.start_apache_slave(cluster.namesrv_addr, tmp_path / "apache-slave")
        cluster.processes.append(slave)
        sent = asyncio.run(_send_all(cluster.broker_addr))
        _until_slave_holds(f"127.0.0.1:{port}", sent)
    finally:
        cluster.stop()
