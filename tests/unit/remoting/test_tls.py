"""TLS on the remoting transport, on real loopback sockets: permissive servers serve TLS and plain
clients side by side, enforcing servers only TLS ones, client certificates when asked; clients
check the server's certificate unless told not to; bad settings are refused with the key named."""

from __future__ import annotations

import asyncio
import socket
import ssl

import pytest

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.server import RemotingServer
from pyrocketmq.remoting.tls import ClientTls, ServerTls, TlsConfigError, TlsMode
from pyrocketmq.remoting.transport import RemotingError
from tests.helpers.certs import make_certs

PING = 901


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def server_tls(certs, mode="permissive", auth="none") -> ServerTls:
    return ServerTls.from_conf(
        {
            "tls.server.mode": mode,
            "tls.server.certPath": str(certs.server_cert),
            "tls.server.keyPath": str(certs.server_key),
            "tls.server.need.client.auth": auth,
            "tls.server.trustCertPath": str(certs.ca),
        }
    )


async def ping(port: int, tls: ClientTls | None, host: str = "127.0.0.1") -> str:
    client = RemotingClient(ssl=tls.context() if tls else None)
    try:
        conn = await client.connection(f"{host}:{port}")
        resp = await client.invoke(f"{host}:{port}", RemotingCommand.request(PING, {}), 3.0)
        return f"{resp.remark} tls={conn._transport.get_extra_info('ssl_object') is not None}"
    finally:
        await client.close()


def run_against(tls: ServerTls, *clients):
    async def go():
        server = RemotingServer("tls", tls=tls)
        server.register(PING, lambda conn, cmd: cmd.response(ResponseCode.SUCCESS, "pong"))
        port = await server.start("127.0.0.1", 0)
        out = []
        try:
            for client in clients:
                try:
                    out.append(await ping(port, client))
                except (RemotingError, OSError) as e:
                    out.append(f"refused: {e}")
        finally:
            await server.stop()
        return out

    return asyncio.run(go())


def test_permissive_serves_tls_and_plain_clients(certs):
    verified = ClientTls(enabled=True, trust_cert_path=str(certs.ca))
    insecure = ClientTls(enabled=True, verify=False)
    assert run_against(server_tls(certs), verified, None, insecure) == [
        "pong tls=True",
        "pong tls=False",
        "pong tls=True",
    ]


def test_enforcing_refuses_plain_clients(certs):
    plain, tls = run_against(
        server_tls(certs, "enforcing"), None, ClientTls(enabled=True, trust_cert_path=str(certs.ca))
    )
    assert plain.startswith("refused") and tls == "pong tls=True"


def test_clients_check_the_servers_certificate(certs):
    (wrong_ca,) = run_against(server_tls(certs), ClientTls(enabled=True, trust_cert_path=str(certs.other_ca)))
    assert (
        wrong_ca.startswith("refused: TLS handshake with")
        and "unable to get local issuer certificate" in wrong_ca
    )


def test_client_certificates_when_the_server_requires_them(certs):
    without = ClientTls(enabled=True, trust_cert_path=str(certs.ca))
    with_cert = ClientTls(enabled=True, trust_cert_path=str(certs.ca), cert_path=str(certs.client_cert),
                          key_path=str(certs.client_key))
    refused, served = run_against(server_tls(certs, "enforcing", "require"), without, with_cert)
    assert refused.startswith("refused")
    assert served == "pong tls=True"


def test_a_silent_or_garbage_peer_costs_a_tls_server_nothing(certs):
    async def go():
        server = RemotingServer("tls", tls=server_tls(certs, "enforcing"))
        server.register(PING, lambda conn, cmd: cmd.response(ResponseCode.SUCCESS, "pong"))
        port = await server.start("127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        try:
            junk = socket.create_connection(("127.0.0.1", port))
            junk.setblocking(False)
            await loop.sock_sendall(junk, b"\x16\x03\x01\x00\x05hello-not-tls" * 3)
            closed = await asyncio.wait_for(loop.sock_recv(junk, 100), 5)
            junk.close()
            return closed, await ping(port, ClientTls(enabled=True, trust_cert_path=str(certs.ca)))
        finally:
            await server.stop()

    closed, pong = asyncio.run(go())
    assert closed == b"" or closed.startswith(b"\x15")  # closed, or a TLS alert then closed
    assert pong == "pong tls=True"


@pytest.mark.parametrize(("conf", "words"), [
    ({"tls.server.mode": "enforcing"}, "needs tls.server.certPath"),
    ({"tls.server.mode": "sometimes", "tls.server.certPath": "a", "tls.server.keyPath": "b"}, "use disabled"),
    ({"tls.server.certPath": "/nonexistent.pem", "tls.server.keyPath": "/nonexistent.key"}, "cannot load"),
    ({"tls.server.certPath": "a"}, "give both"),
    ({"tls.server.need.client.auth": "maybe"}, "use none, optional or require"),
])
def test_bad_server_settings_name_the_key(conf, words):
    with pytest.raises(TlsConfigError, match=words):
        ServerTls.from_conf(conf)


def test_no_tls_keys_means_plain_only():
    assert ServerTls.from_conf({}).mode is TlsMode.DISABLED and ClientTls.from_conf({}).context() is None
    assert ClientTls.from_conf({"tls.enable": "true", "tls.client.authServer": "false"}).verify is False


def test_a_broker_checks_the_name_servers_chain_and_the_host_name_only_on_request(certs):
    """As Apache's servers do: the chain to the trusted CA, not the host name (pods are reached by
    names and addresses their certificates rarely list)."""
    chain_only = ClientTls.from_conf({"tls.enable": "true", "tls.client.trustCertPath": str(certs.ca)})
    strict = ClientTls.from_conf({"tls.enable": "true", "tls.client.trustCertPath": str(certs.ca),
                                  "tls.client.verifyHostname": "true"})
    assert chain_only.context().check_hostname is False and chain_only.context().verify_mode == 2
    assert strict.context().check_hostname is True
    assert (
        ClientTls(enabled=True, trust_cert_path=str(certs.ca)).context().check_hostname is True
    )  # the client API: strict


# -- between servers (replication, the controllers' Raft) -----------------------------------------
def test_peers_speak_tls_only_when_the_server_enforces_it(certs):
    assert server_tls(certs, "permissive").peer_client() == ClientTls()
    assert ServerTls().peer_client().context() is None and ServerTls().peer_context() is None
    peer = server_tls(certs, "enforcing").peer_client()
    assert (peer.enabled, peer.verify, peer.check_hostname) == (True, True, False)
    assert (peer.cert_path, peer.key_path, peer.trust_cert_path) == (
        str(certs.server_cert), str(certs.server_key), str(certs.ca))
    # tls.client.trustCertPath wins; tls.client.authServer=false trusts any peer
    client = ClientTls.from_conf({"tls.client.trustCertPath": str(certs.other_ca),
                                  "tls.client.authServer": "false"})
    peer = server_tls(certs, "enforcing").peer_client(client)
    assert (peer.trust_cert_path, peer.verify) == (str(certs.other_ca), False)
    ctx = peer.context()
    assert ctx is not None and ctx.verify_mode == ssl.CERT_NONE
    # no trust file at all: the system's CAs, as the remoting client
    bare = ServerTls.from_conf({"tls.server.mode": "enforcing", "tls.server.certPath": str(certs.server_cert),
                                "tls.server.keyPath": str(certs.server_key)})
    assert bare.peer_client().trust_cert_path == "" and bare.peer_client().context() is not None


def test_the_accepting_side_asks_peers_for_a_certificate_when_it_has_a_trust_file(certs):
    ctx = server_tls(certs, "enforcing").peer_context()
    assert ctx is not None and ctx.verify_mode == ssl.CERT_REQUIRED
    bare = ServerTls.from_conf({"tls.server.mode": "enforcing", "tls.server.certPath": str(certs.server_cert),
                                "tls.server.keyPath": str(certs.server_key)})
    ctx = bare.peer_context()
    assert ctx is not None and ctx.verify_mode == ssl.CERT_NONE


def test_a_server_certificate_is_accepted_as_a_peers_client_certificate(certs):
    """The remoting server asking for client certificates accepts a peer presenting its server one."""
    tls = server_tls(certs, "enforcing", auth="require")
    [answer] = run_against(tls, tls.peer_client())
    assert answer == "pong tls=True"

