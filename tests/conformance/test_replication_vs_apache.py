"""HA interoperability with Apache RocketMQ 4.9: our slave replicates from an Apache master, and an
Apache slave from our master. Messages are sent to the master, then read back from the slave by
pulls; the slave must hold each one at the queue offset and commitlog offset the master gave it."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.transport import RemotingClient, RemotingError
from tests.conformance import apache, jvm, maven
from tests.helpers.cluster import (
    REPO_ROOT,
    ManagedProcess,
    free_broker_port,
    pyrocketmq_broker_conf,
    start_pyrocketmq_cluster,
    wait_for_tcp,
    write_properties,
)
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
    raise AssertionError(f"slave {addr} holds {len(got)} of {len(sent)}; missing {missing}, differing {wrong}")


def test_our_slave_replicates_from_an_apache_master(rocketmq_jars, tmp_path: Path) -> None:
    cluster = apache.start_apache_cluster(tmp_path / "apache")
    try:
        port = free_broker_port()
        conf = pyrocketmq_broker_conf(
            cluster.namesrv_addr, port, tmp_path / "slave" / "store", brokerId=1, brokerRole="SLAVE"
        )
        slave = ManagedProcess(
            "pyrocketmq-slave",
            [sys.executable, "-m", "pyrocketmq", "broker", "-c", str(write_properties(tmp_path / "slave.conf", conf))],
            tmp_path / "slave.log",
            cwd=REPO_ROOT,
            env={"PYTHONUNBUFFERED": "1"},
        )
        cluster.processes.append(slave.start())
        wait_for_tcp("127.0.0.1", port, 30, slave.alive)
        sent = asyncio.run(_send_all(cluster.broker_addr))
        _until_slave_holds(f"127.0.0.1:{port}", sent)
    finally:
        cluster.stop()


def test_an_apache_slave_replicates_from_our_master(rocketmq_jars, tmp_path: Path) -> None:
    cluster = start_pyrocketmq_cluster(tmp_path / "ours")
    try:
        home = tmp_path / "apache-slave"
        conf_dir = home / "conf"
        conf_dir.mkdir(parents=True)
        (conf_dir / "logback_broker.xml").write_text(apache._LOGBACK)
        port = free_broker_port()
        values = {**apache.apache_broker_conf(cluster.namesrv_addr, port, home), "brokerId": 1, "brokerRole": "SLAVE"}
        conf = write_properties(conf_dir / "broker.conf", values)
        server_lib = maven.resolve(maven.SERVER)
        slave = ManagedProcess(
            "apache-slave",
            [jvm.java_executable(), *apache.SERVER_HEAP, *jvm.SERVER_JDK17_FLAGS, f"-Drocketmq.home.dir={home}",
             f"-Duser.home={home}", "-Dfile.encoding=UTF-8", "-cp", maven.classpath(server_lib), apache.BROKER_MAIN,
             "-c", str(conf)],
            home / "broker.log",
            cwd=home,
        )
        cluster.processes.append(slave.start())
        slave.wait_for_log("boot success", 90)
        sent = asyncio.run(_send_all(cluster.broker_addr))
        _until_slave_holds(f"127.0.0.1:{port}", sent)
    finally:
        cluster.stop()
