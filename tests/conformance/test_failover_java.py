"""Automatic failover seen by the unmodified Apache RocketMQ 4.9 Java producer (default settings):
the SYNC_MASTER of a controller-mode group is killed (kill -9) while it sends; the client reaches
the elected slave once its route refresh (30 s by default) gives the new address, and every send it
was told SEND_OK is on the new master at its queue offset."""

from __future__ import annotations

import asyncio
import threading
import time

from pyrocketmq.remoting.msg_id import decode_offset_msg_id
from pyrocketmq.remoting.remoting_client import RemotingClient
from tests.integration.failover import Acked, controller_group, has_topic, in_sync, lost, until, view
from tests.integration.wire import create_topic

TOPIC = "JavaFailoverTopic"
QUEUES = 4
RUN_S = 50
KILL_AFTER_S = 8


def test_java_producer_through_a_master_kill(tmp_path, java) -> None:
    with controller_group(tmp_path, 2) as (ns, replicas):
        first, other = asyncio.run(_ready(ns, replicas))
        result: dict = {}
        runner = threading.Thread(target=lambda: result.update(
            out=java.run("FailoverProducer", [ns.addr, TOPIC, RUN_S], timeout=RUN_S + 60)))
        runner.start()
        time.sleep(KILL_AFTER_S)
        replicas[first].kill9()
        killed_ms = time.time() * 1000
        runner.join()
        out = result["out"]
        assert out.returncode == 0, out.describe("the Java producer failed")
        report = out.json()
        acked = Acked()
        new_ok_ms = []
        for rec in report["acked"]:
            host, port, _ = decode_offset_msg_id(rec["offsetMsgId"])
            addr = f"{host}:{port}"
            acked.sent[rec["body"]] = (rec["queueId"], rec["queueOffset"], addr)
            if addr == replicas[other].addr and rec["atMs"] > killed_ms:
                new_ok_ms.append(rec["atMs"])
        assert new_ok_ms, (
            f"no send acknowledged by the new master in {RUN_S - KILL_AFTER_S} s: {report['firstFailure']}"
        )
        missing = asyncio.run(_lost(replicas[other].addr, acked))
        assert missing == [], f"{len(missing)} acknowledged message(s) lost, e.g. {missing[:5]}"
        print(
            f"\nJava client: kill -9 to the first SEND_OK on the new master "
            f"{(min(new_ok_ms) - killed_ms) / 1000:.1f} s "
            f"(route refresh 30 s); {len(acked.sent)} acknowledged, {report['failures']} failed sends"
        )


async def _ready(ns, replicas) -> tuple[int, int]:
    client = RemotingClient()
    try:
        await until("a master with both replicas in sync", lambda: in_sync(client, ns.addr))
        first = (await view(client, ns.addr))["masterId"]
        other = 3 - first
        resp = await client.invoke(replicas[first].addr, create_topic(TOPIC, QUEUES), 10)
        assert resp.code == 0, resp.remark

        await until("the topic on the slave", lambda: has_topic(client, replicas[other].addr, TOPIC))
        return first, other
    finally:
        await client.close()


async def _lost(addr: str, acked: Acked) -> list[str]:
    client = RemotingClient()
    try:
        return await lost(client, addr, TOPIC, QUEUES, acked)
    finally:
        await client.close()
