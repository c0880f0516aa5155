"""``getConsumerStatus`` judged by Apache's own admin API (``DefaultMQAdminExt.getConsumeStatus``, what
Apache's mqadmin command calls; 4.9's mqadmin does not register the command itself): against our
broker, which asks our push consumer (INVOKE_BROKER_TO_GET_CONSUMER_STATUS → GET_CONSUMER_STATUS_FROM_CLIENT),
and against Apache's broker asking our push consumer — the offsets our consumer holds either way; our
CLI's ``getConsumerStatus`` prints the same through either broker."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import pytest

from pyrocketmq.client import Message, Producer
from tests.conformance.apache import run_mqadmin, start_apache_cluster
from tests.integration.procs import start_broker, start_namesrv
from tests.integration.push import Collector, consumer, create_topic, wait_until

pytestmark = pytest.mark.conformance
TOPIC = "StatusTopic"


def _status_with_our_consumer_online(java, namesrv: str, broker: str, tool) -> tuple[dict, dict, str]:
    """Our push consumer reads 8 messages; Apache's admin asks for its offsets while it is online. Then
    ``tool`` (the other side's admin CLI) shows the group's and the producer's connections and rewinds
    the online group (resetOffsetByTime), which our consumer follows: every message read again."""
    result: dict = {}
    online, done = threading.Event(), threading.Event()
    col = Collector("c")

    async def run_consumer():
        await create_topic(namesrv, broker, TOPIC, queues=2)
        async with Producer("status_pg", namesrv) as p:
            for i in range(8):
                await p.send(Message(TOPIC, f"s{i}".encode()))
            c = consumer(namesrv, "GID_STATUS", "status-c", TOPIC, col)
            await c.start()
            try:
                await wait_until(lambda: len(col.messages) >= 8, 60, "8 consumed")
                await wait_until(lambda: sum(c.local_offsets(TOPIC).values()) >= 8, 30, "offsets advanced")
                result["offsets"] = {
                    (mq.broker_name, mq.queue_id): off for mq, off in c.local_offsets(TOPIC).items()
                }
                result["client_id"] = c.instance.client_id
                result["producer_id"] = p.instance.client_id
                await c.persist_offsets(sync=True)  # Apache resets only a group whose offsets it holds
                online.set()
                while not done.is_set():
                    await asyncio.sleep(0.1)
            finally:
                await c.shutdown()

    t = threading.Thread(target=lambda: asyncio.run(run_consumer()), daemon=True)
    t.start()
    try:
        assert online.wait(90), "our consumer did not come online"
        out = java.run("ConsumerStatusScenario", [namesrv, TOPIC, "GID_STATUS"], timeout=120).json()
        ours = subprocess.run(
            [
                sys.executable,
                "-m",
                "pyrocketmq",
                "admin",
                "getConsumerStatus",
                "-n",
                namesrv,
                "-g",
                "GID_STATUS",
                "-t",
                TOPIC,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ours.returncode == 0, ours.stderr
        rows = [line.split() for line in ours.stdout.splitlines()[2:]]
        result["ours"] = {(r[1], int(r[2])): int(r[3]) for r in rows if r[0] == result["client_id"]}
        members = tool("consumerConnection", "-g", "GID_STATUS")
        assert result["client_id"] in members and TOPIC in members and "CONSUME_PASSIVELY" in members, members
        # the tool answers nothing while the broker has not yet had the producer's heartbeat (or
        # its 3 s request timed out on a loaded machine): ask again, for up to 30 s
        deadline, producers = time.monotonic() + 30, ""
        while result["producer_id"] not in producers and time.monotonic() < deadline:
            producers = tool("producerConnection", "-g", "status_pg", "-t", TOPIC)
        assert result["producer_id"] in producers, producers
        rewound = tool("resetOffsetByTime", "-g", "GID_STATUS", "-t", TOPIC, "-s", "0")
        assert "rollback consumer offset by specified group done" in rewound or "#brokerName" in rewound, (
            rewound
        )
        deadline = time.monotonic() + 60
        while len(col.messages) < 16 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sorted(m.body.decode() for m in col.messages) == sorted([f"s{i}" for i in range(8)] * 2)
    finally:
        done.set()
        t.join(30)
    assert result["ours"] == result["offsets"], (result["ours"], result["offsets"])  # our CLI says the same
    return out, result["offsets"], result["client_id"]


def _check(out: dict, offsets: dict, client_id: str) -> None:
    assert "error" not in out, out
    assert list(out["status"]) == [client_id], out
    got = {(q["brokerName"], q["queueId"]): q["offset"] for q in out["status"][client_id]}
    assert got == offsets and sum(got.values()) == 8, (got, offsets)


def test_apache_admin_reads_consumer_status_through_our_broker(tmp_path, java):
    ns = start_namesrv(tmp_path)
    broker = start_broker(tmp_path, ns.addr)

    def mqadmin(*args: str) -> str:
        out = run_mqadmin(tmp_path / "mqadmin-home", [*args, "-n", ns.addr])
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout

    try:
        _check(*_status_with_our_consumer_online(java, ns.addr, broker.addr, mqadmin))
    finally:
        broker.stop()
        ns.stop()


def test_apache_broker_reads_our_consumers_status(tmp_path, java):
    apache = start_apache_cluster(tmp_path / "apache")

    def ours(*args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "pyrocketmq", "admin", *args, "-n", apache.namesrv_addr],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, (args, out.stderr)
        return out.stdout

    try:
        _check(*_status_with_our_consumer_online(java, apache.namesrv_addr, apache.broker_addr, ours))
    finally:
        apache.stop()
