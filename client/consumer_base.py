"""What both consumers share around their parts: the constructor's checks, joining and leaving the
client instance, and ``async with``.

A consumer (:class:`~.push_consumer.PushConsumer`, :class:`~.pull_consumer.PullConsumer`) is made
from a group, name servers, its settings and the client settings. :class:`Consumer` checks them
once for both (a group name, a known ``consume_from``), then runs the subclass's own
:meth:`Consumer._setup`. :meth:`Consumer._join` joins the shared
:class:`~.instance.ClientInstance` with the group registered (start); :meth:`Consumer._leave`
unregisters the group and releases the instance (shutdown, or a start that failed).

Invariant: :attr:`Consumer.instance` answers only between a successful join and the leave.
"""

from __future__ import annotations

from typing import Generic, Protocol, Self, TypeVar

from pyrocketmq.remoting.body import ConsumerData

from .errors import MQClientError
from .instance import ClientInstance
from .settings import DEFAULT_NAMESRV, ClientSettings

#: Where a queue without a stored offset starts.
CONSUME_FROM = ("last", "first", "timestamp")


class ConsumerSettings(Protocol):
    """What :class:`Consumer` checks in either consumer's settings."""

    consume_from: str


S = TypeVar("S", bound=ConsumerSettings)


class Consumer(Generic[S]):
    """The part both consumers share (see the module docstring).

    Example (a subclass)::

        class MyConsumer(Consumer[PullConsumerSettings]):
            def _default_settings(self) -> PullConsumerSettings:
                return PullConsumerSettings()

            def _setup(self) -> None:
                self.extra = {}
    """

    def __init__(self, group: str, namesrv_addr: str = DEFAULT_NAMESRV, settings: S | None = None,
                 client: ClientSettings | None = None) -> None:
        if not group:
            raise MQClientError("the consumer group is empty: give a group name")
        self.group = group
        self.settings: S = settings if settings is not None else self._default_settings()
        if self.settings.consume_from not in CONSUME_FROM:
            raise MQClientError(
                f"consume_from={self.settings.consume_from!r}: use 'last', 'first' or 'timestamp'"
            )
        self.client_settings = client or ClientSettings()
        self.client_settings.namesrv_addr = namesrv_addr or self.client_settings.namesrv_addr
        self._instance: ClientInstance | None = None
        self._setup()

    def _default_settings(self) -> S:
        raise NotImplementedError

    def _setup(self) -> None:
        """The subclass's own construction, once the arguments are checked."""

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise MQClientError("the consumer is not started: call 'await consumer.start()' first")
        return self._instance

    async def _join(self) -> ClientInstance:
        """Join the client instance of ``client_settings`` with this group registered."""
        return await ClientInstance.join(
            self.client_settings, lambda i: i.register_consumer(self.group, self)
        )

    async def _leave(self, inst: ClientInstance) -> None:
        """Forget the instance, unregister the group from it (and its brokers) and release it."""
        self._instance = None
        await inst.unregister_consumer(self.group)
        await inst.release()

    async def start(self) -> None:
        raise NotImplementedError

    def consumer_data(self) -> ConsumerData:
        """What the heartbeats say of this group's member."""
        raise NotImplementedError

    def topics(self) -> set[str]:
        """The topics whose routes the client instance keeps fresh for this consumer."""
        raise NotImplementedError

    async def shutdown(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()
