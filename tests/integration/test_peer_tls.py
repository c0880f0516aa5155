"""TLS between the servers themselves, with real processes: a master and its slave that enforce TLS
replicate over TLS (a plain peer speaking the HA protocol to the master's HA port is closed without
a byte), and three controllers that enforce TLS elect a leader among themselves, commit a group's
in-sync set and fail the group over, while a plain peer's Raft messages are refused."""

from __future__ import annotations

import asyncio
import json

from pyrocketmq.broker.ha.frame import encode_offset
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.tls import ClientTls
from pyrocketmq.remoting.transport import RemotingError
from tests.helpers.certs import Certs, make_certs

from .failover import all_stopped, in_sync, start_controller_namesrv, start_replica, until, view
from .procs import free_port, start_broker, start_namesrv
from .wire import create_topic, pull, send_v2

TOPIC = "PeerTls"


def _enforcing(certs: Certs) -> dict[str, object]:
    """A server's keys: TLS only, its certificate presented to its peers too, trusting the test CA;
    ``tls.enable`` for its own requests (a broker's to the name servers and controllers)."""
    return {"tls.server.mode": "enforcing", "tls.server.certPath": certs.server_cert,
            "tls.server.keyPath": certs.server_key, "tls.server.trustCertPath": certs.ca,
            "tls.enable": "true", "tls.client.trustCertPath": certs.ca}


def _tls_client(certs: Certs) -> RemotingClient:
    return RemotingClient(ssl=ClientTls(enabled=True, trust_cert_path=str(certs.ca)).context())


async def _plain_ha_hello(port: int) -> bytes:
    """What a plain slave reporting offset 0 to the HA port reads (b"": closed without a byte)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(encode_offset(0))
        await writer.drain()
        return await asyncio.wait_for(reader.read(64), 10)
    except ConnectionError:
        return b""
    finally:
        writer.close()


def test_a_master_and_slave_enforcing_tls_replicate_over_tls(tmp_path) -> None:
    certs = make_certs(tmp_path / "certs")
    tls = _enforcing(certs)
    with all_stopped() as keep:
        ns = keep(start_namesrv(tmp_path, **tls))
        master = keep(start_broker(tmp_path, ns.addr, name="broker-a", brokerRole="ASYNC_MASTER", **tls))
        slave = keep(start_broker(tmp_path, ns.addr, name="broker-a-slave", brokerName="broker-a", brokerId=1,
                                  brokerRole="SLAVE", haMasterAddress=f"127.0.0.1:{master.port + 1}", **tls))

        async def go() -> None:
            client = _tls_client(certs)
            try:
                assert (await client.invoke(master.addr, create_topic(TOPIC, 1), 10)).code == 0
                for i in range(20):
                    resp = await client.invoke(master.addr, send_v2(TOPIC, f"m{i}".encode()), 10)
                    assert resp.code == ResponseCode.SUCCESS, resp.remark

                async def on_slave() -> bool:
                    resp = await client.invoke(slave.addr, pull(TOPIC, 0, 0, max_nums=32), 10)
                    if resp.code != ResponseCode.SUCCESS:
                        return False
                    bodies = [m.body for m in decode_messages(resp.body)]
                    return bodies == [f"m{i}".encode() for i in range(20)]

                await until("the messages readable from the slave", on_slave, timeout=40)
                assert await _plain_ha_hello(master.port + 1) == b""
            finally:
                await client.close()

        asyncio.run(go())
    assert "TLS handshake failed" in (tmp_path / "logs" / "broker-a.log").read_text()


def test_three_controllers_enforcing_tls_elect_and_fail_over(tmp_path) -> None:
    certs = make_certs(tmp_path / "certs")
    tls = _enforcing(certs)
    ports = [free_port() for _ in range(3)]
    peers = ";".join(f"n{i}-127.0.0.1:{p}" for i, p in enumerate(ports))
    with all_stopped() as keep:
        ctls = [keep(start_controller_namesrv(tmp_path, f"namesrv-{i}", port=ports[i], controllerPeers=peers,
                                              controllerSelfId=f"n{i}", **tls)) for i in range(3)]
        addrs = ";".join(c.addr for c in ctls)

        async def go() -> None:
            client = _tls_client(certs)
            plain = RemotingClient(connect_timeout=2)
            try:
                await until("a controller leader", lambda: _leads(client, addrs), timeout=30)
                # a plain peer's vote request never reaches a controller
                vote = json.dumps({"term": 1000, "candidate": "n9", "last": [1000, 1000]}).encode()
                for c in ctls:
                    try:
                        await plain.invoke(c.addr, RemotingCommand.request(
                            RequestCode.CONTROLLER_RAFT_VOTE, {}, vote), 3)
                        raise AssertionError(f"{c.addr} answered a plain peer")
                    except RemotingError:
                        pass
                replicas = {rid: keep(start_replica(tmp_path, addrs, rid, **tls)) for rid in (1, 2)}
                await until("a master with both replicas in sync", lambda: in_sync(client, addrs), timeout=40)
                first = (await view(client, addrs))["masterId"]
                replicas[first].kill9()
                await until("the other replica elected", lambda: _master_is(client, addrs, 3 - first),
                            timeout=30)
            finally:
                await client.close()
                await plain.close()

        asyncio.run(go())


async def _leads(client: RemotingClient, addrs: str) -> bool:
    await view(client, addrs)
    return True


async def _master_is(client: RemotingClient, addrs: str, rid: int) -> bool:
    v = await view(client, addrs)
    return bool(v.get("masterId") == rid and v.get("epochStart", -1) >= 0)
