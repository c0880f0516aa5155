"""The put path's per-message work (a batch's, and a single message's record), compiled when it can
be: ``_native`` (``_native.c``, built at install) when present, else the pure-Python functions below,
which write the same bytes — they are the reference the tests hold the compiled code to.
``PYROCKETMQ_PURE_PYTHON=1`` picks them even when the compiled module is there (to compare, or to
rule it out).

Each takes the store's record of the send (a :class:`~.values.MessageInner`), not its fields one by one.
``encode_one`` is the record of one message (a single send), ``send_properties`` the properties it is
stored with, ``put_record`` the record and consume-queue unit of a plain single send written in place;
``encode_batch`` turns a batch send (its body a SEND_BATCH_MESSAGE body) into the records of all its
messages (offsets left zero) and, per message, ``(record size, tags code, properties)``; ``patch_offsets``
numbers the records once the commitlog position is known; ``offset_msg_ids`` makes their offset message ids.
"""

from __future__ import annotations

from typing import NamedTuple

from pyrocketmq.remoting.batch import iter_batch_raw
from pyrocketmq.remoting.compiled import load_compiled
from pyrocketmq.remoting.message import (
    MAGIC,
    MAX_PROPERTIES_BYTES,
    Prop,
    decode_properties,
    encode_record,
    patch_record,
    strip_property,
    tags_code,
)
from pyrocketmq.remoting.msg_id import create_offset_msg_id

from .values import MessageInner

Meta = tuple[int, int, dict[str, str]]
"""(record size, tags code, properties) of one message of a batch."""

NATIVE = load_compiled(f"{__package__}._native", "batch sends and the store's put path")


class _Item(NamedTuple):
    """One message of a batch as :func:`~pyrocketmq.remoting.message.encode_record` reads it."""

    body: bytes | bytearray | memoryview
    flag: int
    queue_id: int
    born_timestamp: int
    reconsume_times: int
    prepared_transaction_offset: int


def py_encode_batch(
    batch: MessageInner, sys_flag: int, store_ts: int, max_body: int
) -> tuple[bytearray, list[Meta]]:
    """Pure-Python :func:`encode_batch`. ValueError for a malformed batch or an over-long body,
    OverflowError for over-long properties."""
    block = bytearray()
    metas: list[Meta] = []
    topic = batch.topic.encode()
    batch_props = batch.properties_bytes or b""
    for body, flag, item_props in iter_batch_raw(batch.body):
        if len(body) > max_body:
            raise ValueError(f"a message body of {len(body)} bytes is over maxMessageSize {max_body}")
        raw = bytes(item_props)
        if raw and not raw.endswith(b"\x02"):
            raw += b"\x02"
        if len(raw) + len(batch_props) > MAX_PROPERTIES_BYTES:
            raise OverflowError(
                f"properties are {len(raw) + len(batch_props)} bytes; at most {MAX_PROPERTIES_BYTES} "
                "fit in a record"
            )
        item = _Item(body, flag, batch.queue_id, batch.born_timestamp, batch.reconsume_times, 0)
        rec = encode_record(
            item, topic, raw + batch_props, sys_flag, batch.born_host, batch.store_host, store_ts
        )
        props = decode_properties(raw)
        block += rec
        metas.append((len(rec), tags_code(props.get(Prop.TAGS)), props))
    if not metas:
        raise ValueError("empty batch")
    return block, metas


def py_patch_offsets(block: bytearray, queue_offset: int, phys: int, sizes: list[int]) -> None:
    pos = 0
    for i, size in enumerate(sizes):
        patch_record(block, pos, queue_offset + i, phys + pos)
        pos += size


def py_offset_msg_ids(store_host: bytes, phys: int, sizes: list[int]) -> str:
    ids = []
    for size in sizes:
        ids.append(create_offset_msg_id(store_host, phys))
        phys += size
    return ",".join(ids)


def encode_batch(
    batch: MessageInner, sys_flag: int, store_ts: int, max_body: int
) -> tuple[bytearray, list[Meta]]:
    """The records of a batch send stored at ``store_ts`` with ``sys_flag`` (offsets zero), and its
    messages' metas: ``batch`` is the send's record, its ``body`` the SEND_BATCH_MESSAGE body and its
    ``properties_bytes`` the batch's own properties (appended to each message's)."""
    if NATIVE is None:
        return py_encode_batch(batch, sys_flag, store_ts, max_body)
    result: tuple[bytearray, list[Meta]] = NATIVE.encode_batch(batch, sys_flag, store_ts, max_body, MAGIC)
    return result


def encode_one(msg: MessageInner, topic: bytes, properties: bytes, sys_flag: int, store_host: bytes,
               store_ts: int) -> bytearray:
    """:func:`~pyrocketmq.remoting.message.encode_record` of ``msg`` (born at its own host), compiled when it
    can be (the same bytes, the same ValueErrors)."""
    if NATIVE is None:
        return encode_record(msg, topic, properties, sys_flag, msg.born_host, store_host, store_ts)
    record: bytearray = NATIVE.encode_record(
        msg, topic, properties, sys_flag, msg.born_host, store_host, store_ts, MAGIC
    )
    return record


def put_record(segment: memoryview, position: int, segment_offset: int, units: memoryview, unit_position: int,
               msg: MessageInner, queue_offset: int, store_ts: int, max_size: int) -> tuple[int, str] | None:
    """The record of the single send ``msg`` written at ``position`` of the commitlog segment ``segment``
    (at commitlog offset ``segment_offset``), numbered ``queue_offset``, and its consume-queue unit at
    ``unit_position`` of ``units``, in one compiled call: ``(record size, offset message id)``. None, with
    nothing written, when it is not such a plain put (no room left, a field that does not fit) and always
    without the compiled module: the store's general path, which writes the same bytes, does it then."""
    if NATIVE is None:
        return None
    done: tuple[int, str] | None = NATIVE.put_record(
        segment, position, segment_offset, units, unit_position, msg, queue_offset, store_ts, MAGIC, max_size
    )
    return done


def patch_offsets(block: bytearray, queue_offset: int, phys: int, sizes: list[int]) -> None:
    if NATIVE is None:
        py_patch_offsets(block, queue_offset, phys, sizes)
    else:
        NATIVE.patch_offsets(block, queue_offset, phys)


def offset_msg_ids(store_host: bytes, phys: int, sizes: list[int]) -> str:
    if NATIVE is None:
        return py_offset_msg_ids(store_host, phys, sizes)
    ids: str = NATIVE.offset_msg_ids(store_host, phys, sizes)
    return ids



def py_send_properties(
    text: str | None, cluster_prop: bytes, drop_delay: bool
) -> tuple[bytes, bytes, dict[str, str], bool]:
    """Pure-Python :func:`send_properties`."""
    raw = (text or "").encode()
    wait = b"WAIT\x01false" not in raw
    # Like Java 4.9: WAIT only steers the answer, so it is not stored (9 bytes per message).
    raw = strip_property(raw, b"WAIT")
    if drop_delay:
        raw = strip_property(raw, b"DELAY")
    if raw and not raw.endswith(b"\x02"):
        raw += b"\x02"
    return raw, raw + cluster_prop, decode_properties(raw), wait


def send_properties(
    text: str | None, cluster_prop: bytes, drop_delay: bool
) -> tuple[bytes, bytes, dict[str, str], bool]:
    """A single send's properties as the producer encoded them (``text``, the header's ``properties``)
    made into what the store keeps: ``(raw, props_bytes, properties, wait)``. ``raw`` is them without
    ``WAIT`` (and without ``DELAY`` when ``drop_delay``: a retry turned dead letter), ending in the pair
    separator when not empty; ``props_bytes`` is ``raw`` + ``cluster_prop`` (what the record holds);
    ``properties`` is ``raw`` decoded; ``wait`` is False when the producer asked not to wait for the
    flush (``WAIT=false``). UnicodeEncodeError for a text that is not valid Unicode (lone surrogates)."""
    if NATIVE is None:
        return py_send_properties(text, cluster_prop, drop_delay)
    result: tuple[bytes, bytes, dict[str, str], bool] = NATIVE.send_properties(text, cluster_prop, drop_delay)
    return result
