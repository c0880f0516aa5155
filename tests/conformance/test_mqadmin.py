"""Apache's own ``mqadmin`` (the server distribution's tools) against a pyrocketmq cluster: the
message lookups find what our broker stored, and print it."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from pyrocketmq.client import Message, Producer
from tests.conformance.apache import run_mqadmin
from tests.integration.procs import start_broker, start_namesrv
from tests.integration.push import create_topic

pytestmark = pytest.mark.conformance
TOPIC = "MqadminLookups"


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mqadmin-ours")
    ns = start_namesrv(tmp)
    broker = start_broker(tmp, ns.addr)
    try:
        async def fill():
            await create_topic(ns.addr, broker.addr, TOPIC, queues=2)
            async with Producer("mqadmin_pg", ns.addr) as p:
                return [await p.send(Message(TOPIC, f"body-{i}".encode(), tags="t",
                                             keys=["k7" if i % 3 == 0 else f"x{i}"]))
                        for i in range(9)]  # fmt: skip

        yield ns, broker, asyncio.run(fill()), tmp
    finally:
        broker.stop()
        ns.stop()


def _mqadmin(tmp, *args: str) -> str:
    out = run_mqadmin(tmp / "mqadmin-home", args)
    assert out.returncode == 0, (
        f"mqadmin {' '.join(args)}: exit {out.returncode}\n{out.stderr[-3000:]}\n{out.stdout[-2000:]}"
    )
    return out.stdout


@pytest.fixture
def body_files():
    """Apache's lookups write bodies to /tmp/rocketmq/msgbodys: removed afterwards if this test made it."""
    root = Path("/tmp/rocketmq")
    existed = root.exists()
    made: list[Path] = []
    yield made
    for path in made:
        path.unlink(missing_ok=True)
    if not existed:
        shutil.rmtree(root, ignore_errors=True)


def test_apache_mqadmin_finds_our_messages(ours, body_files):
    ns, _, sent, tmp = ours
    by_key = _mqadmin(tmp, "queryMsgByKey", "-n", ns.addr, "-t", TOPIC, "-k", "k7")
    ids = {line.split()[0] for line in by_key.splitlines()[1:] if line.strip()}
    assert ids == {sent[i].msg_id for i in (0, 3, 6)}, by_key

    r = sent[4]
    for args in (("queryMsgById", "-i", r.offset_msg_id),
                 ("queryMsgByUniqueKey", "-t", TOPIC, "-i", r.msg_id),
                 ("queryMsgByOffset", "-t", TOPIC, "-b", r.message_queue.broker_name,
                  "-i", str(r.message_queue.queue_id), "-o", str(r.queue_offset))):  # fmt: skip
        shown = _mqadmin(tmp, *args, "-n", ns.addr)
        fields = dict(line.split(":", 1) for line in shown.splitlines() if ":" in line)
        assert fields["Topic"].strip() == TOPIC and fields["Keys"].strip() == "[x4]", shown
        assert (int(fields["Queue ID"]), int(fields["Queue Offset"])) == (
            r.message_queue.queue_id,
            r.queue_offset,
        ), shown
        body_files.append(Path(fields["Message Body Path"].strip()))
        assert body_files[-1].read_bytes() == b"body-4", shown
    printed = _mqadmin(tmp, "printMsg", "-n", ns.addr, "-t", TOPIC)
    assert all(f"BODY: body-{i}" in printed for i in range(9)), printed[-3000:]


def test_our_lookups_against_apache(tmp_path):  # long: one mqadmin session, step by step
    import subprocess
    import sys

    from tests.conformance.apache import start_apache_cluster

    apache = start_apache_cluster(tmp_path / "apache")
    try:
        async def fill():
            async with Producer("lookup_pg", apache.namesrv_addr) as p:
                return [await p.send(Message(TOPIC, f"body-{i}".encode(), tags="t",
                                             keys=["k7" if i % 3 == 0 else f"x{i}"]))
                        for i in range(9)]  # fmt: skip

        sent = asyncio.run(fill())

        async def consume():
            from pyrocketmq.client import PullConsumer, PullConsumerSettings

            async with PullConsumer(
                "lookup_cg", apache.namesrv_addr, PullConsumerSettings(consume_from="first")
            ) as c:
                await c.assign(await c.fetch_queues(TOPIC))
                got = []
                while len(got) < 9:
                    got += await c.poll(timeout=1)
                # one queue after another, confirmed: oneway commits arriving at once can overwrite
                # each other in a 4.9 broker's new offset table (see PullConsumer.commit_sync)
                await c.commit_sync()

        asyncio.run(consume())

        def cli(*args: str) -> str:
            out = subprocess.run([sys.executable, "-m", "pyrocketmq", "admin", *args,
                                  "-n", apache.namesrv_addr],
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
            assert out.returncode == 0, out.stderr
            return out.stdout

        ids = {line.split()[0] for line in cli("queryMsgByKey", "-t", TOPIC, "-k", "k7").splitlines()[1:]}
        r = sent[4]
        shown = [cli("queryMsgByUniqueKey", "-t", TOPIC, "-i", r.msg_id),
                 cli("queryMsgByOffset", "-t", TOPIC, "-b", r.message_queue.broker_name,
                     "-i", str(r.message_queue.queue_id), "-o", str(r.queue_offset))]  # fmt: skip
        printed = cli("printMsg", "-t", TOPIC)
        stats = cli("statsAll", "-t", TOPIC)
        broker_addr = apache.broker_addr
        updated = cli("updateBrokerConfig", "-b", broker_addr, "-k", "fileReservedTime", "-v", "48")
        config = cli("getBrokerConfig", "-b", broker_addr)
        status = cli("brokerStatus", "-b", broker_addr)
        clusters = cli("topicClusterList", "-t", TOPIC)
        rt = cli("clusterRT", "-a", "3", "-c", apache.cluster_name)
        cloned = cli("cloneGroupOffset", "-s", "lookup_cg", "-d", "lookup_cg2", "-t", TOPIC, "-o", "true")
        progress = cli("consumerProgress", "-g", "lookup_cg2")
        deleted = cli("deleteSubGroup", "-g", "lookup_cg2", "-b", broker_addr)
    finally:
        apache.stop()
    assert any(line.split(":")[0].strip() == "commitLogMaxOffset" for line in status.splitlines()), status
    assert clusters.split() == [apache.cluster_name]
    assert rt.splitlines()[1].split()[:2] == [apache.cluster_name, apache.broker_name] and rt.splitlines()[
        1
    ].split()[3:5] == ["3", "0"], rt
    assert "clone group offset success" in cloned
    assert "Diff Total: 0" in progress and f"{TOPIC}" in progress, progress
    assert "delete subscription group [lookup_cg2] from broker" in deleted and "success" in deleted, deleted
    assert stats.splitlines()[0].split() == [
        "#Topic",
        "#Consumer",
        "Group",
        "#Accumulation",
        "#InTPS",
        "#OutTPS",
        "#InMsg24Hour",
        "#OutMsg24Hour",
    ], stats
    row = next(line.split() for line in stats.splitlines()[1:] if line.split()[:2] == [TOPIC, "lookup_cg"])
    assert row[2] == "0", stats  # everything consumed and committed
    assert f"update broker config success, {broker_addr}" in updated
    assert any(line.split("=")[0].strip() == "fileReservedTime" and line.split("=")[-1].strip() == "48"
               for line in config.splitlines()), config
    assert ids == {sent[i].msg_id for i in (0, 3, 6)}
    assert all("Message Body:        body-4" in s and "Keys:                [x4]" in s for s in shown), shown
    assert sorted(
        line.rsplit("BODY: ", 1)[1] for line in printed.splitlines() if line.startswith("MSGID")
    ) == sorted(f"body-{i}" for i in range(9))


def test_apache_mqadmin_broker_and_group_tools(ours):  # long: one mqadmin session, step by step
    import threading

    from pyrocketmq.client import Admin, PullConsumer, PullConsumerSettings
    from pyrocketmq.remoting.body import MessageQueue

    ns, broker, _, tmp = ours
    stop, ready = threading.Event(), threading.Event()

    async def keep_producing():
        async with Producer("mqadmin_live_pg", ns.addr) as p:
            await p.send(Message(TOPIC, b"live"))
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.1)

    t = threading.Thread(target=lambda: asyncio.run(keep_producing()), daemon=True)
    t.start()
    try:
        assert ready.wait(30)
        status = _mqadmin(tmp, "brokerStatus", "-n", ns.addr, "-b", broker.addr)
        assert any(line.split(":")[0].strip() == "commitLogMaxOffset" for line in status.splitlines()), status
        config = _mqadmin(tmp, "getBrokerConfig", "-n", ns.addr, "-b", broker.addr)
        rows = dict(
            (k.strip(), v.strip()) for k, _, v in (line.partition("=") for line in config.splitlines()[1:])
        )
        assert rows.get("brokerName") == "broker-a" and rows.get("flushDiskType") == "ASYNC_FLUSH", config
        producers = _mqadmin(tmp, "producerConnection", "-n", ns.addr, "-g", "mqadmin_live_pg", "-t", TOPIC)
        assert producers.startswith("0001  ") and "PYTHON" in producers, producers
    finally:
        stop.set()
        t.join(30)
    refused = run_mqadmin(tmp / "mqadmin-home", ["updateBrokerConfig", "-n", ns.addr, "-b", broker.addr,
                                                 "-k", "slaveReadEnable", "-v", "true"])  # fmt: skip
    assert "slaveReadEnable cannot change while the broker runs" in refused.stdout + refused.stderr, refused
    bad = run_mqadmin(tmp / "mqadmin-home", ["updateBrokerConfig", "-n", ns.addr, "-b", broker.addr,
                                             "-k", "fileReservedTime", "-v", "0"])  # fmt: skip
    assert "fileReservedTime='0': expected 1..8760" in bad.stdout + bad.stderr, bad
    changed = _mqadmin(
        tmp, "updateBrokerConfig", "-n", ns.addr, "-b", broker.addr, "-k", "fileReservedTime", "-v", "48"
    )
    assert f"update broker config success, {broker.addr}" in changed, changed
    config = _mqadmin(tmp, "getBrokerConfig", "-n", ns.addr, "-b", broker.addr)
    assert "fileReservedTime                                  =  48" in config, config

    async def commit_and_read(group: str | None = None):
        async with PullConsumer("mqadmin_src", ns.addr, PullConsumerSettings(consume_from="first")) as c:
            if group is None:
                await c.assign(await c.fetch_queues(TOPIC))
                got = []
                while len(got) < 10:
                    got += await c.poll(timeout=1)
                await c.commit()
        async with Admin(ns.addr) as admin:
            return {q: await admin.instance.query_consumer_offset(group or "mqadmin_src",
                                                                  MessageQueue(TOPIC, "broker-a", q))
                    for q in (0, 1)}  # fmt: skip

    src = asyncio.run(commit_and_read())
    out = _mqadmin(
        tmp,
        "cloneGroupOffset",
        "-n",
        ns.addr,
        "-s",
        "mqadmin_src",
        "-d",
        "mqadmin_dst",
        "-t",
        TOPIC,
        "-o",
        "true",
    )
    assert "clone group offset success" in out, out
    assert asyncio.run(commit_and_read("mqadmin_dst")) == src and sum(src.values()) == 10
    assert _mqadmin(tmp, "topicClusterList", "-n", ns.addr, "-t", TOPIC).split() == ["DefaultCluster"]
    import subprocess

    try:  # Apache's clusterRT prints a round and then repeats every -i seconds until stopped
        run_mqadmin(
            tmp / "mqadmin-home", ["clusterRT", "-n", ns.addr, "-a", "5", "-c", "DefaultCluster"], timeout=25
        )
        rt: list[str] = []
    except subprocess.TimeoutExpired as e:
        rt = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rt = rt.splitlines()
    assert (
        len(rt) >= 2
        and rt[1].split()[:2] == ["DefaultCluster", "broker-a"]
        and rt[1].split()[3:] == ["5", "0"]
    ), rt
    stats = _mqadmin(tmp, "statsAll", "-n", ns.addr, "-t", TOPIC)
    rows = {tuple(line.split()[:2]): line.split() for line in stats.splitlines()[1:] if line.strip()}
    src_row = rows[(TOPIC, "mqadmin_src")]  # 10 stored (9 + "live"), 10 pulled and committed by mqadmin_src
    assert src_row[2] == "0" and src_row[5:] == ["10", "10"], stats
    assert rows[(TOPIC, "mqadmin_dst")][2] == "0" and rows[(TOPIC, "mqadmin_dst")][6] == "0", stats
    deleted = _mqadmin(tmp, "deleteSubGroup", "-n", ns.addr, "-g", "mqadmin_dst", "-b", broker.addr)
    assert "delete subscription group [mqadmin_dst] from broker" in deleted and "success" in deleted, deleted
