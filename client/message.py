"""What users send and what a send returns: :class:`Message`, :class:`SendResult`, :class:`SendStatus`.

A consumer receives :class:`pyrocketmq.remoting.message.MessageExt` (the stored record, decoded),
re-exported here for convenience.

Invariants:

- :meth:`Message.wire_properties` is the one place that turns the user-facing fields into the
  ``properties`` string a broker stores: user properties, then ``TAGS``, ``KEYS`` (space-joined),
  ``DELAY`` (when a delay level is set), ``WAIT`` and ``UNIQ_KEY``. The names of those system
  properties are reserved: a user property may not use them (the Java client refuses them too),
  and no key or value may contain the separators ``\\x01``/``\\x02``.
- The unique id (``UNIQ_KEY``) is assigned once, by the producer, and survives retries: a retried
  send carries the same id, so the consumer can de-duplicate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.message import MessageExt, Prop
from pyrocketmq.remoting.names import MAX_TOPIC_LENGTH, NOT_ALLOWED_SEND_TOPICS, is_legal_name

from .errors import MQClientError

__all__ = ["Message", "MessageExt", "SendResult", "SendStatus", "check_topic", "RESERVED_PROPERTIES"]

MAX_DELAY_LEVEL = 18
#: Property names the client and broker own.
RESERVED_PROPERTIES = frozenset(
    v for k, v in vars(Prop).items() if not k.startswith("_") and isinstance(v, str)
)


def check_topic(topic: str) -> None:
    """Raise :class:`MQClientError` unless ``topic`` is a valid RocketMQ topic name.

    >>> check_topic("TopicTest")
    >>> check_topic("a b")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    pyrocketmq.client.errors.MQClientError: topic 'a b' is invalid: use only letters, digits,
    '%', '|', '_' and '-'
    """
    if not topic:
        raise MQClientError("the topic is empty: give a topic name")
    if len(topic.encode()) > MAX_TOPIC_LENGTH:
        raise MQClientError(
            f"topic {topic[:40]!r}… is {len(topic.encode())} bytes; at most {MAX_TOPIC_LENGTH} allowed"
        )
    if not is_legal_name(topic):
        raise MQClientError(f"topic {topic!r} is invalid: use only letters, digits, '%', '|', '_' and '-'")


def _check_text(what: str, text: str) -> None:
    if "\x01" in text or "\x02" in text:
        raise MQClientError(f"{what} {text!r} contains \\x01 or \\x02, which separate properties on the wire")


class SendStatus(StrEnum):
    """How a broker acknowledged a send. Anything but ``SEND_OK`` means stored, but not as durably as
    asked."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


@dataclass(slots=True)
class Message:
    """A message to send.

    ``keys`` is one key or several (stored space-separated in ``KEYS``; the broker indexes each);
    ``tags`` is one tag (consumers filter on it); ``delay_level`` 1..18 delays delivery
    (1s 5s 10s 30s 1m … 2h), ``deliver_time_ms`` delivers at any millisecond instead; ``flag`` is
    an application-defined int stored as is.

    Example::

        msg = Message("TopicTest", b"hello", tags="TagA", keys=["order-1"], properties={"k": "v"})
        result = producer.send(msg)
        print(result.msg_id)
    """

    topic: str
    body: bytes
    tags: str | None = None
    keys: str | list[str] | None = None
    properties: dict[str, str] | None = None
    delay_level: int = 0
    flag: int = 0
    #: Ask the broker to acknowledge only once the message is stored (``WAIT``); Java's default.
    wait_store_msg_ok: bool = True
    #: Set by the producer on the first send attempt (``UNIQ_KEY``); keep it to match consumers' ids.
    unique_id: str | None = field(default=None, compare=False)
    #: Deliver at this epoch millisecond (RocketMQ 5's timer, ``TIMER_DELIVER_MS``; up to the broker's
    #: ``timerMaxDelaySec`` ahead); 0: no timer. Not together with ``delay_level``.
    deliver_time_ms: int = 0

    def key_list(self) -> list[str]:
        if self.keys is None:
            return []
        if isinstance(self.keys, str):
            return [k for k in self.keys.split(" ") if k]
        return [k for k in self.keys if k]

    def validate(self, max_size: int = 4 * 1024 * 1024) -> None:
        """Raise :class:`MQClientError` when the broker would refuse this message (or the wire could not
        carry it)."""
        check_topic(self.topic)
        if self.topic in NOT_ALLOWED_SEND_TOPICS:
            raise MQClientError(f"topic {self.topic!r} is a system topic; messages cannot be sent to it")
        if not isinstance(self.body, bytes | bytearray | memoryview):
            raise MQClientError(
                f"the body must be bytes, not {type(self.body).__name__}; encode text with .encode()"
            )
        if len(self.body) == 0:
            raise MQClientError("the body is empty; RocketMQ does not store empty messages")
        if len(self.body) > max_size:
            raise MQClientError(
                f"the body is {len(self.body)} bytes; the limit is {max_size} (maxMessageSize)"
            )
        if not 0 <= self.delay_level <= MAX_DELAY_LEVEL:
            raise MQClientError(
                f"delay_level {self.delay_level} is out of range: use 0 (none) or 1..{MAX_DELAY_LEVEL}"
            )
        if self.deliver_time_ms < 0 or (self.deliver_time_ms and self.delay_level):
            raise MQClientError(
                "deliver_time_ms: give an epoch millisecond (not negative), and not with a delay_level"
            )
        if self.tags is not None:
            _check_text("tag", self.tags)
        for k in self.key_list():
            _check_text("key", k)
        for k, v in (self.properties or {}).items():
            if k in RESERVED_PROPERTIES:
                raise MQClientError(f"property {k!r} is reserved by RocketMQ; choose another name")
            if not k or v is None or v == "":
                raise MQClientError(f"property {k!r}={v!r}: names and values must be non-empty")
            _check_text("property", k)
            _check_text("property value", str(v))

    def wire_properties(self) -> dict[str, str]:
        """The properties as stored by the broker (system ones included), in a stable order."""
        props: dict[str, str] = {k: str(v) for k, v in (self.properties or {}).items()}
        if self.tags:
            props[Prop.TAGS] = self.tags
        keys = self.key_list()
        if keys:
            props[Prop.KEYS] = " ".join(keys)
        if self.delay_level > 0:
            props[Prop.DELAY] = str(self.delay_level)
        if self.deliver_time_ms > 0:
            props[Prop.TIMER_DELIVER_MS] = str(self.deliver_time_ms)
        props[Prop.WAIT] = "true" if self.wait_store_msg_ok else "false"
        if self.unique_id:
            props[Prop.UNIQ_KEY] = self.unique_id
        return props


def same_topic(messages: Iterable[Message]) -> str:
    """The common topic of a batch; :class:`MQClientError` if they differ or the batch is empty."""
    topics = {m.topic for m in messages}
    if not topics:
        raise MQClientError("the batch is empty; give at least one message")
    if len(topics) > 1:
        raise MQClientError(f"a batch must have one topic, got {sorted(topics)}; send one batch per topic")
    return topics.pop()


@dataclass(slots=True, frozen=True)
class SendResult:
    """A broker's acknowledgement of one send (or one batch).

    ``msg_id`` is the unique id (``UNIQ_KEY``; comma-joined for a batch) that consumers see as the
    message id; ``offset_msg_id`` encodes the broker address and commitlog offset (use it with
    ``Admin.view_message``); ``queue_offset`` is the message's (first message's) index in its queue.
    """

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is SendStatus.SEND_OK


def user_properties(props: Mapping[str, str]) -> dict[str, str]:
    """The properties of a received message without the system ones (those in :data:`RESERVED_PROPERTIES`)."""
    return {k: v for k, v in props.items() if k not in RESERVED_PROPERTIES}
