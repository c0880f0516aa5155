"""What a 5.x client announces on its Telemetry stream is authorized like the calls it leads to, on a
real broker with ACL on, driven by raw signed gRPC calls: an account without PUB on a topic that
announces it as a publishing topic is refused (FORBIDDEN on the stream) and never receives the
topic's orphaned-transaction check-backs, which go to the producer allowed to publish there; nor does
it receive them by opening a stream under that producer's client id."""

from __future__ import annotations

import asyncio
import time
import uuid

import grpc
import grpc.aio
import pytest
import yaml

from pyrocketmq.broker.proxy.auth import expected_signature
from pyrocketmq.broker.proxy.pb import definition_pb2 as pb, service_pb2 as spb
from pyrocketmq.remoting.acl_sign import sign
from pyrocketmq.remoting.code import ResponseCode
from tests.helpers.cluster import free_port
from tests.integration import wire
from tests.integration.procs import start_broker, start_namesrv
from tests.integration.wire import invoke_once

SERVICE = "/apache.rocketmq.v2.MessagingService/"
ACL = {
    "globalWhiteRemoteAddresses": [],
    "accounts": [
        {"accessKey": "producer01", "secretKey": "producer-secret", "defaultTopicPerm": "DENY",
         "defaultGroupPerm": "SUB", "topicPerms": ["TxAcl5=PUB|SUB", "TxHijack5=PUB|SUB"]},
        {"accessKey": "mallory01", "secretKey": "mallory-secret", "defaultTopicPerm": "DENY",
         "defaultGroupPerm": "SUB", "topicPerms": ["TxAcl5=SUB", "TxHijack5=SUB"]},
        {"accessKey": "rootadmin", "secretKey": "root-secret-key", "admin": True},
    ],
}
PRODUCER = ("producer01", "producer-secret")
MALLORY = ("mallory01", "mallory-secret")


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grpc5-telemetry-acl")
    path = tmp / "plain_acl.yml"
    path.write_text(yaml.safe_dump(ACL))
    ns = start_namesrv(tmp)
    grpc_port = free_port()
    try:
        broker = start_broker(tmp, ns.addr, grpcListenPort=grpc_port, aclEnable="true", aclConfigFile=path,
                              transactionCheckInterval=500, transactionTimeOut=1000)
    except BaseException:
        ns.stop()
        raise
    try:
        for topic in ("TxAcl5", "TxHijack5"):
            _admin(broker.addr, wire.create_topic(topic, 1))
        yield f"127.0.0.1:{grpc_port}"
    finally:
        broker.stop()
        ns.stop()


def _admin(addr: str, cmd) -> None:
    sign(cmd, "rootadmin", "root-secret-key")
    assert invoke_once(addr, cmd).code == ResponseCode.SUCCESS


def _metadata(account: tuple[str, str], client_id: str) -> list[tuple[str, str]]:
    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    sig = expected_signature(account[1], date)
    return [
        ("x-mq-client-id", client_id),
        ("x-mq-date-time", date),
        (
            "authorization",
            f"MQv2-HMAC-SHA1 Credential={account[0]}, SignedHeaders=x-mq-date-time, Signature={sig}",
        ),
    ]


def _publishing(topic: str) -> spb.TelemetryCommand:
    return spb.TelemetryCommand(settings=pb.Settings(
        client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name=topic)])))


class Telemetry:
    """One Telemetry stream: what the server wrote on it is collected in ``received``."""

    def __init__(self, channel: grpc.aio.Channel, account: tuple[str, str], client_id: str) -> None:
        self.call = channel.stream_stream(
            SERVICE + "Telemetry",
            request_serializer=spb.TelemetryCommand.SerializeToString,
            response_deserializer=spb.TelemetryCommand.FromString,
        )(metadata=_metadata(account, client_id))
        self.received: list[spb.TelemetryCommand] = []
        self.ended = asyncio.Event()
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            while (command := await self.call.read()) is not grpc.aio.EOF:
                self.received.append(command)
        except grpc.aio.AioRpcError:
            pass
        finally:
            self.ended.set()

    async def announce(self, command: spb.TelemetryCommand) -> spb.TelemetryCommand:
        seen = len(self.received)
        await self.call.write(command)
        await _until(lambda: len(self.received) > seen, 10)
        return self.received[seen]

    def checked(self) -> set[str]:
        """The message ids this stream was asked about (orphaned-transaction check-backs)."""
        return {c.recover_orphaned_transaction_command.message.system_properties.message_id
                for c in self.received if c.HasField("recover_orphaned_transaction_command")}

    async def close(self) -> None:
        self.call.cancel()
        await self.ended.wait()


async def _until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def _half_message(channel: grpc.aio.Channel, topic: str, client_id: str) -> str:
    """Send a transactional message with the producer's rights and leave it unresolved; its id."""
    message = pb.Message(topic=pb.Resource(name=topic), body=b"open")
    message.system_properties.message_id = uuid.uuid4().hex.upper()
    message.system_properties.message_type = pb.TRANSACTION
    send = channel.unary_unary(
        SERVICE + "SendMessage",
        request_serializer=spb.SendMessageRequest.SerializeToString,
        response_deserializer=spb.SendMessageResponse.FromString,
    )
    resp = await send(
        spb.SendMessageRequest(messages=[message]), metadata=_metadata(PRODUCER, client_id), timeout=10
    )
    assert resp.status.code == pb.OK and resp.entries[0].transaction_id, resp
    return message.system_properties.message_id


def test_only_a_producer_allowed_to_publish_is_announced_and_checked_back(endpoint):
    async def main() -> None:
        async with grpc.aio.insecure_channel(endpoint) as channel:
            mallory = Telemetry(channel, MALLORY, "mallory-client")
            refused = await mallory.announce(_publishing("TxAcl5"))
            assert refused.status.code == pb.FORBIDDEN and "topic:TxAcl5" in refused.status.message, refused
            assert not refused.HasField("settings")
            producer = Telemetry(channel, PRODUCER, "producer-client")
            accepted = await producer.announce(_publishing("TxAcl5"))
            assert accepted.status.code == pb.OK and accepted.settings.publishing.max_body_size > 0, accepted
            ids = {await _half_message(channel, "TxAcl5", "producer-client") for _ in range(2)}
            assert await _until(lambda: producer.checked() >= ids, 30), producer.received
            await asyncio.sleep(1.5)  # further turns of the check service: still none for mallory
            assert mallory.received == [refused] and not mallory.ended.is_set()
            await mallory.close()
            await producer.close()

    asyncio.run(main())


def test_a_stream_under_the_producers_client_id_gets_no_check_back(endpoint):
    async def main() -> None:
        async with grpc.aio.insecure_channel(endpoint) as channel:
            producer = Telemetry(channel, PRODUCER, "hijacked-client")
            assert (await producer.announce(_publishing("TxHijack5"))).status.code == pb.OK
            mallory = Telemetry(channel, MALLORY, "hijacked-client")
            await asyncio.wait_for(producer.ended.wait(), 10)  # the newer stream replaced it
            message_id = await _half_message(channel, "TxHijack5", "hijacked-client")
            await asyncio.sleep(3)  # several turns of the check service
            assert mallory.checked() == set(), mallory.received
            producer = Telemetry(
                channel, PRODUCER, "hijacked-client"
            )  # the producer reconnects and announces
            assert (await producer.announce(_publishing("TxHijack5"))).status.code == pb.OK
            assert await _until(lambda: message_id in producer.checked(), 30), producer.received
            await mallory.close()
            await producer.close()

    asyncio.run(main())
