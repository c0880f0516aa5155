"""Traffic that makes every dashboard panel and alert of the chart show something: a producer, a
push consumer whose listener sends "poison" messages back (retry, then the dead-letter queue with
``max_reconsume_times=0``), a delayed message, and a background sender that keeps a topic moving."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from pyrocketmq.client import (
    ConsumeResult,
    ConsumeSettings,
    Message,
    ProducerSettings,
    PrometheusClientMetrics,
    PushConsumerSettings,
    SyncProducer,
    SyncPushConsumer,
)


@dataclass
class Traffic:
    producer: SyncProducer
    consumer: SyncPushConsumer | None
    client_registry: CollectorRegistry
    consumed: list[str] = field(default_factory=list)

    def stop_consumer(self) -> None:
        if self.consumer is not None:
            self.consumer.shutdown()
            self.consumer = None


@contextmanager
def traffic(
    namesrv: str, topic: str, background: str, group: str, producer_group: str = "obs-producer"
) -> Iterator[Traffic]:
    """A producer and a consumer of ``group`` on ``topic`` and ``background``; ``background`` gets a
    message every 0.2 s until the block ends. The caller sends on ``topic`` through ``producer``."""
    client_registry = CollectorRegistry()
    client_metrics = PrometheusClientMetrics(client_registry)
    producer = SyncProducer(producer_group, namesrv, ProducerSettings(metrics=client_metrics)).start()
    stop = threading.Event()
    sender: threading.Thread | None = None
    t = Traffic(producer, None, client_registry)
    try:
        producer.send(Message(topic, b"first"))  # creates the topic where brokers auto-create
        producer.send(Message(background, b"first"))

        def listener(msgs):
            if any(m.tags == "poison" for m in msgs):
                return ConsumeResult.RECONSUME_LATER
            t.consumed.extend(m.topic for m in msgs)
            return ConsumeResult.SUCCESS

        t.consumer = SyncPushConsumer(group, namesrv, PushConsumerSettings(
            consume_from="first", consume=ConsumeSettings(max_reconsume_times=0), metrics=client_metrics))
        t.consumer.subscribe(topic)
        t.consumer.subscribe(background)
        t.consumer.register_listener(listener)
        t.consumer.start()

        def keep_sending() -> None:
            while not stop.wait(0.2):
                try:
                    producer.send(Message(background, b"tick", tags="bg"))
                except Exception:
                    pass  # the broker is being stopped at the end

        sender = threading.Thread(target=keep_sending, daemon=True)
        sender.start()
        yield t
    finally:
        stop.set()
        if sender is not None:
            sender.join(10)
        t.stop_consumer()
        producer.shutdown()
