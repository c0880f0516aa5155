"""TLS on the 5.x endpoint: with ``tls.server.mode=enforcing`` the gRPC port speaks TLS with the broker's
certificate; the official Java 5.x client with SSL on sends and receives, one without SSL is refused."""

from __future__ import annotations

import ssl

import pytest

from tests.conformance.grpc5 import make_topic, start_grpc_cluster
from tests.helpers.certs import make_certs

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
