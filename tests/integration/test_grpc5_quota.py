"""Per-user quotas on the 5.x endpoint, with real processes: a broker with ``grpcListenPort`` and ACL
2.0. alice has a quota of 20 KiB/s of produced and of consumed bytes; over raw signed gRPC calls, as a
5.x client makes them, alice and bob (no quota) send 1 KiB messages at once for a few seconds: alice
is held to her rate without a failed call, bob is not held back; alice's receive is counted and slowed
too, and ``/metrics`` shows both."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.request
import uuid

import grpc
import pytest

from pyrocketmq.broker.proxy.pb import definition_pb2 as pb, service_pb2 as spb
from pyrocketmq.client import Admin, ClientSettings
from pyrocketmq.client.errors import MQBrokerError
from pyrocketmq.remoting.body import SubscriptionGroupConfig
from tests.helpers.cluster import free_port

from .procs import start_broker, start_namesrv
from .test_grpc5_acl2 import SERVICE, _metadata, _receive
from .test_quota_processes import _metric

ROOT = ClientSettings(access_key="root", secret_key="root-password", request_timeout=5)
USERS = {"alice": "alice-password", "bob": "bob-password"}
TOPIC, GROUP = "Quota5", "alice-quota5"
LIMIT, SIZE, SECONDS = 20 * 1024, 1024, 3.0


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grpc5-quota")
    ns = start_namesrv(tmp)
    grpc_port, metrics_port = free_port(), free_port()
    try:
        broker = start_broker(tmp, ns.addr, grpcListenPort=grpc_port, metricsPort=metrics_port,
                              authenticationEnabled="true", authorizationEnabled="true",
                              initAuthenticationUser='{"username":"root","password":"root-password"}')
    except BaseException:
        ns.stop()
        raise
    try:
        asyncio.run(_setup(ns.addr, broker.addr))
        yield f"127.0.0.1:{grpc_port}", metrics_port
    finally:
        broker.stop()
        ns.stop()


async def _setup(ns: str, broker: str) -> None:
    async with Admin(ns, client=ROOT) as admin:
        await admin.create_topic(TOPIC, broker_addr=broker, read_queues=2, write_queues=2)
        await admin.create_subscription_group(SubscriptionGroupConfig(group_name=GROUP), broker_addr=broker)
        for user, password in USERS.items():
            await admin.create_user(user, password, broker_addr=broker)
            await admin.create_acl(f"User:{user}", [f"Topic:{TOPIC}", f"Group:{GROUP}"], ["Pub", "Sub"],
                                   "Allow", broker_addr=broker)  # fmt: skip
        await admin.set_user_quota("alice", produced_bytes_per_second=LIMIT, consumed_bytes_per_second=LIMIT,
                                   requests_per_second=0, broker_addr=broker)  # fmt: skip
        for _ in range(100):
            try:
                await admin.topic_route(TOPIC)
                return
            except MQBrokerError:
                await asyncio.sleep(0.1)
    raise AssertionError(f"no route for {TOPIC}")


def _send_for(endpoint: str, user: str, out: dict[str, list[int]]) -> None:
    """Sends of 1 KiB as ``user`` for SECONDS, one after another: the status code of each."""
    codes: list[int] = []
    with grpc.insecure_channel(endpoint) as channel:
        fn = channel.unary_unary(SERVICE + "SendMessage",
                                 request_serializer=spb.SendMessageRequest.SerializeToString,
                                 response_deserializer=spb.SendMessageResponse.FromString)  # fmt: skip
        end = time.monotonic() + SECONDS
        while time.monotonic() < end:
            message = pb.Message(topic=pb.Resource(name=TOPIC), body=b"q" * SIZE)
            message.system_properties.message_id = uuid.uuid4().hex.upper()
            message.system_properties.message_type = pb.NORMAL
            answer = fn(spb.SendMessageRequest(messages=[message]), metadata=_metadata((user, USERS[user])),
                        timeout=10)  # fmt: skip
            codes.append(answer.status.code)
    out[user] = codes


def test_a_5x_client_over_its_quota_is_slowed_and_another_is_not(endpoint):
    address, metrics_port = endpoint
    sent: dict[str, list[int]] = {}
    threads = [threading.Thread(target=_send_for, args=(address, user, sent)) for user in USERS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    alice_rate, bob_rate = (len(sent[u]) * SIZE / SECONDS for u in ("alice", "bob"))
    print(f"5.x sends: alice {alice_rate / 1024:.1f} KiB/s (limit {LIMIT / 1024:.0f}), "
          f"bob {bob_rate / 1024:.1f} KiB/s")
    assert set(sent["alice"]) == {pb.OK} and set(sent["bob"]) == {pb.OK}  # slowed, never refused
    assert alice_rate <= 2.5 * LIMIT and bob_rate > 3 * alice_rate
    answers = _receive(address, ("alice", USERS["alice"]), TOPIC, GROUP)
    assert any(a.HasField("message") for a in answers)
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
    assert _metric(text, "pyrocketmq_broker_user_throttle_seconds_total", "alice") > 0
    assert _metric(text, "pyrocketmq_broker_user_throttle_seconds_total", "bob") == 0
    assert _metric(text, "pyrocketmq_broker_user_produced_bytes_total", "alice") >= len(sent["alice"]) * SIZE
    assert _metric(text, "pyrocketmq_broker_user_consumed_bytes_total", "alice") >= SIZE  # receives counted
