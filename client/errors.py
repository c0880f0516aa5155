"""The client's exceptions: what went wrong, whether retrying can help, and what to do about it.

Three families, kept apart as asyncpg does:

- :class:`MQClientError` — misuse of the API (bad topic name, empty body, calling ``send`` before
  ``start``). Retrying never helps; the message says how to fix the call.
- :class:`MQBrokerError` — a server (broker or name server) answered with a non-success response
  code. :func:`MQBrokerError.for_code` picks the subclass for a code from one table; ``retriable``
  says whether the producer may try another broker (the Java client's rule: codes 17, 14, 1, 16,
  204, 205).
- :class:`MQTimeoutError` / :class:`MQConnectionError` — the request did not get an answer in
  time, or the connection could not be opened or broke. Both are retriable.

Every error derives from :class:`MQError`, so ``except MQError`` catches anything this package
raises on purpose.
"""

from __future__ import annotations

from typing import ClassVar

from pyrocketmq.remoting.code import ResponseCode


class MQError(Exception):
    """Base of every error raised by :mod:`pyrocketmq.client`."""

    retriable: bool = False


class MQClientError(MQError):
    """The API was used in a way that cannot work; the message says what to change.

    Example::

        try:
            producer.send(Message("a b", b"x"))
        except MQClientError as e:
            print(e)   # topic 'a b' is invalid: use letters, digits, '%', '|', '_' or '-' ...
    """


class MQTimeoutError(MQError, TimeoutError):
    """No answer within the timeout; the request may or may not have been executed."""

    retriable = True


class MQConnectionError(MQError, ConnectionError):
    """A server could not be reached, or the connection closed before the answer came."""

    retriable = True


class NoMasterError(MQClientError, MQConnectionError):
    """The broker has no master in the topic's route (restarting, or failing over): nothing there
    takes writes now. A producer tries another broker, as the Java producer does."""


# Codes on which the Java producer retries on another broker (DefaultMQProducer.retryResponseCodes).
SEND_RETRY_CODES = frozenset(
    {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.NO_PERMISSION,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
    }
)


class MQBrokerError(MQError):
    """A broker or name server answered ``code`` (not SUCCESS) with ``remark``.

    ``broker_addr`` is the ``host:port`` that answered. Use :meth:`for_code` to build the most
    specific subclass for a code.

    Example::

        >>> e = MQBrokerError.for_code(17, "topic[T] not exist", "127.0.0.1:10911")
        >>> type(e).__name__, e.retriable
        ('TopicNotFoundError', True)
    """

    code: int
    #: Response codes this subclass stands for (filled in by the subclasses).
    codes: ClassVar[tuple[int, ...]] = ()
    #: What the user can do about it, appended to the message.
    hint: ClassVar[str] = ""
    _by_code: ClassVar[dict[int, type[MQBrokerError]]] = {}

    def __init__(self, code: int, remark: str | None = None, broker_addr: str | None = None) -> None:
        self.code = int(code)
        self.remark = remark or ""
        self.broker_addr = broker_addr
        try:
            name = ResponseCode(self.code).name
        except ValueError:
            name = "UNKNOWN"
        where = f" from {broker_addr}" if broker_addr else ""
        text = f"{name} ({self.code}){where}"
        if self.remark:
            text += f": {self.remark.strip()}"
        if self.hint:
            text += f" — {self.hint}"
        super().__init__(text)

    @property
    def retriable(self) -> bool:  # type: ignore[override]  # a class attribute in the base, computed per code here
        return self.code in SEND_RETRY_CODES

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        for code in cls.codes:
            MQBrokerError._by_code[int(code)] = cls

    @classmethod
    def for_code(cls, code: int, remark: str | None = None, broker_addr: str | None = None) -> MQBrokerError:
        """The subclass registered for ``code`` (``MQBrokerError`` itself for the others)."""
        return MQBrokerError._by_code.get(int(code), MQBrokerError)(code, remark, broker_addr)


class TopicNotFoundError(MQBrokerError):
    """The topic has no route on the name servers, or the broker does not know it."""

    codes = (ResponseCode.TOPIC_NOT_EXIST,)
    hint = "create it (pyrocketmq admin updateTopic) or enable autoCreateTopicEnable on the broker"


class SystemBusyError(MQBrokerError):
    """The broker is overloaded (page cache busy, send queue full) and shed the request."""

    codes = (ResponseCode.SYSTEM_BUSY, ResponseCode.FLOW_CONTROL)
    hint = "slow down or add brokers"


class BrokerSystemError(MQBrokerError):
    """The broker failed to handle the request (SYSTEM_ERROR)."""

    codes = (ResponseCode.SYSTEM_ERROR,)


class ServiceNotAvailableError(MQBrokerError):
    """The broker is not accepting this request (a slave, shutting down, or disk full)."""

    codes = (ResponseCode.SERVICE_NOT_AVAILABLE,)


class NoPermissionError(MQBrokerError):
    """The topic or broker does not permit this operation (perm bits, the broker is read-only, or an
    ACL 2.0 user's ACL refuses it: the remark says which)."""

    codes = (ResponseCode.NO_PERMISSION,)
    hint = "check the topic's perm (6 = read+write) and the broker's brokerPermission"


class MessageIllegalError(MQBrokerError):
    """The broker rejected the message itself (too large, bad properties, bad topic name)."""

    codes = (ResponseCode.MESSAGE_ILLEGAL,)


class RequestNotSupportedError(MQBrokerError):
    """The server does not implement this request code."""

    codes = (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, ResponseCode.VERSION_NOT_SUPPORTED)


class QueryNotFoundError(MQBrokerError):
    """Nothing matched the query (no stored consumer offset, no message for the key or id)."""

    codes = (ResponseCode.QUERY_NOT_FOUND,)


class SubscriptionGroupNotFoundError(MQBrokerError):
    """The consumer group does not exist on the broker and auto-creation is off."""

    codes = (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,)
    hint = "create it (pyrocketmq admin updateSubGroup) or enable autoCreateSubscriptionGroup"


class SubscriptionError(MQBrokerError):
    """The subscription expression was rejected or is unknown to the broker."""

    codes = (
        ResponseCode.SUBSCRIPTION_PARSE_FAILED,
        ResponseCode.SUBSCRIPTION_NOT_EXIST,
        ResponseCode.SUBSCRIPTION_NOT_LATEST,
    )


class ConsumerNotOnlineError(MQBrokerError):
    """No consumer of the group is connected to the broker."""

    codes = (ResponseCode.CONSUMER_NOT_ONLINE,)


BROKER_GONE: tuple[type[MQError], ...] = (MQConnectionError, MQTimeoutError, ServiceNotAvailableError)
"""Failures that say the broker asked is gone or stepping down (a failover?), not that it refused:
a consumer refreshes the topic's route at once and asks the master next."""


def failover_pause(error: MQError, settling: int, remaining: float) -> float:
    """Seconds to wait before trying again when ``error`` says a master is handing over (the broker
    asked turned slave, or the route has no master yet), or 0 to count the try as an attempt: 0.1 s
    doubling up to 1 s, while more than 0.5 s of the send's time is left.

    >>> failover_pause(MQBrokerError.for_code(14), 2, 3.0), failover_pause(MQTimeoutError("x"), 0, 3.0)
    (0.4, 0.0)
    """
    if not isinstance(error, ServiceNotAvailableError | NoMasterError) or remaining <= 0.5:
        return 0.0
    return min(0.1 * (1 << min(settling, 4)), 1.0, remaining - 0.5)
