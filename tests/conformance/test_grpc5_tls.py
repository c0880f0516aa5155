"""TLS on the 5.x endpoint: with ``tls.server.mode=enforcing`` the gRPC port speaks TLS with the broker's
certificate; the official Java 5.x client with SSL on sends and receives, one without SSL is refused;
with ACL 2.0 on too, it signs with a user's credentials over TLS."""

from __future__ import annotations

import asyncio
import functools
import ssl

import orjson
import pytest

from pyrocketmq.remoting.acl_sign import sign as acl_sign
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient
from tests.conformance.grpc5 import make_topic, start_grpc_cluster
from tests.helpers.certs import make_certs
from tests.integration.wire import create_topic

pytestmark = pytest.mark.conformance


def test_the_grpc_port_speaks_tls_in_enforcing_mode(java5, tmp_path):
    certs = make_certs(tmp_path / "certs")
    c = start_grpc_cluster(
        tmp_path,
        **{
            "tls.server.mode": "enforcing",
            "tls.server.certPath": certs.server_cert,
            "tls.server.keyPath": certs.server_key,
        },
    )
    try:
        make_topic(c, "Tls5", ssl=ssl.create_default_context(cafile=str(certs.ca)))
        sent = java5.run("Producer5Scenario", [c.endpoint, "Tls5", "normal", 3], timeout=120,
                         jvm_props={"tls": "true"}).json()
        assert sent["errors"] == [] and len(sent["sent"]) == 3, sent
        got = java5.run("Consumer5Scenario", [c.endpoint, "Tls5", "GTls5", "simple", 3, 20], timeout=120,
                        jvm_props={"tls": "true"}).json()
        assert sorted(d["messageId"] for d in got["deliveries"]) == sorted(
            s["messageId"] for s in sent["sent"]
        )
        plain = java5.run("Producer5Scenario", [c.endpoint, "Tls5", "normal", 1], timeout=120)
        assert plain.returncode != 0 or plain.json()["errors"], plain.stdout  # no TLS, no service
    finally:
        c.stop()


def _signed_as_root(cluster, cmd: RemotingCommand, ca: str) -> None:
    async def go() -> RemotingCommand:
        root = functools.partial(acl_sign, access_key="root", secret_key="root-password")
        client = RemotingClient(ssl=ssl.create_default_context(cafile=ca), sign=root)
        try:
            return await client.invoke(cluster.broker.addr, cmd, 10)
        finally:
            await client.close()

    resp = asyncio.run(go())
    assert resp.code == ResponseCode.SUCCESS, resp.remark


def test_credentials_over_tls_acl2(java5, tmp_path):
    """ACL 2.0 and TLS together: the Java 5.x client with SSL and a user's credentials sends and
    receives where the user's ACL allows; with a wrong password it is refused."""
    certs = make_certs(tmp_path / "certs")
    c = start_grpc_cluster(
        tmp_path,
        **{"tls.server.mode": "enforcing", "tls.server.certPath": certs.server_cert,
           "tls.server.keyPath": certs.server_key, "authenticationEnabled": "true",
           "authorizationEnabled": "true",
           "initAuthenticationUser": '{"username":"root","password":"root-password"}'},
    )  # fmt: skip
    try:
        ca = str(certs.ca)
        _signed_as_root(c, create_topic("TlsAcl5", 4), ca)
        user = orjson.dumps({"username": "bob", "password": "bob-pw"})
        create_user = RemotingCommand.request(RequestCode.AUTH_CREATE_USER, {"username": "bob"}, user)
        _signed_as_root(c, create_user, ca)
        entries = [{"resource": r, "actions": ["Pub", "Sub"], "decision": "Allow"}
                   for r in ("Topic:TlsAcl5", "Group:GTlsAcl5")]
        acl = {"subject": "User:bob", "policies": [{"entries": entries}]}
        _signed_as_root(c, RemotingCommand.request(RequestCode.AUTH_CREATE_ACL, {"subject": "User:bob"},
                                                   orjson.dumps(acl)), ca)
        bob = {"tls": "true", "acl.accessKey": "bob", "acl.secretKey": "bob-pw"}
        sent = java5.run("Producer5Scenario", [c.endpoint, "TlsAcl5", "normal", 3], timeout=120,
                         jvm_props=bob).json()
        assert sent["errors"] == [] and len(sent["sent"]) == 3, sent
        got = java5.run("Consumer5Scenario", [c.endpoint, "TlsAcl5", "GTlsAcl5", "simple", 3, 20],
                        timeout=120, jvm_props=bob).json()
        ids = sorted(s["messageId"] for s in sent["sent"])
        assert sorted(d["messageId"] for d in got["deliveries"]) == ids
        wrong = java5.run("Producer5Scenario", [c.endpoint, "TlsAcl5", "normal", 1], timeout=120,
                          jvm_props={**bob, "acl.secretKey": "not-bobs"})
        assert wrong.returncode != 0 or wrong.json()["errors"], wrong.stdout
        assert "check signature failed." in wrong.stdout + wrong.stderr
    finally:
        c.stop()
