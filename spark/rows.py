"""Rows ↔ messages: the source's schema and the writer's column mapping.

Pure: no Spark imports (timestamps are ``datetime`` values, maps are ``dict`` s; Spark converts
them), so the mapping is unit-tested without a JVM.

Source schema (one row per message)::

    topic STRING, brokerName STRING, queueId INT, queueOffset BIGINT, msgId STRING,
    keys STRING, tags STRING, properties MAP<STRING,STRING>, body BINARY,
    bornTimestamp TIMESTAMP, storeTimestamp TIMESTAMP, reconsumeTimes INT

``keys`` is the stored ``KEYS`` property (keys separated by spaces); ``properties`` holds the
user properties only — system properties have their own columns (``tags``, ``keys``, ``msgId``)
or are broker bookkeeping. ``msgId`` is the producer's unique id (``UNIQ_KEY``), else the
offset id, as RocketMQ clients show it.

Writer columns: ``body`` (binary or string; required), and optional ``topic`` (else the
``topic`` option), ``tags``, ``keys`` (a string of space-separated keys or an array), and
``properties`` (map). Other columns are ignored, so a DataFrame read from one topic can be
written to another as is.

De-duplication: delivery by the writer is at-least-once (a failed task or micro-batch is run
again and re-sends its rows). With ``dedupKey=true`` every message also carries the key
:func:`dedup_key` — ``<prefix>-<query id>-<batch id>-<partition>-<row>`` — which is the same
when Spark re-runs that batch over the same input, so consumers can drop repeats by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pyrocketmq.client.errors import MQClientError
from pyrocketmq.client.message import Message, user_properties
from pyrocketmq.remoting.message import MessageExt, Prop

SCHEMA_DDL = (
    "topic STRING, brokerName STRING, queueId INT, queueOffset BIGINT, msgId STRING, keys STRING, "
    "tags STRING, properties MAP<STRING,STRING>, body BINARY, bornTimestamp TIMESTAMP, "
    "storeTimestamp TIMESTAMP, reconsumeTimes INT"
)
COLUMNS = tuple(part.split(" ", 1)[0] for part in SCHEMA_DDL.split(", "))
WRITER_COLUMNS = ("body", "topic", "tags", "keys", "properties")


def to_datetime(ms: int) -> datetime:
    """Milliseconds since the epoch → an aware UTC ``datetime``.

    >>> to_datetime(0).isoformat()
    '1970-01-01T00:00:00+00:00'
    """
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC)


def message_to_row(msg: MessageExt, broker_name: str) -> tuple[Any, ...]:
    """The source row of one pulled message (column order of :data:`SCHEMA_DDL`)."""
    props = msg.properties
    return (
        msg.topic,
        broker_name,
        msg.queue_id,
        msg.queue_offset,
        msg.msg_id,
        props.get(Prop.KEYS),
        props.get(Prop.TAGS),
        user_properties(props),
        bytes(msg.body),
        to_datetime(msg.born_timestamp),
        to_datetime(msg.store_timestamp),
        msg.reconsume_times,
    )


def check_writer_columns(names: list[str], default_topic: str | None) -> None:
    """Raise :class:`MQClientError` when rows with these columns cannot be written."""
    low = {n.lower() for n in names}
    if "body" not in low:
        raise MQClientError(
            f"the DataFrame has no 'body' column (columns: {', '.join(names)}); select one, e.g. "
            "to_json(struct(*)).alias('body')"
        )
    if "topic" not in low and not default_topic:
        raise MQClientError("rows have no 'topic' column: add one or set the option topic")


def dedup_key(prefix: str, query_id: str | None, batch_id: str | int, partition: int, row: int) -> str:
    """The de-duplication key of row ``row`` of ``partition`` in batch ``batch_id``.

    >>> dedup_key("spark", "q1", 7, 0, 12)
    'spark-q1-7-0-12'
    >>> dedup_key("spark", None, "nightly", 3, 0)
    'spark-nightly-3-0'
    """
    parts = [prefix] + ([query_id] if query_id else []) + [str(batch_id), str(partition), str(row)]
    return "-".join(parts)


def _text(value: Any, column: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode()
    if not isinstance(value, str):
        raise MQClientError(f"column {column} must be a string, got {type(value).__name__}")
    return value


def row_to_message(
    row: Mapping[str, Any], default_topic: str | None, extra_key: str | None = None,
    extra_properties: Mapping[str, str] | None = None,
) -> Message:
    """The message for one writer row (a mapping of column name → value); ``extra_properties``
    (the exactly-once sink's batch and attempt) are added to, and win over, the row's.

    >>> m = row_to_message({"body": "hi", "tags": "TagA", "keys": ["k1", "k2"]}, "Out", extra_key="d-1")
    >>> (m.topic, m.body, m.tags, m.keys)
    ('Out', b'hi', 'TagA', ['k1', 'k2', 'd-1'])
    """
    cols = {k.lower(): v for k, v in row.items()}
    body = cols.get("body")
    if body is None:
        raise MQClientError("a row has a null body; RocketMQ does not store empty messages")
    if isinstance(body, str):
        body = body.encode()
    elif isinstance(body, bytearray | memoryview):
        body = bytes(body)
    if not isinstance(body, bytes):
        raise MQClientError(f"column body must be binary or string, got {type(body).__name__}")
    topic = _text(cols.get("topic"), "topic") or default_topic
    if not topic:
        raise MQClientError("a row has no topic: fill the topic column or set the option topic")
    raw_keys = cols.get("keys")
    if raw_keys is None:
        keys: list[str] = []
    elif isinstance(raw_keys, list | tuple):
        keys = [str(k) for k in raw_keys if k]
    else:
        keys = [k for k in (_text(raw_keys, "keys") or "").split(" ") if k]
    if extra_key:
        keys.append(extra_key)
    props = cols.get("properties")
    if props is not None and not isinstance(props, Mapping):
        # Spark hands a MAP column to Python as a dict; a list of pairs is accepted too.
        try:
            props = dict(props)
        except (TypeError, ValueError):
            raise MQClientError(
                f"column properties must be a map<string,string>, got {type(props).__name__}"
            ) from None
    properties = {str(k): str(v) for k, v in props.items() if v is not None} if props else {}
    properties.update(extra_properties or {})
    return Message(
        topic=topic,
        body=body,
        tags=_text(cols.get("tags"), "tags") or None,
        keys=keys or None,
        properties=properties or None,
    )
