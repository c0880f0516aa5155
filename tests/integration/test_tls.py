"""TLS end to end with real processes: a name server and a broker that accept TLS only, the broker
registering with the name server over TLS, and the Python client producing and consuming over TLS;
a plain client and a client that does not trust the servers' CA are turned away."""

from __future__ import annotations

import asyncio
import sys

import pytest

from pyrocketmq.client import Admin, ClientSettings, ClientTls, Message, Producer, PullConsumer
from pyrocketmq.client.errors import MQError

from .tls_servers import tls_only_servers


@pytest.fixture
def tls_cluster(tmp_path):
    with tls_only_servers(tmp_path) as servers:
        yield servers


def test_produce_and_consume_over_tls_only(tls_cluster):
    ns, broker, certs = tls_cluster
    tls = ClientSettings(tls=ClientTls(enabled=True, trust_cert_path=str(certs.ca)), request_timeout=5)

    async def go():
        async with Admin(ns.addr, client=tls) as admin:
            for _ in range(100):  # the broker's first registration (over TLS) makes the cluster known
                if (await admin.cluster_info()).broker_addr_table:
                    break
                await asyncio.sleep(0.1)
            await admin.create_topic("Secure", cluster="DefaultCluster", read_queues=1, write_queues=1)
            for _ in range(100):  # routed once the broker re-registers (over TLS) with its new topic
                try:
                    await admin.topic_route("Secure")
                    break
                except MQError:
                    await asyncio.sleep(0.1)
        async with Producer("tls-p", ns.addr, client=tls) as producer:
            sent = await producer.send(Message("Secure", b"over tls"))
        async with PullConsumer("tls-c", ns.addr, client=tls) as consumer:
            [mq] = await consumer.fetch_queues("Secure")
            got = (await consumer.pull(mq, 0, 32)).messages
        plain = ClientSettings(request_timeout=2, connect_timeout=2)
        untrusted = ClientSettings(
            tls=ClientTls(enabled=True, trust_cert_path=str(certs.other_ca)), request_timeout=2
        )
        refusals = []
        for settings in (plain, untrusted):
            try:
                async with Producer("tls-x", ns.addr, client=settings) as p:
                    await p.send(Message("Secure", b"no"))
                refusals.append("sent")
            except MQError as e:
                refusals.append(str(e))
        return sent, got, refusals

    sent, got, refusals = asyncio.run(go())
    assert sent.queue_offset == 0 and [m.body for m in got] == [b"over tls"]
    assert all(r != "sent" for r in refusals), refusals
    assert "unable to get local issuer certificate" in refusals[1]


def test_the_cli_over_tls(tls_cluster):
    import subprocess

    ns, _, certs = tls_cluster
    tls = ["--tlsTrustCert", str(certs.ca)]

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pyrocketmq", *args], capture_output=True, text=True, timeout=60
        )

    made = cli(
        "admin",
        "updateTopic",
        "-n",
        ns.addr,
        *tls,
        "-c",
        "DefaultCluster",
        "-t",
        "CliSecure",
        "-r",
        "1",
        "-w",
        "1",
    )
    assert made.returncode == 0, made.stderr
    for _ in range(50):
        sent = cli("produce", "-n", ns.addr, *tls, "-t", "CliSecure", "--body", "hello", "-q")
        if sent.returncode == 0:
            break
    assert sent.returncode == 0, sent.stderr
    read = cli(
        "consume", "-n", ns.addr, *tls, "-t", "CliSecure", "-g", "cli-tls", "--from-beginning", "-c", "1"
    )
    assert read.returncode == 0 and "hello" in read.stdout, read.stderr
    plain = cli("produce", "-n", ns.addr, "-t", "CliSecure", "--body", "x", "-q")
    assert plain.returncode != 0 and "Traceback" not in plain.stderr
