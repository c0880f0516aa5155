"""Processors on a temporary store, without sockets: a request command in, a response out.

``Services`` holds what ``Broker.start`` builds (settings, managers, a loaded store) and
``make(Processor)`` hands a processor the services its constructor names, as the broker does.
A ``Peer`` is a real :class:`Connection` on a transport that keeps what is written to it, so
oneway requests the broker sends to a client (NOTIFY_CONSUMER_IDS_CHANGED …) can be read back.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field

import pytest

from pyrocketmq.broker.client_manager import ConsumerManager, ProducerManager
from pyrocketmq.broker.consumer_offset import ConsumerOffsetManager
from pyrocketmq.broker.delay_service import ScheduleService
from pyrocketmq.broker.long_poll import PullHoldService
from pyrocketmq.broker.settings import BrokerSettings
from pyrocketmq.broker.stats import BrokerStats
from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.subscription_group import SubscriptionGroupManager
from pyrocketmq.broker.topic_config import TopicConfig, TopicConfigManager
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import pack_host
from pyrocketmq.remoting.names import PERM_READ, PERM_WRITE
from pyrocketmq.remoting.transport import Connection, FrameDecoder
from tests.helpers.transport import RecordingTransport


@dataclass
class Services:
    settings: BrokerSettings
    topics: TopicConfigManager
    groups: SubscriptionGroupManager
    offsets: ConsumerOffsetManager
    consumers: ConsumerManager
    producers: ProducerManager
    store: MessageStore
    stats: BrokerStats = field(default_factory=BrokerStats)
    holds: PullHoldService = field(default_factory=PullHoldService)
    schedule: ScheduleService | None = None
    ha_server: None = None
    boot_ms: int = 1_700_000_000_000

    @property
    def store_host(self) -> bytes:
        return pack_host(*self.store.store_host)

    def make(self, cls, **overrides):
        names = [p for p in inspect.signature(cls).parameters if p not in overrides]
        wanted = {n: getattr(self, n) for n in names if hasattr(self, n)}
        return cls(**wanted, **overrides)

    def create_topic(self, name: str, queues: int = 4, perm: int = PERM_READ | PERM_WRITE) -> TopicConfig:
        config = TopicConfig(topic_name=name, read_queue_nums=queues, write_queue_nums=queues, perm=perm)
        self.topics.update(config)
        return config


def build(root: str, **conf: str) -> Services:
    settings = BrokerSettings.from_conf({"storePathRootDir": root, "brokerIP1": "127.0.0.1", **conf})
    config_dir = os.path.join(root, "config")
    os.makedirs(config_dir, exist_ok=True)
    ident = settings.identity
    topics = TopicConfigManager(
        os.path.join(config_dir, "topics.json"),
        cluster_name=ident.cluster_name,
        broker_name=ident.broker_name,
        auto_create_topic=settings.topics.auto_create_topic,
        default_queue_nums=settings.topics.default_topic_queue_nums,
    )
    groups = SubscriptionGroupManager(
        os.path.join(config_dir, "subscriptionGroup.json"),
        auto_create=settings.topics.auto_create_subscription_group,
    )
    offsets = ConsumerOffsetManager(os.path.join(config_dir, "consumerOffset.json"))
    topics.load()
    groups.load()
    offsets.load()
    store = MessageStore(settings.store, ("127.0.0.1", 10911))
    store.load()
    svc = Services(
        settings=settings, topics=topics, groups=groups, offsets=offsets,
        consumers=ConsumerManager(), producers=ProducerManager(), store=store,
    )
    svc.schedule = ScheduleService(
        store, os.path.join(config_dir, "delayOffset.json"), settings.store.delay_levels_ms
    )
    return svc


@pytest.fixture
def services(tmp_path):
    svc = build(str(tmp_path))
    yield svc
    svc.store.shutdown()


class Peer:
    """A client connection as the broker's handlers see it (build it on a running loop)."""

    def __init__(self) -> None:
        self.conn = Connection({}, name="test")
        self.transport = RecordingTransport()
        self.conn.connection_made(self.transport)

    def sent(self) -> list[RemotingCommand]:
        """The commands the broker wrote to this client."""
        decoder = FrameDecoder()
        return list(decoder.feed(bytes(self.transport.written)))
