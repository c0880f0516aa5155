"""The TLS-capable accepting side on its own, on loopback sockets: a permissive listener serves TLS
and plain peers side by side and closes a TCP probe without a word; an enforcing one that does not
sniff reports a plain peer's failed handshake; stopping ends the waits on a first byte and the port."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl

import pytest

from pyrocketmq.remoting.listener import Listener
from pyrocketmq.remoting.tls import ClientTls, TlsMode
from tests.helpers.certs import make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(await reader.readline())
    writer.write(b"tls\n" if writer.get_extra_info("ssl_object") is not None else b"plain\n")
    await writer.drain()
    writer.close()


def _listener(certs, mode: TlsMode, refused: list[str], *, sniff_enforcing: bool = True) -> Listener:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(certs.server_cert), str(certs.server_key))
    return Listener(
        "test", lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(), _echo), ctx, mode,
        refused=lambda peer, e: refused.append(type(e).__name__), log=logging.getLogger("test"),
        backlog=8, sniff_timeout=5.0, sniff_enforcing=sniff_enforcing,
    )


async def _hello(port: int, ctx: ssl.SSLContext | None) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
    try:
        writer.write(b"hello, listener\n")
        return await asyncio.wait_for(reader.read(), 5.0)
    except (ConnectionError, ssl.SSLError):
        return b""
    finally:
        writer.close()


def _client(certs) -> ssl.SSLContext:
    ctx = ClientTls(enabled=True, trust_cert_path=str(certs.ca), check_hostname=False).context()
    assert ctx is not None
    return ctx


def test_a_permissive_listener_serves_tls_and_plain_peers_and_drops_probes_silently(certs) -> None:
    async def go() -> None:
        refused: list[str] = []
        listener = _listener(certs, TlsMode.PERMISSIVE, refused)
        port = listener.start("127.0.0.1", 0)
        try:
            assert port > 0
            assert await _hello(port, _client(certs)) == b"hello, listener\ntls\n"
            assert await _hello(port, None) == b"hello, listener\nplain\n"
            probe = socket.create_connection(("127.0.0.1", port))
            probe.close()
            await asyncio.sleep(0.2)
            assert refused == []
        finally:
            await listener.stop()

    asyncio.run(go())


def test_an_enforcing_listener_reports_a_plain_peers_failed_handshake(certs) -> None:
    async def go() -> None:
        refused: list[str] = []
        listener = _listener(certs, TlsMode.ENFORCING, refused, sniff_enforcing=False)
        port = listener.start("127.0.0.1", 0)
        try:
            assert await _hello(port, None) == b""
            assert await _hello(port, _client(certs)) == b"hello, listener\ntls\n"
            assert refused == ["SSLError"]
        finally:
            await listener.stop()

    asyncio.run(go())


def test_stopping_ends_the_waits_on_a_first_byte_and_closes_the_port(certs) -> None:
    async def go() -> None:
        listener = _listener(certs, TlsMode.PERMISSIVE, [])
        port = listener.bind("127.0.0.1", 0)
        listener.serve()
        listener.serve()  # again: one accept loop
        _, writer = await asyncio.open_connection("127.0.0.1", port)  # silent: waits on its first byte
        await asyncio.sleep(0.1)
        await asyncio.wait_for(listener.stop(), 2.0)
        writer.close()
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", port)

    asyncio.run(go())
