"""The put path's per-message work (a batch's, and a single message's record), compiled when it can
be: ``_native`` (``_native.c``, built at install) when present, else the pure-Python functions below,
which write the same bytes — they are the reference the tests hold the compiled code to.
``PYROCKETMQ_PURE_PYTHON=1`` picks them even when the compiled module is there (to compare, or to
rule it out).

``encode_one`` is the record of one message (a single send), ``send_properties`` the properties it is
stored with, ``put_record`` the record and consume-queue unit of a plain single send written in place;
``encode_batch`` turns a SEND_BATCH_MESSAGE body into the records of all its messages (offsets left
zero) and, per message, ``(record size, tags code, properties)``; ``patch_offsets`` numbers the
records once the commitlog position is known; ``offset_msg_ids`` makes their offset message ids.
"""

from __future__ import annotations

from pyrocketmq.remoting.compiled import load_compiled
from pyrocketmq.remoting.message import (
    MAGIC,
    MAX_PROPERTIES_BYTES,
    Prop,
    decode_properties,
    encode_record,
    iter_batch_raw,
    patch_record,
    strip_property,
    tags_code,
)
from pyrocketmq.remoting.msg_id import create_offset_msg_id

Meta = tuple[int, int, dict[str, str]]
"""(record size, tags code, properties) of one message of a batch."""

NATIVE = load_compiled(f"{__package__}._native", "batch sends and the store's put path")


def py_encode_batch(data: bytes | bytearray | memoryview, topic: bytes, batch_props: bytes, queue_id: int,
                    sys_flag: int, born_ts: int, born_host: bytes, store_ts: int, store_host: bytes,
                    reconsume_times: int, max_body: int) -> tuple[bytearray, list[Meta]]:
    """Pure-Python :func:`encode_batch`. ValueError for a malformed batch or an over-long body,
    OverflowError for over-long properties."""
    block = bytearray()
    metas: list[Meta] = []
    for body, flag, item_props in iter_batch_raw(data):
        if len(body) > max_body:
            raise ValueError(f"a message body of {len(body)} bytes is over maxMessageSize {max_body}")
        raw = bytes(item_props)
        if raw and not raw.endswith(b"\x02"):
            raw += b"\x02"
        if len(raw) + len(batch_props) > MAX_PROPERTIES_BYTES:
            raise OverflowError(f"properties are {len(raw) + len(batch_props)} bytes; at most {MAX_PROPERTIES_BYTES} "
                                "fit in a record")
        rec = encode_record(topic=topic, body=body, flag=flag, properties=raw + batch_props, queue_id=queue_id,
                            sys_flag=sys_flag, born_timestamp=born_ts, born_host=born_host, store_timestamp=store_ts,
                            store_host=store_host, reconsume_times=reconsume_times, prepared_transaction_offset=0)
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


def encode_batch(data: bytes | bytearray | memoryview, topic: bytes, batch_props: bytes, queue_id: int,
                 sys_flag: int, born_ts: int, born_host: bytes, store_ts: int, store_host: bytes,
                 reconsume_times: int, max_body: int) -> tuple[bytearray, list[Meta]]:
    if NATIVE is None:
        return py_encode_batch(data, topic, batch_props, queue_id, sys_flag, born_ts, born_host, store_ts,
                               store_host, reconsume_times, max_body)
    result: tuple[bytearray, list[Meta]] = NATIVE.encode_batch(
        data, topic, batch_props, queue_id, sys_flag, born_ts, born_host, store_ts, store_host, reconsume_times,
        max_body, MAGIC)
    return result


def encode_one(*, topic: bytes, body: bytes | bytearray | memoryview, flag: int, properties: bytes, queue_id: int,
               sys_flag: int, born_timestamp: int, born_host: bytes, store_timestamp: int, store_host: bytes,
               reconsume_times: int, prepared_transaction_offset: int) -> bytearray:
    """:func:`~pyrocketmq.remoting.message.encode_record`, compiled when it can be (the same bytes, the same
    ValueErrors)."""
    if NATIVE is None:
        return encode_record(topic=topic, body=body, flag=flag, properties=properties, queue_id=queue_id,
                             sys_flag=sys_flag, born_timestamp=born_timestamp, born_host=born_host,
                             store_timestamp=store_timestamp, store_host=store_host, reconsume_times=reconsume_times,
                             prepared_transaction_offset=prepared_transaction_offset)
    record: bytearray = NATIVE.encode_record(topic, body, flag, properties, queue_id, sys_flag, born_timestamp,
                                             born_host, store_timestamp, store_host, reconsume_times,
                                             prepared_transaction_offset, MAGIC)
    return record


def put_record(segment: memoryview, position: int, segment_offset: int, units: memoryview, unit_position: int,
               topic: bytes, body: bytes | bytearray | memoryview, flag: int, properties: bytes, queue_id: int,
               sys_flag: int, born_timestamp: int, born_host: bytes, store_timestamp: int, store_host: bytes,
               reconsume_times: int, queue_offset: int, tags_code: int, max_size: int) -> tuple[int, str] | None:
    """A single send's record written at ``position`` of the commitlog segment ``segment`` (at commitlog
    offset ``segment_offset``), numbered, and its consume-queue unit at ``unit_position`` of ``units``, in
    one compiled call: ``(record size, offset message id)``. None, with nothing written, when it is not such
    a plain put (no room left, a field that does not fit) and always without the compiled module: the
    store's general path, which writes the same bytes, does it then."""
    if NATIVE is None:
        return None
    done: tuple[int, str] | None = NATIVE.put_record(
        segment, position, segment_offset, units, unit_position, topic, body, flag, properties, queue_id, sys_flag,
        born_timestamp, born_host, store_timestamp, store_host, reconsume_times, queue_offset, tags_code, MAGIC,
        max_size)
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



def py_send_properties(text: str | None, cluster_prop: bytes, drop_delay: bool) -> tuple[bytes, bytes, dict[str, str], bool]:
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


def send_properties(text: str | None, cluster_prop: bytes, drop_delay: bool) -> tuple[bytes, bytes, dict[str, str], bool]:
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
