"""The blocking facades of the two consumers: each call runs on the client's loop thread (the
shared one by default) and waits for its result, for code that is not async."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.message import MessageExt

from .consume_service import Listener
from .consumer_base import S
from .loop_thread import LoopThread, SyncFacade
from .pull_consumer import PullConsumer
from .pulling import PullResult
from .push_consumer import PushConsumer
from .settings import DEFAULT_NAMESRV, ClientSettings, PullConsumerSettings, PushConsumerSettings

_T = TypeVar("_T")
_C = TypeVar("_C", PullConsumer, PushConsumer)


class _SyncConsumer(SyncFacade, Generic[_C, S]):
    """What both blocking consumers share: made with the arguments of the consumer they drive."""

    consumer: _C
    _make: Callable[[str, str, S | None, ClientSettings | None], _C]
    """The consumer's class."""

    def __init__(self, group: str, namesrv_addr: str = DEFAULT_NAMESRV, settings: S | None = None,
                 client: ClientSettings | None = None, *, loop_thread: LoopThread | None = None) -> None:
        self.consumer = self._make(group, namesrv_addr, settings, client)
        super().__init__(self.consumer, loop_thread)


class SyncPullConsumer(_SyncConsumer[PullConsumer, PullConsumerSettings]):
    """A blocking :class:`PullConsumer` driven on the shared background loop thread.

    Example::

        with SyncPullConsumer("my-group", "127.0.0.1:9876") as consumer:
            consumer.assign(consumer.fetch_queues("TopicTest"))
            consumer.seek_to_begin()
            for msg in consumer.poll(timeout=5):
                print(msg.body)
            consumer.commit_sync()
    """

    _make = PullConsumer

    def fetch_queues(self, topic: str) -> list[MessageQueue]:
        return self._lt.run(self.consumer.fetch_queues(topic))

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        self._lt.run(self.consumer.assign(list(queues)))

    def assignment(self) -> list[MessageQueue]:
        return self.consumer.assignment()

    def seek(self, mq: MessageQueue, offset: int) -> None:
        self._lt.run(_call(self.consumer.seek, mq, offset))

    def seek_to_begin(self, queues: MessageQueue | Sequence[MessageQueue] | None = None) -> None:
        self._lt.run(self.consumer.seek_to_begin(queues))

    def seek_to_end(self, queues: MessageQueue | Sequence[MessageQueue] | None = None) -> None:
        self._lt.run(self.consumer.seek_to_end(queues))

    def seek_to_timestamp(
        self, timestamp_ms: int, queues: MessageQueue | Sequence[MessageQueue] | None = None
    ) -> None:
        self._lt.run(self.consumer.seek_to_timestamp(timestamp_ms, queues))

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        self._lt.run(_call(self.consumer.pause, list(queues)))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        self._lt.run(_call(self.consumer.resume, list(queues)))

    def position(self, mq: MessageQueue) -> int | None:
        return self._lt.run(_call(self.consumer.position, mq))

    def poll(self, timeout: float = 5.0, max_messages: int = 1024) -> list[MessageExt]:
        return self._lt.run(self.consumer.poll(timeout, max_messages))

    def pull(
        self, mq: MessageQueue, offset: int, max_nums: int = 32, expression: str = "*", suspend_ms: int = 0
    ) -> PullResult:
        return self._lt.run(self.consumer.pull(mq, offset, max_nums, expression, suspend_ms))

    def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        self._lt.run(self.consumer.commit(offsets))

    def commit_sync(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        self._lt.run(self.consumer.commit_sync(offsets))

    def committed(self, mq: MessageQueue) -> int:
        return self._lt.run(self.consumer.committed(mq))

    def min_offset(self, mq: MessageQueue) -> int:
        return self._lt.run(self.consumer.min_offset(mq))

    def max_offset(self, mq: MessageQueue) -> int:
        return self._lt.run(self.consumer.max_offset(mq))


class SyncPushConsumer(_SyncConsumer[PushConsumer, PushConsumerSettings]):
    """A :class:`PushConsumer` for code that is not async: it runs on the shared loop thread, and
    a plain-function listener is called on worker threads.

    Example::

        def on_messages(msgs):
            for m in msgs:
                print(m.body)
            return ConsumeResult.SUCCESS

        consumer = SyncPushConsumer("my-group", "127.0.0.1:9876")
        consumer.subscribe("TopicTest", "*")
        consumer.register_listener(on_messages)
        consumer.start()
        ...
        consumer.shutdown()
    """

    _make = PushConsumer

    def subscribe(self, topic: str, expression: str = "*") -> None:
        self._lt.run(_call(self.consumer.subscribe, topic, expression))

    def unsubscribe(self, topic: str) -> None:
        self._lt.run(_call(self.consumer.unsubscribe, topic))

    def register_listener(self, listener: Listener, *, orderly: bool = False) -> None:
        self.consumer.register_listener(listener, orderly=orderly)

    def assignment(self) -> list[MessageQueue]:
        return self._lt.run(_call(self.consumer.assignment))

    def rebalance(self) -> bool:
        return self._lt.run(self.consumer.rebalance())


async def _call(
    fn: Callable[..., _T], *args: Any
) -> _T:  # run a plain method on the loop thread (state lives there)
    return fn(*args)
