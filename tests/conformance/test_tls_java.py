"""The unmodified Apache RocketMQ 4.9 Java client over TLS (``-Dtls.enable=true``, its default
test mode trusting any server) against a pyrocketmq name server and broker that accept TLS only:
it routes, sends every way and reads everything back."""

from __future__ import annotations

import pytest

from tests.integration.tls_servers import tls_only_servers

pytestmark = pytest.mark.conformance

TLS = {"tls.enable": "true"}
COUNT = 60


@pytest.fixture
def tls_servers(tmp_path):
    with tls_only_servers(tmp_path) as (ns, broker, _certs):
        yield ns, broker


def test_java_client_over_tls(tls_servers, java):
    ns, broker = tls_servers
    produced = java.run("ProducerScenario", [ns.addr, "TlsTopic", COUNT, "sync,async=10,oneway=5,batch=5"],
                        timeout=180, jvm_props=TLS).json()
    sent = produced["sent"]
    assert produced["errors"] == 0, [s.get("error") for s in sent if "error" in s][:3]
    assert len(sent) == COUNT + 10 + 5 + 5
    acknowledged = [s for s in sent if s["kind"] != "oneway"]
    assert all(s["status"] == "SEND_OK" for s in acknowledged)
    pulled = java.run("PullScenario", [ns.addr, "TlsTopic", "cg_tls", len(sent), 60, "lite"], timeout=120,
                      jvm_props=TLS).json()
    assert not pulled["timedOut"] and len(pulled["messages"]) == len(sent)
    plain = java.run("ProducerScenario", [ns.addr, "TlsTopic", 1, "sync"], timeout=120).json()
    assert plain["errors"] == 1, plain  # the same client without TLS gets nowhere: the servers enforce it


def test_python_client_over_tls_to_apache(tmp_path_factory):
    """The other direction: Apache's 4.9 servers serve TLS by default (permissive, a self-signed
    certificate in their test mode); our client with TLS (trusting any server, as Apache's clients
    do there) routes, sends and pulls."""
    import asyncio

    from pyrocketmq.client import ClientSettings, ClientTls, Message, Producer, PullConsumer
    from tests.conformance.apache import start_apache_cluster

    cluster = start_apache_cluster(tmp_path_factory.mktemp("apache-tls"))
    tls = ClientSettings(tls=ClientTls(enabled=True, verify=False), request_timeout=10)

    async def go():
        async with Producer("py-tls", cluster.namesrv_addr, client=tls) as producer:
            sent = await producer.send(Message("PyTls", b"over tls to apache"))
        async with PullConsumer("py-tls-c", cluster.namesrv_addr, client=tls) as consumer:
            return [m.body for m in (await consumer.pull(sent.message_queue, sent.queue_offset, 1)).messages]

    try:
        assert asyncio.run(go()) == [b"over tls to apache"]
    finally:
        cluster.stop()
