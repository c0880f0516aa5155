"""The Python client of pyrocketmq: producer, lite pull consumer, admin — asyncio with blocking facades.

Works against pyrocketmq brokers and unmodified Apache RocketMQ 4.9 brokers alike (it speaks the
4.x remoting protocol: language PYTHON, version 407).

Example (blocking)::

    from pyrocketmq.client import Message, SyncProducer, SyncPullConsumer

    with SyncProducer("my-producer", "127.0.0.1:9876") as producer:
        result = producer.send(Message("TopicTest", b"hello", tags="TagA", keys="order-1"))

    with SyncPullConsumer("my-consumer", "127.0.0.1:9876") as consumer:
        consumer.assign(consumer.fetch_queues("TopicTest"))
        for msg in consumer.poll(timeout=5):
            print(msg.msg_id, msg.tags, msg.body)

Example (asyncio)::

    async with Producer("my-producer", "127.0.0.1:9876") as producer:
        await producer.send(Message("TopicTest", b"hello"))

Modules: :mod:`.producer`, :mod:`.pull_consumer`, :mod:`.admin`, :mod:`.message`, :mod:`.errors`,
:mod:`.settings`; the shared runtime is :mod:`.instance`; pure rules live in :mod:`.route` and
:mod:`.fault`; the command line in :mod:`.cli`.
"""

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.message import MessageExt

from .admin import Admin, SyncAdmin
from .errors import (
    MQBrokerError,
    MQClientError,
    MQConnectionError,
    MQError,
    MQTimeoutError,
    TopicNotFoundError,
)
from .message import Message, SendResult, SendStatus
from .producer import Producer, SyncProducer
from .pull_consumer import PullConsumer, PullResult, PullStatus, SyncPullConsumer
from .settings import ClientSettings, ProducerSettings, PullConsumerSettings

__all__ = [
    "Admin",
    "ClientSettings",
    "MQBrokerError",
    "MQClientError",
    "MQConnectionError",
    "MQError",
    "MQTimeoutError",
    "Message",
    "MessageExt",
    "MessageQueue",
    "Producer",
    "ProducerSettings",
    "PullConsumer",
    "PullConsumerSettings",
    "PullResult",
    "PullStatus",
    "SendResult",
    "SendStatus",
    "SyncAdmin",
    "SyncProducer",
    "SyncPullConsumer",
    "TopicNotFoundError",
]
