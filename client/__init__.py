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

Push consumer (a listener is called; rebalancing, retries and offsets are handled)::

    consumer = SyncPushConsumer("my-group", "127.0.0.1:9876")
    consumer.subscribe("TopicTest", "TagA || TagB")
    consumer.register_listener(lambda msgs: ConsumeResult.SUCCESS)
    consumer.start()

Transactional messages (the local transaction decides; the broker asks ``check`` when unsure)::

    with SyncTransactionProducer("tx-group", "127.0.0.1:9876", check_local_transaction=check) as producer:
        producer.send_in_transaction(Message("Orders", b"paid"), lambda msg, arg: TransactionState.COMMIT)

Example (asyncio)::

    async with Producer("my-producer", "127.0.0.1:9876") as producer:
        await producer.send(Message("TopicTest", b"hello"))

Modules: :mod:`.producer`, :mod:`.pull_consumer` and :mod:`.push_consumer` (both on
:mod:`.consumer_base`, :mod:`.subscription_state` and the fetcher :mod:`.pull_service`; the push
consumer adds :mod:`.rebalance_service`, :mod:`.consume_service`, with :mod:`.process_queue`,
:mod:`.offset_store`, :mod:`.rebalance`, :mod:`.allocate`), :mod:`.admin`, :mod:`.message`,
:mod:`.errors`, :mod:`.settings`; the shared runtime is :mod:`.instance`; pure rules live in
:mod:`.route` and :mod:`.fault`; the command line in :mod:`.cli`.
"""

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.message import MessageExt
from pyrocketmq.remoting.tls import ClientTls

from .admin import Admin, SyncAdmin
from .errors import (
    MQBrokerError,
    MQClientError,
    MQConnectionError,
    MQError,
    MQTimeoutError,
    NoMasterError,
    TopicNotFoundError,
)
from .loop_thread import LoopThread, shared_loop
from .message import Message, SendResult, SendStatus
from .metrics import ClientMetrics, PrometheusClientMetrics
from .producer import Producer
from .pull_consumer import PullConsumer
from .pulling import MessageSelector, PullResult, PullStatus
from .push_consumer import ConsumeContext, ConsumeResult, PushConsumer
from .settings import (
    ClientSettings,
    ConsumeSettings,
    FlowControlSettings,
    ProducerSettings,
    PullConsumerSettings,
    PullSettings,
    PushConsumerSettings,
    RebalanceSettings,
)
from .sync_consumers import SyncPullConsumer, SyncPushConsumer
from .sync_producers import SyncProducer, SyncTransactionProducer
from .transaction import HalfMessage, TransactionProducer, TransactionSendResult, TransactionState

__all__ = [
    "Admin",
    "ClientMetrics",
    "ClientSettings",
    "ClientTls",
    "ConsumeContext",
    "ConsumeResult",
    "ConsumeSettings",
    "FlowControlSettings",
    "LoopThread",
    "MQBrokerError",
    "MQClientError",
    "MQConnectionError",
    "NoMasterError",
    "MQError",
    "MQTimeoutError",
    "HalfMessage",
    "Message",
    "MessageExt",
    "MessageQueue",
    "Producer",
    "SyncTransactionProducer",
    "TransactionProducer",
    "TransactionSendResult",
    "TransactionState",
    "ProducerSettings",
    "PrometheusClientMetrics",
    "PullConsumer",
    "PullConsumerSettings",
    "MessageSelector",
    "PullResult",
    "PullSettings",
    "PullStatus",
    "PushConsumer",
    "PushConsumerSettings",
    "RebalanceSettings",
    "SendResult",
    "SendStatus",
    "SyncAdmin",
    "SyncProducer",
    "SyncPullConsumer",
    "SyncPushConsumer",
    "TopicNotFoundError",
    "shared_loop",
]
