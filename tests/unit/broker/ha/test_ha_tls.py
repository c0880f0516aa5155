"""Replication over TLS on loopback sockets: an enforcing master serves its HA port over TLS only
(a plain slave is closed before it learns a byte, a TLS slave without a certificate is refused), a
permissive one serves TLS and plain slaves side by side; a TLS slave copies the commitlog. What the
settings make of ``tls.*`` for the peers: TLS with the server's certificate when it enforces TLS, a trust
file that does not load refused at start (the TLS rules themselves: ``tests/unit/remoting/test_tls.py``)."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from pyrocketmq.broker.ha.frame import encode_offset
from pyrocketmq.broker.ha.service import HAClient, HAServer
from pyrocketmq.broker.settings import BrokerSettings
from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.namesrv.settings import NamesrvSettings
from pyrocketmq.remoting.properties import ConfigError
from pyrocketmq.remoting.tls import ClientTls, ServerTls
from tests.helpers.certs import make_certs

from ..store.storekit import make_settings, open_store, put


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def server_tls(certs, mode: str) -> ServerTls:
    return ServerTls.from_conf({"tls.server.mode": mode, "tls.server.certPath": str(certs.server_cert),
                                "tls.server.keyPath": str(certs.server_key),
                                "tls.server.trustCertPath": str(certs.ca)})


async def _until(check, timeout: float = 10.0) -> bool:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if check():
            return True
        await asyncio.sleep(0.02)
    return False


async def _replicate(master: MessageStore, ha: HAServer, slave: MessageStore, ctx: ssl.SSLContext | None,
                     port: int) -> bool:
    """Whether a slave with ``ctx`` copies the master's commitlog within a few seconds."""
    client = HAClient(slave, lambda: f"127.0.0.1:{port}", tls_context=ctx)
    task = asyncio.ensure_future(client.connect_round())
    try:
        return await _until(lambda: slave.get_max_phy_offset() == master.get_max_phy_offset(), 5.0)
    finally:
        client.disconnect()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _plain_hello(port: int) -> bytes:
    """What a plain slave reporting offset 0 reads back (b"" once the master closes the link)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(encode_offset(0))
        await writer.drain()
        return await asyncio.wait_for(reader.read(64), 5.0)
    except ConnectionError:
        return b""
    finally:
        writer.close()


def _stores(tmp_path: Path, *names: str) -> list[MessageStore]:
    return [open_store(make_settings(tmp_path / n)) for n in names]


def test_an_enforcing_master_replicates_over_tls_only(tmp_path: Path, certs) -> None:
    master, slave, bare = _stores(tmp_path, "m", "s", "b")
    tls = server_tls(certs, "enforcing")

    async def run() -> None:
        for _ in range(20):
            put(master, body=b"x" * 300)
        ha = HAServer(master, tls=tls)
        port = await ha.start("127.0.0.1", 0)
        try:
            assert await _plain_hello(port) == b""  # a plain slave: the handshake fails, closed
            no_cert = ClientTls(enabled=True, trust_cert_path=str(certs.ca), check_hostname=False)
            assert not await _replicate(master, ha, bare, no_cert.context(), port)
            assert bare.get_max_phy_offset() == 0
            assert await _replicate(master, ha, slave, tls.peer_client().context(), port)
        finally:
            await ha.stop()

    try:
        asyncio.run(run())
        assert slave.get_max_phy_offset() == master.get_max_phy_offset() > 0
    finally:
        for s in (master, slave, bare):
            s.shutdown()


def test_a_permissive_master_serves_tls_and_plain_slaves(tmp_path: Path, certs) -> None:
    master, tls_slave, plain_slave = _stores(tmp_path, "m", "t", "p")
    tls = server_tls(certs, "enforcing")

    async def run() -> None:
        for _ in range(10):
            put(master, body=b"y" * 200)
        ha = HAServer(master, tls=server_tls(certs, "permissive"))
        port = await ha.start("127.0.0.1", 0)
        try:
            assert await _replicate(master, ha, tls_slave, tls.peer_client().context(), port)
            assert await _replicate(master, ha, plain_slave, None, port)
        finally:
            await ha.stop()

    try:
        asyncio.run(run())
    finally:
        for s in (master, tls_slave, plain_slave):
            s.shutdown()


def test_settings_make_the_peer_tls(certs, tmp_path):
    conf = {"tls.server.mode": "enforcing", "tls.server.certPath": str(certs.server_cert),
            "tls.server.keyPath": str(certs.server_key), "tls.client.trustCertPath": str(certs.ca)}
    assert BrokerSettings.from_conf(dict(conf)).network.peer_tls.trust_cert_path == str(certs.ca)
    assert NamesrvSettings.from_conf(dict(conf)).peer_tls.cert_path == str(certs.server_cert)
    assert not NamesrvSettings.from_conf({**conf, "tls.server.mode": "permissive"}).peer_tls.enabled
    missing = {**conf, "tls.client.trustCertPath": str(tmp_path / "none.pem")}
    for settings in (BrokerSettings, NamesrvSettings):
        with pytest.raises(ConfigError, match="none.pem"):
            settings.from_conf(dict(missing))
