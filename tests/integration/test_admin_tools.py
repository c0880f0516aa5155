"""The CLI's broker and group tools against real processes: brokerStatus, getBrokerConfig,
updateBrokerConfig (a setting that can change at run time applied; another refused, with what to do
instead), producerConnection, cloneGroupOffset,
deleteSubGroup and topicClusterList."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading

import pytest

from pyrocketmq.client import Admin, Message, Producer, PullConsumer, PullConsumerSettings
from pyrocketmq.remoting.body import MessageQueue

from .push import create_topic

TOPIC = "ToolsTopic"


def cli(namesrv: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyrocketmq", "admin", *args, "-n", namesrv],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.fixture
def producing(namesrv, broker):
    """A producer of group tools_pg kept connected (heartbeating) while the test runs."""
    stop = threading.Event()
    ready = threading.Event()

    async def run():
        await create_topic(namesrv.addr, broker.addr, TOPIC, queues=2)
        async with Producer("tools_pg", namesrv.addr) as p:
            for i in range(6):
                await p.send(Message(TOPIC, f"t{i}".encode()))
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.1)

    t = threading.Thread(target=lambda: asyncio.run(run()), daemon=True)
    t.start()
    assert ready.wait(30)
    yield
    stop.set()
    t.join(30)


def test_broker_and_group_tools(namesrv, broker, producing):
    out = cli(namesrv.addr, "brokerStatus", "-b", broker.addr)
    assert out.returncode == 0 and "commitLogMaxOffset" in out.stdout, out
    out = cli(namesrv.addr, "getBrokerConfig", "-c", "DefaultCluster")
    assert out.returncode == 0, out.stderr
    config = dict(
        (k.strip(), v.strip()) for k, _, v in (line.partition("=  ") for line in out.stdout.splitlines()[1:])
    )
    assert out.stdout.startswith(f"============{broker.addr}============")
    assert config["brokerName"] == "broker-a" and config["maxMessageSize"] == str(64 * 1024)
    assert config["flushDiskType"] == "ASYNC_FLUSH" and "secretKey" not in config
    out = cli(namesrv.addr, "updateBrokerConfig", "-b", broker.addr, "-k", "slaveReadEnable", "-v", "true")
    assert (
        out.returncode != 0
        and "cannot change while the broker runs" in out.stderr
        and "Traceback" not in out.stderr
    )
    out = cli(
        namesrv.addr, "updateBrokerConfig", "-c", "DefaultCluster", "-k", "diskMaxUsedSpaceRatio", "-v", "80"
    )
    assert out.returncode == 0 and f"update broker config success, {broker.addr}" in out.stdout, out
    out = cli(namesrv.addr, "getBrokerConfig", "-b", broker.addr)
    assert "diskMaxUsedSpaceRatio                             =  80" in out.stdout, out.stdout

    out = cli(namesrv.addr, "producerConnection", "-g", "tools_pg", "-t", TOPIC)
    assert out.returncode == 0 and out.stdout.startswith("0001  ") and "PYTHON" in out.stdout, out
    out = cli(namesrv.addr, "producerConnection", "-g", "nobody_pg", "-t", TOPIC)
    assert out.returncode != 0 and "not exist" in out.stderr

    async def commit():
        settings = PullConsumerSettings(consume_from="first")
        async with PullConsumer("tools_src", namesrv.addr, settings) as c:
            await c.assign(await c.fetch_queues(TOPIC))
            got = []
            while len(got) < 6:
                got += await c.poll(timeout=1)
            await c.commit()

    asyncio.run(commit())
    out = cli(
        namesrv.addr, "cloneGroupOffset", "-s", "tools_src", "-d", "tools_dst", "-t", TOPIC, "-o", "true"
    )
    assert out.returncode == 0 and "clone group offset success" in out.stdout, out

    async def offsets(group: str):
        async with Admin(namesrv.addr) as admin:
            return {
                q: await admin.instance.query_consumer_offset(group, MessageQueue(TOPIC, "broker-a", q))
                for q in (0, 1)
            }

    assert (
        asyncio.run(offsets("tools_dst")) == asyncio.run(offsets("tools_src"))
        and sum(asyncio.run(offsets("tools_dst")).values()) == 6
    )

    out = cli(namesrv.addr, "clusterRT", "-a", "5", "-s", "64")
    assert out.returncode == 0, out.stderr
    row = out.stdout.splitlines()[1].split()
    assert (
        out.stdout.startswith("#Cluster Name")
        and row[:2] == ["DefaultCluster", "broker-a"]
        and row[3:] == ["5", "0"]
    ), out
    out = cli(namesrv.addr, "topicClusterList", "-t", TOPIC)
    assert out.returncode == 0 and out.stdout.split() == ["DefaultCluster"], out
    out = cli(namesrv.addr, "deleteSubGroup", "-g", "tools_dst", "-c", "DefaultCluster")
    assert out.returncode == 0 and "delete subscription group [tools_dst] from broker" in out.stdout, out

    async def groups():
        async with Admin(namesrv.addr) as admin:
            return set(await admin.broker_subscription_groups(broker.addr))

    assert "tools_dst" not in asyncio.run(groups()) and "tools_src" in asyncio.run(groups())


def test_get_consumer_status_asks_the_online_consumers(namesrv, broker, producing):
    from .push import Collector, consumer, wait_until

    async def go():
        col = Collector("c")
        c = consumer(namesrv.addr, "tools_live", "status-c", TOPIC, col)
        await c.start()
        try:
            await wait_until(lambda: len(col.messages) >= 6, 30, "6 consumed")
            await wait_until(lambda: sum(c.local_offsets(TOPIC).values()) >= 6, 30, "offsets advanced")
            out = await asyncio.to_thread(
                cli, namesrv.addr, "getConsumerStatus", "-g", "tools_live", "-t", TOPIC
            )
            return out, c.instance.client_id
        finally:
            await c.shutdown()

    out, client_id = asyncio.run(go())
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()[2:]]
    assert out.stdout.startswith("get consumer status from client. group=tools_live")
    assert {r[0] for r in rows} == {client_id} and sorted((r[2], r[3]) for r in rows) == [
        ("0", "3"),
        ("1", "3"),
    ], out.stdout
    out = cli(namesrv.addr, "getConsumerStatus", "-g", "tools_live", "-t", TOPIC)  # nobody online now
    assert out.returncode != 0 and "No Any Consumer online" in out.stderr
