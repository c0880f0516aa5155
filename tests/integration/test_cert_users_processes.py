"""Users authenticated by TLS client certificates (``authenticationCertificateCaPath``), with real
processes: a name server and brokers serving TLS only, trusting both the servers' CA and a clients'
CA, with ACL 2.0 on. A client presenting the certificate the clients' CA issued to ``alice`` and
signing nothing is alice: it sends where her ACL allows and is refused elsewhere, over 4.x remoting
(client certificates optional) and 5.x gRPC (required). A certificate of the servers' CA naming
``root`` passes the handshake but names nobody; a signature still wins over a certificate."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import grpc
import pytest

from pyrocketmq.broker.proxy.pb import definition_pb2 as pb, service_pb2 as spb
from pyrocketmq.client import Admin, ClientSettings, ClientTls, Message, Producer
from pyrocketmq.client.errors import MQBrokerError
from pyrocketmq.remoting.code import ResponseCode
from tests.helpers.certs import Certs, UserCerts, make_certs, make_user_certs
from tests.helpers.cluster import free_port

from .procs import start_broker, start_namesrv

SERVICE = "/apache.rocketmq.v2.MessagingService/"
ROOT_PW = "root-password"


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cert-users")
    certs = make_certs(tmp / "certs")
    users = make_user_certs(tmp / "users", ["alice", "nobody-known"])
    trust = tmp / "trust.pem"
    trust.write_text(certs.ca.read_text() + users.ca.read_text())
    tls = {
        "tls.server.mode": "enforcing",
        "tls.server.certPath": certs.server_cert,
        "tls.server.keyPath": certs.server_key,
    }
    ns = start_namesrv(tmp, **tls)
    procs = [ns]
    grpc_port = free_port()
    common = {
        **tls,
        "tls.enable": "true",
        "tls.client.trustCertPath": certs.ca,
        "tls.server.trustCertPath": trust,
        "authenticationCertificateCaPath": users.ca,
        "authenticationEnabled": "true",
        "authorizationEnabled": "true",
        "initAuthenticationUser": f'{{"username":"root","password":"{ROOT_PW}"}}',
    }
    try:
        optional = start_broker(
            tmp, ns.addr, "broker-a", **common, **{"tls.server.need.client.auth": "optional"}
        )
        procs.append(optional)
        required = start_broker(
            tmp,
            ns.addr,
            "broker-b",
            grpcListenPort=grpc_port,
            **common,
            **{"tls.server.need.client.auth": "require"},
        )
        procs.append(required)
        asyncio.run(_setup(ns.addr, certs, users, [optional.addr, required.addr]))
        yield ns.addr, certs, users, f"127.0.0.1:{grpc_port}"
    finally:
        for p in reversed(procs):
            p.stop()


def _client(certs: Certs, cert: tuple[object, object] | None, **keys: str) -> ClientSettings:
    cert_path, key_path = (str(cert[0]), str(cert[1])) if cert else ("", "")
    return ClientSettings(tls=ClientTls(enabled=True, trust_cert_path=str(certs.ca), cert_path=cert_path,
                                        key_path=key_path), request_timeout=5, **keys)  # fmt: skip


async def _setup(ns: str, certs: Certs, users: UserCerts, brokers: list[str]) -> None:
    # broker-b requires a client certificate of every connection: root brings alice's, and signs
    root = _client(certs, users.certs["alice"], access_key="root", secret_key=ROOT_PW)
    async with Admin(ns, client=root) as admin:
        for broker, suffix in zip(brokers, ("A", "B"), strict=True):
            for topic in (f"Orders{suffix}", f"Secret{suffix}"):
                await admin.create_topic(topic, broker_addr=broker, read_queues=1, write_queues=1)
            # a TLS user's password is never handed out: the certificate is its credential
            await admin.create_user("alice", uuid.uuid4().hex, broker_addr=broker)
            await admin.create_acl(
                "User:alice", [f"Topic:Orders{suffix}"], ["Pub", "Sub"], "Allow", broker_addr=broker
            )
        for _ in range(100):
            try:
                for topic in ("OrdersA", "SecretA", "OrdersB"):
                    await admin.topic_route(topic)
                return
            except MQBrokerError:
                await asyncio.sleep(0.1)
    raise AssertionError("no routes for the topics")


async def _send(ns: str, topic: str, who: ClientSettings) -> str:
    async with Producer("cert-p", ns, client=who) as producer:
        try:
            await producer.send(Message(topic, b"hello"))
            return "sent"
        except MQBrokerError as e:
            assert e.code == ResponseCode.NO_PERMISSION, e
            return e.remark


def test_a_client_certificate_of_the_clients_ca_is_its_user_over_remoting(servers):
    ns, certs, users, _ = servers
    alice = _client(certs, users.certs["alice"])
    assert asyncio.run(_send(ns, "OrdersA", alice)) == "sent"
    refused = asyncio.run(_send(ns, "SecretA", alice))
    assert "User:alice has no permission to access Topic:SecretA" in refused, refused
    # the servers' CA is trusted for the handshake, but its certificates name no user
    servers_cert = _client(certs, (certs.client_cert, certs.client_key))
    assert asyncio.run(_send(ns, "OrdersA", servers_cert)) == "username cannot be null."
    # a known-CA certificate for a user the brokers do not have
    unknown = asyncio.run(_send(ns, "OrdersA", _client(certs, users.certs["nobody-known"])))
    assert unknown == "User:nobody-known is not found.", unknown
    # no certificate (optional on broker-a), no signature: nobody
    assert asyncio.run(_send(ns, "OrdersA", _client(certs, None))) == "username cannot be null."
    # a signature wins over the certificate: alice's connection signing as root may send anywhere
    as_root = _client(certs, users.certs["alice"], access_key="root", secret_key=ROOT_PW)
    assert asyncio.run(_send(ns, "SecretA", as_root)) == "sent"


def _grpc_send(endpoint: str, certs: Certs, cert: tuple[object, object], topic: str) -> pb.Status:
    cert_path, key_path = (Path(str(p)) for p in cert)
    credentials = grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes(),
                                               private_key=key_path.read_bytes(),
                                               certificate_chain=cert_path.read_bytes())  # fmt: skip
    message = pb.Message(topic=pb.Resource(name=topic), body=b"hello " + topic.encode())
    message.system_properties.message_id = uuid.uuid4().hex.upper()
    message.system_properties.message_type = pb.NORMAL
    options = [("grpc.ssl_target_name_override", "localhost")]
    with grpc.secure_channel(endpoint, credentials, options=options) as channel:
        fn = channel.unary_unary(SERVICE + "SendMessage",
                                 request_serializer=spb.SendMessageRequest.SerializeToString,
                                 response_deserializer=spb.SendMessageResponse.FromString)  # fmt: skip
        request = spb.SendMessageRequest(messages=[message])
        return fn(request, metadata=[("x-mq-client-id", "it-cert-user")], timeout=10).status


def test_a_client_certificate_of_the_clients_ca_is_its_user_over_grpc(servers):
    _, certs, users, endpoint = servers
    assert _grpc_send(endpoint, certs, users.certs["alice"], "OrdersB").code == pb.OK
    denied = _grpc_send(endpoint, certs, users.certs["alice"], "SecretB")
    assert denied.code == pb.UNAUTHORIZED and "User:alice has no permission" in denied.message, denied
    nobody = _grpc_send(endpoint, certs, (certs.client_cert, certs.client_key), "OrdersB")
    assert (nobody.code, nobody.message) == (pb.UNAUTHORIZED, "username cannot be null."), nobody
