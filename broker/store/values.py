"""The values that cross the store's API: what a put takes and what puts and gets return.

Statuses keep RocketMQ's names (``PutMessageStatus``, ``GetMessageStatus``); processors map them to
wire response codes. :class:`GetResult` and :class:`QueryMessageResult` carry ``memoryview`` slices of
the mapped commitlog, not copies: each is one whole stored record, ready to be written to a socket as
the pull (or query) body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from pyrocketmq.remoting.message import KEY_SEPARATOR, Prop, encode_properties, tags_code


class PutMessageStatus(IntEnum):
    PUT_OK = 0
    FLUSH_DISK_TIMEOUT = 1
    FLUSH_SLAVE_TIMEOUT = 2
    SLAVE_NOT_AVAILABLE = 3
    SERVICE_NOT_AVAILABLE = 4
    CREATE_MAPPED_FILE_FAILED = 5
    MESSAGE_ILLEGAL = 6
    PROPERTIES_SIZE_EXCEEDED = 7
    OS_PAGECACHE_BUSY = 8
    UNKNOWN_ERROR = 9


class GetMessageStatus(IntEnum):
    FOUND = 0
    NO_MATCHED_MESSAGE = 1
    MESSAGE_WAS_REMOVING = 2
    OFFSET_FOUND_NULL = 3
    OFFSET_OVERFLOW_BADLY = 4
    OFFSET_OVERFLOW_ONE = 5
    OFFSET_TOO_SMALL = 6
    NO_MATCHED_LOGIC_QUEUE = 7
    NO_MESSAGE_IN_QUEUE = 8


@dataclass(slots=True)
class MessageInner:
    """A message as the send processor hands it to the store.

    ``properties_bytes`` is the encoded form of ``properties`` (None = encode here); the broker
    usually has it already (the send header carries it) and appends ``CLUSTER`` itself.
    ``born_host``/``store_host`` are packed (``pack_host``); an empty ``store_host`` means the
    store's own. ``tags_code`` is the Java hash of TAGS (see :meth:`build`).
    """

    topic: str
    body: bytes | bytearray | memoryview
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    properties_bytes: bytes | None = None
    queue_id: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: bytes = b"\x7f\x00\x00\x01\x00\x00\x00\x00"
    store_host: bytes = b""
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    tags_code: int = 0
    keys: str | list[str] | None = None
    """KEYS (raw or split); informational: the index reads ``properties`` (KEYS and UNIQ_KEY)."""

    @classmethod
    def build(
        cls,
        topic: str,
        body: bytes | bytearray | memoryview,
        properties: dict[str, str] | None = None,
        **kw: object,
    ) -> MessageInner:
        """Fill ``properties_bytes``, ``tags_code`` and ``keys`` from ``properties``.

        >>> m = MessageInner.build("T", b"x", {"TAGS": "TagA", "KEYS": "k1 k2"}, queue_id=1)
        >>> (m.tags_code, m.keys)
        (2598919, ['k1', 'k2'])
        """
        props = dict(properties or {})
        k = props.get(Prop.KEYS)
        return cls(
            topic=topic,
            body=body,
            properties=props,
            properties_bytes=encode_properties(props),
            tags_code=tags_code(props.get(Prop.TAGS)),
            keys=[x for x in k.split(KEY_SEPARATOR) if x] if k else [],
            **kw,  # type: ignore[arg-type]  # the remaining MessageInner fields, passed through by name
        )


# PutResult and GetResult are not frozen: a frozen dataclass sets each field through
# object.__setattr__, which costs ~2 µs per put (measured) on a path that costs ~10 µs in all.
# Treat them as values all the same.


@dataclass(slots=True)
class PutResult:
    status: PutMessageStatus
    wrote_offset: int = 0
    """Commitlog offset of the (first) record."""
    wrote_bytes: int = 0
    """Bytes appended (all records of a batch)."""
    msg_id: str = ""
    """Offset message id; comma-joined for a batch."""
    queue_offset: int = 0
    """Logical offset of the (first) message in its consume queue."""
    message_count: int = 0
    store_timestamp: int = 0
    timer_due_ms: int = 0
    """When the store held the message in the timer topic: its due time (epoch ms); else 0."""

    @property
    def ok(self) -> bool:
        return self.status == PutMessageStatus.PUT_OK

    @property
    def end_offset(self) -> int:
        """What to pass to ``request_flush`` for a SYNC_FLUSH acknowledgement."""
        return self.wrote_offset + self.wrote_bytes


@dataclass(slots=True)
class GetResult:
    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    buffers: list[memoryview] = field(default_factory=list)
    """One slice of the mapped commitlog per message, in queue order (no copies)."""
    message_count: int = 0
    buffer_total_size: int = 0
    suggest_pull_from_slave: bool = False
    """The data pulled is further behind the head than ``accessMessageInMemoryMaxRatio`` of RAM."""

    @property
    def found(self) -> bool:
        return self.status == GetMessageStatus.FOUND


@dataclass(slots=True)
class QueryMessageResult:
    """What ``MessageStore.query_message`` found by key (QUERY_MESSAGE)."""

    buffers: list[memoryview] = field(default_factory=list)
    """One slice of the mapped commitlog per record, ascending commitlog offsets (no copies)."""
    index_last_update_timestamp: int = 0
    """STORETIMESTAMP of the newest record in the index (0 with no index)."""
    index_last_update_phyoffset: int = 0
    """Its commitlog offset."""

    @property
    def buffer_total_size(self) -> int:
        return sum(len(b) for b in self.buffers)
