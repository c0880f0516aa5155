"""``masterServiceAddr``: while it is its group's master a broker registers the address that follows
the master (the operator's per-group Service) instead of its own, so a client's route stays right
across a failover; as a slave it registers its own. Against a real name server process."""

from __future__ import annotations

import asyncio

from pyrocketmq.broker.registration import Registrar
from pyrocketmq.broker.settings import BrokerSettings
from pyrocketmq.broker.topic_config import TopicConfigManager
from pyrocketmq.remoting.body import ClusterInfo
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient


async def _addrs(client: RemotingClient, namesrv: str, name: str) -> dict[int, str]:
    resp = await client.invoke(namesrv, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    data = ClusterInfo.from_json(resp.payload or b"{}").broker_addr_table.get(name)
    return dict(data.broker_addrs) if data else {}


def test_the_master_registers_its_service_address_and_the_slave_its_own(tmp_path, namesrv) -> None:
    settings = BrokerSettings.from_conf({
        "storePathRootDir": str(tmp_path), "brokerIP1": "127.0.0.1", "namesrvAddr": namesrv.addr,
        "brokerName": "svc-b", "brokerId": "1", "brokerRole": "SLAVE", "masterServiceAddr": "localhost:20911",
    })
    topics = TopicConfigManager(str(tmp_path / "topics.json"), cluster_name="DefaultCluster",
                                broker_name="svc-b", auto_create_topic=False, default_queue_nums=4)

    async def go() -> list[dict[int, str]]:
        registrar, client = Registrar(settings, topics), RemotingClient()
        registrar.port = 10911
        seen = []
        try:
            assert await registrar.register_all() == 1
            seen.append(await _addrs(client, namesrv.addr, "svc-b"))
            settings.identity.broker_id = 0  # elected: registers as the master
            assert await registrar.register_all() == 1
            seen.append(await _addrs(client, namesrv.addr, "svc-b"))
            await registrar.unregister_all()
            seen.append(await _addrs(client, namesrv.addr, "svc-b"))
        finally:
            await registrar.close()
            await client.close()
        return seen

    as_slave, as_master, gone = asyncio.run(go())
    assert as_slave == {1: "127.0.0.1:10911"}
    # the service name resolved; its own slave entry left the route
    assert as_master == {0: "127.0.0.1:20911"}
    assert gone == {}


def test_a_slave_reached_through_the_master_service_closes_the_connection_after_refusing(
    tmp_path, namesrv
) -> None:
    """A client's connection to the Service outlives a handover (it still leads to the old master,
    now a slave): the refusal is followed by a close, so the client reconnects where the Service
    leads now. Without a master Service a slave keeps the connection (its clients read from it)."""
    from . import wire
    from .procs import start_broker

    async def send_once(addr: str) -> tuple[int, bool]:
        client = RemotingClient()
        try:
            conn = await client.connection(addr)
            first = await client.invoke(addr, wire.send_v2("SvcTopic", b"x"), 5)
            await asyncio.sleep(0.3)
            return first.code, conn.is_open
        finally:
            await client.close()

    results = {}
    for service in (True, False):
        extra = {"masterServiceAddr": "localhost:20911"} if service else {}
        (tmp_path / str(service)).mkdir()
        proc = start_broker(tmp_path / str(service), namesrv.addr, name=f"svc-slave-{service}", brokerId=1,
                            brokerRole="SLAVE", **extra)
        try:
            results[service] = asyncio.run(send_once(proc.addr))
        finally:
            proc.stop()
    assert results[True] == (ResponseCode.SERVICE_NOT_AVAILABLE, False)
    assert results[False] == (ResponseCode.SERVICE_NOT_AVAILABLE, True)


def test_a_deposed_master_stopping_leaves_the_service_address_to_its_successor(tmp_path, namesrv) -> None:
    """A master frozen, replaced, then stopped unregisters its own address only: the Service's is
    its successor's now (both registered it as brokerId 0)."""

    def registrar(name: str, replica: int) -> Registrar:
        settings = BrokerSettings.from_conf({
            "storePathRootDir": str(tmp_path / name), "brokerIP1": f"127.0.0.{replica}",
            "namesrvAddr": namesrv.addr, "brokerName": "svc-c", "brokerId": "0",
            "masterServiceAddr": "localhost:20911",
        })
        topics = TopicConfigManager(str(tmp_path / f"{name}.json"), cluster_name="DefaultCluster",
                                    broker_name="svc-c", auto_create_topic=False, default_queue_nums=4)
        r = Registrar(settings, topics)
        r.port = 10911
        return r

    async def go() -> tuple[dict[int, str], dict[int, str]]:
        old, new, client = registrar("old", 2), registrar("new", 3), RemotingClient()
        try:
            assert await old.register_all() == 1
            assert await new.register_all() == 1  # elected while the old one was frozen
            old.role_fresh = lambda: False  # thawed: no controller confirmed its role lately
            await old.unregister_all()
            kept = await _addrs(client, namesrv.addr, "svc-c")
            await new.unregister_all()
            return kept, await _addrs(client, namesrv.addr, "svc-c")
        finally:
            for c in (old, new):
                await c.close()
            await client.close()

    kept, gone = asyncio.run(go())
    assert kept == {0: "127.0.0.1:20911"} and gone == {}
