"""Per-user quotas with real processes: a name server and a broker with ACL 2.0 on. The super user
gives alice a quota of 50 KiB/s of produced bytes (through ``pyrocketmq admin updateUserQuota``);
alice and bob (no quota) then send 1 KiB messages at once, each as fast as the broker answers.
Alice is slowed to her rate and none of her sends fails; bob is not slowed (his throttle series
stays 0, he sends many times what she does, about as fast as alone); ``/metrics`` shows her
throttle time."""

from __future__ import annotations

import asyncio
import io
import re
import time
import urllib.request

import pytest

from pyrocketmq.client import Admin, ClientSettings, Message, Producer, cli
from pyrocketmq.client.errors import MQBrokerError

from .procs import free_port, start_broker, start_namesrv

ROOT = ClientSettings(access_key="root", secret_key="root-password", request_timeout=5)
ALICE = ClientSettings(access_key="alice", secret_key="alice-password", request_timeout=5)
BOB = ClientSettings(access_key="bob", secret_key="bob-password", request_timeout=5)
TOPIC = "Quota"
LIMIT = 50 * 1024
SIZE = 1024
SENDERS = 4
"""Sends each user keeps going at once (each waits for its answer, then sends the next)."""


@pytest.fixture
def cluster(tmp_path):
    ns = start_namesrv(tmp_path)
    procs = [ns]
    try:
        metrics_port = free_port()
        broker = start_broker(tmp_path, ns.addr, "broker-a", authenticationEnabled="true",
                              authorizationEnabled="true", metricsPort=metrics_port,
                              initAuthenticationUser='{"username":"root","password":"root-password"}')
        procs.append(broker)
        yield ns, broker, metrics_port
    finally:
        for p in reversed(procs):
            p.stop()


async def _setup(ns: str, broker: str) -> None:
    async with Admin(ns, client=ROOT) as root:
        await root.create_topic(TOPIC, broker_addr=broker, read_queues=4, write_queues=4)
        for who in (ALICE, BOB):
            assert who.access_key and who.secret_key
            await root.create_user(who.access_key, who.secret_key, broker_addr=broker)
            await root.create_acl(f"User:{who.access_key}", [f"Topic:{TOPIC}"], ["Pub"], "Allow",
                                  broker_addr=broker)
        for _ in range(100):
            try:
                await root.topic_route(TOPIC)
                return
            except MQBrokerError:
                await asyncio.sleep(0.1)
        raise AssertionError(f"no route for {TOPIC}")


async def _send_for(ns: str, who: ClientSettings, seconds: float) -> tuple[int, list[str]]:
    """Messages ``who`` got stored in ``seconds`` (``SENDERS`` at once), and the failures."""
    failures: list[str] = []
    sent = 0
    body = b"q" * SIZE
    async with Producer(f"{who.access_key}-p", ns, client=who) as producer:
        await producer.send(Message(TOPIC, body))  # routes and connection first, not counted
        end = time.monotonic() + seconds

        async def sender() -> None:
            nonlocal sent
            while time.monotonic() < end:
                try:
                    await producer.send(Message(TOPIC, body))
                    sent += 1
                except Exception as e:
                    failures.append(f"{type(e).__name__}: {e}")

        await asyncio.gather(*(sender() for _ in range(SENDERS)))
    return sent, failures


def _metric(text: str, name: str, user: str) -> float:
    found = re.search(rf'^{name}{{[^}}]*user="{user}"[^}}]*}} (\S+)$', text, re.M)
    assert found, f"no {name} for {user}"
    return float(found.group(1))


def test_a_user_over_its_quota_is_slowed_to_it_and_others_are_not(cluster, monkeypatch):
    ns, broker, metrics_port = cluster
    asyncio.run(_setup(ns.addr, broker.addr))
    monkeypatch.setenv("PYROCKETMQ_SECRET_KEY", "root-password")
    out, err = io.StringIO(), io.StringIO()
    admin = ["admin", "-n", ns.addr, "--accessKey", "root", "-b", broker.addr, "-u", "alice"]
    assert cli.main([admin[0], "updateUserQuota", *admin[1:], "--producedBytesPerSecond", str(LIMIT)],
                    stdout=out, stderr=err) == 0, err.getvalue()
    assert cli.main([admin[0], "getUserQuota", *admin[1:]], stdout=out, stderr=err) == 0, err.getvalue()
    assert f'"producedBytesPerSecond": {LIMIT}' in out.getvalue()

    async def traffic() -> tuple[float, float, float, list[str]]:
        alone = 2.0
        bob_alone, bob_failed = await _send_for(ns.addr, BOB, alone)
        together = 6.0
        (alice, alice_failed), (bob, bob_failed2) = await asyncio.gather(
            _send_for(ns.addr, ALICE, together), _send_for(ns.addr, BOB, together))
        return (alice * SIZE / together, bob_alone * SIZE / alone, bob * SIZE / together,
                alice_failed + bob_failed + bob_failed2)

    alice_rate, bob_alone_rate, bob_rate, failures = asyncio.run(traffic())
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
    print(f"alice {alice_rate / 1024:.1f} KiB/s (limit {LIMIT / 1024:.0f}), bob alone "
          f"{bob_alone_rate / 1024:.1f} KiB/s, bob beside alice {bob_rate / 1024:.1f} KiB/s")
    assert failures == []
    assert 0.5 * LIMIT <= alice_rate <= 1.3 * LIMIT
    assert bob_rate > 5 * alice_rate
    assert bob_rate > bob_alone_rate / 4  # bob shares the broker's time with alice, no more
    assert _metric(text, "pyrocketmq_broker_user_throttle_seconds_total", "alice") > 0
    assert _metric(text, "pyrocketmq_broker_user_throttled_requests_total", "alice") > 0
    assert _metric(text, "pyrocketmq_broker_user_throttle_seconds_total", "bob") == 0
    assert _metric(text, "pyrocketmq_broker_user_throttled_requests_total", "bob") == 0
    assert _metric(text, "pyrocketmq_broker_user_produced_bytes_total", "bob") >= bob_rate * 6
    assert _metric(text, "pyrocketmq_broker_user_quota", "alice") == LIMIT
