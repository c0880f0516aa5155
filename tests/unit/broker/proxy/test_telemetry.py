"""What a 5.x client announces on its Telemetry stream, under access control: a Settings the caller
may not announce is refused (FORBIDDEN on the stream) and registers nothing, so the session never
becomes the producer of a topic it may not publish to, nor takes over announcements another account
made under the same client id."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from pyrocketmq.broker.client_manager import ProducerManager
from pyrocketmq.broker.proxy.auth import GrpcAccess, expected_signature
from pyrocketmq.broker.proxy.clients import ClientRegistry
from pyrocketmq.broker.proxy.convert import transaction_group
from pyrocketmq.broker.proxy.pb import definition_pb2 as pb, service_pb2 as spb
from pyrocketmq.broker.proxy.service import ClientTerms, MessagingService
from pyrocketmq.server.acl import AclValidator, parse_plain_acl

from .accounts import ALICE, DATE, signed_metadata

ACL = parse_plain_acl(
    {
        "globalWhiteRemoteAddresses": [],
        "accounts": [
            ALICE,
            {
                "accessKey": "mallory1",
                "secretKey": "mallory-secret",
                "defaultTopicPerm": "DENY",
                "defaultGroupPerm": "SUB",
                "topicPerms": ["T=SUB"],
            },
        ],
    }
)
SECRETS = {"alice01": "alice-secret", "mallory1": "mallory-secret"}


class Context:
    """The parts of a gRPC servicer context the service reads: who calls, from where."""

    def __init__(self, access_key: str, client_id: str) -> None:
        sig = expected_signature(SECRETS[access_key], DATE)
        self.metadata = [("x-mq-client-id", client_id), *signed_metadata(access_key, sig)]

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return self.metadata

    def peer(self) -> str:
        return "ipv4:127.0.0.1:40000"


def _service() -> MessagingService:
    access = GrpcAccess(AclValidator(ACL))

    def refusal(request: Any, context: Any) -> pb.Status | None:
        return access.refusal(context.invocation_metadata(), "127.0.0.1", request)

    return MessagingService(handlers={}, store=None, topics=None, producers=ProducerManager(),
                            routes=None, clients=ClientRegistry(), terms=ClientTerms(4 << 20),
                            access=refusal)


class Stream:
    """One Telemetry call driven from the client side: write commands, read the server's (None: ended)."""

    def __init__(self, service: MessagingService, context: Context) -> None:
        self.requests: asyncio.Queue[spb.TelemetryCommand | None] = asyncio.Queue()
        self.received: asyncio.Queue[spb.TelemetryCommand | None] = asyncio.Queue()
        self.task = asyncio.ensure_future(self._read(service.telemetry(self._requests(), context)))

    async def _requests(self) -> AsyncIterator[spb.TelemetryCommand]:
        while (command := await self.requests.get()) is not None:
            yield command

    async def _read(self, responses: AsyncIterator[spb.TelemetryCommand]) -> None:
        async for command in responses:
            self.received.put_nowait(command)
        self.received.put_nowait(None)

    async def next(self) -> spb.TelemetryCommand | None:
        return await asyncio.wait_for(self.received.get(), 5)

    async def announce(self, settings: pb.Settings) -> spb.TelemetryCommand | None:
        self.requests.put_nowait(spb.TelemetryCommand(settings=settings))
        return await self.next()

    async def close(self) -> None:
        self.requests.put_nowait(None)
        await asyncio.wait_for(self.task, 5)


def _publishing(*topics: str) -> pb.Settings:
    return pb.Settings(
        client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name=t) for t in topics])
    )


def _producers(service: MessagingService, topic: str) -> list[str]:
    return [ch.client_id for ch in service.producers.groups.get(transaction_group(topic), {}).values()]


def test_a_producer_announces_only_topics_it_may_publish_to():
    async def main() -> None:
        service = _service()
        mallory = Stream(service, Context("mallory1", "mallory-client"))
        refused = await mallory.announce(_publishing("T"))
        assert refused.status.code == pb.FORBIDDEN and "topic:T" in refused.status.message
        assert not refused.HasField("settings")
        assert _producers(service, "T") == [] and service.clients.sessions["mallory-client"].settings is None
        alice = Stream(service, Context("alice01", "alice-client"))
        accepted = await alice.announce(_publishing("T"))
        assert accepted.status.code == pb.OK and accepted.settings.publishing.max_body_size > 0
        assert _producers(service, "T") == ["alice-client"]
        await mallory.close()
        await alice.close()

    asyncio.run(main())


def test_a_refused_announcement_withdraws_the_previous_one():
    async def main() -> None:
        service = _service()
        alice = Stream(service, Context("alice01", "alice-client"))
        assert (await alice.announce(_publishing("T"))).status.code == pb.OK
        refused = await alice.announce(_publishing("T", "Other"))
        assert refused.status.code == pb.FORBIDDEN and "topic:Other" in refused.status.message
        assert _producers(service, "T") == [] and service.clients.sessions["alice-client"].settings is None
        await alice.close()

    asyncio.run(main())


def test_a_consumer_announces_only_a_group_and_topics_it_may_consume():
    async def main() -> None:
        service = _service()
        alice = Stream(service, Context("alice01", "alice-client"))

        def subscription(group: str, topic: str) -> pb.Settings:
            return pb.Settings(
                client_type=pb.PUSH_CONSUMER,
                subscription=pb.Subscription(
                    group=pb.Resource(name=group),
                    subscriptions=[pb.SubscriptionEntry(topic=pb.Resource(name=topic))],
                ),
            )

        denied_group = await alice.announce(subscription("gdeny", "T"))
        assert denied_group.status.code == pb.FORBIDDEN and "group:gdeny" in denied_group.status.message
        denied_topic = await alice.announce(subscription("gok", "Other"))
        assert denied_topic.status.code == pb.FORBIDDEN and "topic:Other" in denied_topic.status.message
        assert (await alice.announce(subscription("gok", "T"))).status.code == pb.OK
        await alice.close()

    asyncio.run(main())


def test_a_stream_under_anothers_client_id_does_not_inherit_its_announcements():
    async def main() -> None:
        service = _service()
        alice = Stream(service, Context("alice01", "shared-id"))
        assert (await alice.announce(_publishing("T"))).status.code == pb.OK
        session = service.clients.sessions["shared-id"]
        again = Stream(service, Context("alice01", "shared-id"))  # the same account reconnects: all stays
        assert await alice.next() is None
        assert session.settings is not None and _producers(service, "T") == ["shared-id"]
        mallory = Stream(service, Context("mallory1", "shared-id"))
        assert await again.next() is None
        assert session.settings is None and _producers(service, "T") == []
        await mallory.close()

    asyncio.run(main())


def test_without_access_control_every_announcement_is_taken():
    async def main() -> None:
        service = _service()
        service.access = None
        mallory = Stream(service, Context("mallory1", "mallory-client"))
        assert (await mallory.announce(_publishing("T"))).status.code == pb.OK
        assert _producers(service, "T") == ["mallory-client"]
        await mallory.close()

    asyncio.run(main())
