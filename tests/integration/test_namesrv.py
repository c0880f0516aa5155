"""The name server over real sockets: in-process (asyncio) and as a subprocess.

A fake broker registers through the wire with RemotingClient; clients fetch the route, cluster
info and topic list; closing the broker's connection (or its silence) removes it.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import time
import zlib

import pytest

from pyrocketmq.namesrv import NameServer, NamesrvSettings
from pyrocketmq.remoting.body import (
    ClusterInfo,
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
)
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient

BROKER = "127.0.0.1:10911"


def register_cmd(addr: str = BROKER, broker_id: int = 0, *topics: str) -> RemotingCommand:
    table = {t: TopicConfig(t, 4, 4) for t in topics}
    body = RegisterBrokerBody(
        TopicConfigSerializeWrapper(table, DataVersion(int(time.time() * 1000), 1))
    ).to_json()
    ext = {
        "brokerName": "broker-a",
        "brokerAddr": addr,
        "clusterName": "DefaultCluster",
        "haServerAddr": addr.replace("10911", "10912"),
        "brokerId": broker_id,
        "compressed": False,
        "bodyCrc32": zlib.crc32(body) & 0x7FFFFFFF,
    }
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, ext, body)


async def scenario(ns_addr: str) -> None:
    """Register a master and a slave, read everything back, drop the master's connection."""
    broker, slave, client = RemotingClient(), RemotingClient(), RemotingClient()
    try:
        resp = await broker.invoke(ns_addr, register_cmd(BROKER, 0, "TopicTest", "TBW102"), 5)
        assert resp.code == ResponseCode.SUCCESS, resp
        resp = await slave.invoke(ns_addr, register_cmd("127.0.0.2:10911", 1), 5)
        assert resp.ext_fields.get("masterAddr") == BROKER
        assert resp.ext_fields.get("haServerAddr") == "127.0.0.1:10912"

        resp = await client.invoke(
            ns_addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}), 5
        )
        assert resp.code == ResponseCode.SUCCESS
        route = TopicRouteData.from_json(resp.body)
        assert route.broker_datas[0].broker_addrs == {0: BROKER, 1: "127.0.0.2:10911"}
        assert route.queue_datas[0].write_queue_nums == 4

        resp = await client.invoke(ns_addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5)
        assert ClusterInfo.from_json(resp.body).cluster_addr_table == {"DefaultCluster": ["broker-a"]}
        resp = await client.invoke(
            ns_addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), 5
        )
        assert TopicList.from_json(resp.body).topic_list == ["TBW102", "TopicTest"]

        resp = await client.invoke(
            ns_addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"}), 5
        )
        assert resp.code == ResponseCode.TOPIC_NOT_EXIST and resp.body is None
        resp = await client.invoke(ns_addr, RemotingCommand.request(9999), 5)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

        broker.close_connection(ns_addr)  # the master goes away: removed at once
        for _ in range(100):
            resp = await client.invoke(
                ns_addr,
                RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}),
                5,
            )
            route = TopicRouteData.from_json(resp.body)
            if 0 not in route.broker_datas[0].broker_addrs:
                break
            await asyncio.sleep(0.02)
        assert route.broker_datas[0].broker_addrs == {1: "127.0.0.2:10911"}  # the slave still serves reads

        await slave.close()  # and the slave: the topic has no route left
        for _ in range(100):
            resp = await client.invoke(
                ns_addr,
                RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}),
                5,
            )
            if resp.code == ResponseCode.TOPIC_NOT_EXIST:
                break
            await asyncio.sleep(0.02)
        assert resp.code == ResponseCode.TOPIC_NOT_EXIST
        resp = await client.invoke(ns_addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5)
        assert ClusterInfo.from_json(resp.body).broker_addr_table == {}
    finally:
        for c in (broker, slave, client):
            await c.close()


def test_in_process():
    async def run() -> None:
        ns = NameServer(NamesrvSettings(listen_port=0, host="127.0.0.1"))
        port = await ns.start()
        try:
            await scenario(f"127.0.0.1:{port}")
        finally:
            await ns.stop()

    asyncio.run(run())


def test_silent_broker_expires_and_its_connection_is_closed():
    async def run() -> None:
        ns = NameServer(
            NamesrvSettings(listen_port=0, host="127.0.0.1", scan_interval_ms=50, broker_expiry_ms=300)
        )
        port = await ns.start()
        addr = f"127.0.0.1:{port}"
        broker = RemotingClient()
        try:
            await broker.invoke(addr, register_cmd(BROKER, 0, "T"), 5)
            conn = await broker.connection(addr)
            assert ns.routes.pick_route("T") is not None
            deadline = time.monotonic() + 10
            while not conn.closed and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert conn.closed, "the name server should close an expired broker's connection"
            assert ns.routes.pick_route("T") is None
        finally:
            await broker.close()
            await ns.stop()

    asyncio.run(run())


def test_kv_config_survives_restart(tmp_path):
    path = str(tmp_path / "kvConfig.json")

    async def run() -> str | None:
        settings = NamesrvSettings(listen_port=0, host="127.0.0.1", kv_config_path=path)
        client = RemotingClient()
        ns = NameServer(settings)
        port = await ns.start()
        ext = {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"}
        await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(RequestCode.PUT_KV_CONFIG, ext), 5)
        await client.close()
        await ns.stop()
        ns = NameServer(settings)
        port = await ns.start()
        client = RemotingClient()
        try:
            resp = await client.invoke(
                f"127.0.0.1:{port}",
                RemotingCommand.request(
                    RequestCode.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T"}
                ),
                5,
            )
            return resp.ext_fields.get("value")
        finally:
            await client.close()
            await ns.stop()

    assert asyncio.run(run()) == "broker-a:4"


@pytest.fixture
def namesrv_process():
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyrocketmq.namesrv", "--listen-port", "0", "--host", "127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        port = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"pyrocketmq namesrv listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        assert port, f"the name server did not report its port:\n{''.join(lines)}"
        yield proc, port, lines
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        proc.stdout.close()


def test_subprocess(namesrv_process):
    proc, port, lines = namesrv_process
    asyncio.run(scenario(f"127.0.0.1:{port}"))
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0, "".join(lines) + rest
    assert "stopped" in rest and "Traceback" not in rest
