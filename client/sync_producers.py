"""The blocking facades of the two producers: each call runs on the client's loop thread (the
shared one by default) and waits for its result, for code that is not async.

Both are made with the arguments of the producer they drive (:class:`_SyncProducer`); the
transaction producer's hooks (:class:`~.transaction.TransactionHooks`) are keyword arguments that
only :class:`SyncTransactionProducer` accepts.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from typing import Any, Generic, TypeVar, Unpack

from pyrocketmq.remoting.body import MessageQueue

from .errors import MQClientError
from .loop_thread import LoopThread, SyncFacade
from .message import Message, SendResult
from .producer import Producer, SendCallback
from .settings import DEFAULT_NAMESRV, ClientSettings, ProducerSettings
from .transaction import LocalExecutor, TransactionHooks, TransactionProducer, TransactionSendResult

_P = TypeVar("_P", Producer, TransactionProducer)


class _SyncProducer(SyncFacade, Generic[_P]):
    """What both blocking producers share: made with the arguments of the producer they drive,
    and its plain sends made blocking."""

    producer: _P

    def __init__(self, group: str, namesrv_addr: str = DEFAULT_NAMESRV,
                 settings: ProducerSettings | None = None, client: ClientSettings | None = None, *,
                 loop_thread: LoopThread | None = None, **hooks: Unpack[TransactionHooks]) -> None:
        self.producer = self._make(group, namesrv_addr, settings, client, hooks)
        super().__init__(self.producer, loop_thread)

    def _make(self, group: str, namesrv_addr: str, settings: ProducerSettings | None,
              client: ClientSettings | None, hooks: TransactionHooks) -> _P:
        """The asyncio producer this facade drives."""
        raise NotImplementedError

    def send(
        self, msg: Message | Sequence[Message], timeout: float | None = None, **kwargs: Any
    ) -> SendResult:
        """Blocking :meth:`Producer.send`."""
        return self._lt.run(self.producer.send(msg, timeout, **kwargs))

    def send_async(
        self,
        msg: Message | Sequence[Message],
        callback: SendCallback | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> concurrent.futures.Future[SendResult]:
        """Start a send; returns a future. ``callback(result, error)`` runs on the loop thread:
        keep it short."""

        async def go() -> SendResult:
            return await self.producer.send_async(msg, callback, timeout, **kwargs)

        return self._lt.submit(go())

    def send_oneway(self, msg: Message | Sequence[Message], **kwargs: Any) -> None:
        """Blocking :meth:`Producer.send_oneway` (returns once written)."""
        self._lt.run(self.producer.send_oneway(msg, **kwargs))

    def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        return self._lt.run(self.producer.fetch_publish_queues(topic))


class SyncProducer(_SyncProducer[Producer]):
    """A blocking :class:`~.producer.Producer` for code that is not async (thread-safe).

    The asyncio producer runs on a background event-loop thread (shared by all sync clients by
    default); each call waits for its result.

    Example::

        with SyncProducer("my-group", "127.0.0.1:9876") as producer:
            result = producer.send(Message("TopicTest", b"hello", tags="TagA"))
            future = producer.send_async(Message("TopicTest", b"later"))   # concurrent.futures.Future
            producer.send_oneway(Message("TopicTest", b"fire and forget"))
            print(result.msg_id, future.result().msg_id)
    """

    def _make(self, group: str, namesrv_addr: str, settings: ProducerSettings | None,
              client: ClientSettings | None, hooks: TransactionHooks) -> Producer:
        if hooks:
            raise MQClientError(f"{', '.join(hooks)}: transaction hooks need a SyncTransactionProducer")
        return Producer(group, namesrv_addr, settings, client)


class SyncTransactionProducer(_SyncProducer[TransactionProducer]):
    """A blocking :class:`~.transaction.TransactionProducer` (thread-safe).

    Example::

        with SyncTransactionProducer("tx-group", "127.0.0.1:9876",
                                     check_local_transaction=lambda msg: TransactionState.COMMIT) as producer:
            result = producer.send_in_transaction(Message("Orders", b"paid"),
                                                  lambda msg, arg: TransactionState.COMMIT)
            print(result.local_state)

    The callables run on worker threads (coroutine functions on the loop thread).
    """

    def _make(self, group: str, namesrv_addr: str, settings: ProducerSettings | None,
              client: ClientSettings | None, hooks: TransactionHooks) -> TransactionProducer:
        return TransactionProducer(group, namesrv_addr, settings, client, **hooks)

    def send_in_transaction(self, msg: Message, execute_local_transaction: LocalExecutor | None = None,
                            arg: Any = None, timeout: float | None = None) -> TransactionSendResult:
        """Blocking :meth:`TransactionProducer.send_in_transaction`."""
        execute = execute_local_transaction
        return self._lt.run(self.producer.send_in_transaction(msg, execute, arg, timeout))
