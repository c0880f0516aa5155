"""The stored message: one record format for the commitlog, pull bodies and query bodies.

Status: done (encode/decode/patch, ids, batch, tag hash); the client and broker can rely on it.
Checked byte for byte against the vectors RocketMQ 4.9.8's own classes wrote (tests/unit/golden/).

A record (all big-endian; PROTOCOL.md §4)::

    pos  size  field
      0     4  TOTALSIZE           whole record, these 4 bytes included
      4     4  MAGICCODE           0xDAA320A7 (0xCBD43194 = blank padding at a segment's end)
      8     4  BODYCRC             crc32(body) & 0x7FFFFFFF over the body as stored
     12     4  QUEUEID
     16     4  FLAG
     20     8  QUEUEOFFSET         logical index in the consume queue      } patched by the store
     28     8  PHYSICALOFFSET      absolute commitlog offset of the record } after the encode
     36     4  SYSFLAG             bits: see SysFlag
     40     8  BORNTIMESTAMP       ms
     48   8|20 BORNHOST            IPv4 (4) or IPv6 (16, SYSFLAG 0x10) + int32 port
     56|68  8  STORETIMESTAMP      ms                                        } patched too
      …   8|20 STOREHOST           IPv6 if SYSFLAG 0x20
      …     4  RECONSUMETIMES
      …     8  PREPARED TRANSACTION OFFSET
      …   4+n  BODYLEN, BODY
      …   1+n  TOPICLEN, TOPIC     topic ≤ 127 bytes (the length byte is signed in Java)
      …   2+n  PROPLEN, PROPERTIES ≤ 32767 bytes: ``k\\x01v`` pairs joined by ``\\x02``

Invariants: TOTALSIZE equals the sum of the parts (decoding checks it); the first 48 bytes have a
fixed layout, so the store patches offsets without parsing; the body is stored as sent (compressed
bodies stay compressed — :func:`uncompressed_body` inflates them on demand).

Ids are uppercase hex: the *offset* id is ``storeIP + int32 port + int64 commitlog offset``
(32 chars for IPv4), the *unique* id (``UNIQ_KEY``) is ``clientIP + int16 pid + int32 random +
int32 ms since the start of the month + int16 counter``.

The body of a batch send (SEND_BATCH_MESSAGE) is another format: :mod:`.batch`.

This module is pure: no I/O, no asyncio.
"""

from __future__ import annotations

import socket
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from .msg_id import (
    UniqIdGenerator as UniqIdGenerator,
    create_offset_msg_id as create_offset_msg_id,
    decode_offset_msg_id as decode_offset_msg_id,
    decode_uniq_id as decode_uniq_id,
    pack_host as pack_host,
    unpack_host as unpack_host,
)

MAGIC = 0xDAA320A7
"""MAGICCODE of a message record (Java ``-626843481``)."""
BLANK_MAGIC = 0xCBD43194
"""MAGICCODE of the blank record that pads the end of a commitlog segment (Java ``-875286124``)."""

MAX_TOPIC_BYTES = 127
MAX_PROPERTIES_BYTES = 32767

# Fixed positions inside a record (relative to its start).
POS_TOTAL_SIZE = 0
POS_MAGIC = 4
POS_BODY_CRC = 8
POS_QUEUE_ID = 12
POS_FLAG = 16
POS_QUEUE_OFFSET = 20
POS_PHYSICAL_OFFSET = 28
POS_SYS_FLAG = 36
POS_BORN_TIMESTAMP = 40
POS_BORN_HOST = 48
POS_STORE_TIMESTAMP_V4 = 56
"""STORETIMESTAMP when the born host is IPv4; 68 when it is IPv6 (see :func:`store_timestamp_pos`)."""
POS_STORE_TIMESTAMP_V6 = 68
HEAD_SIZE = 48
"""Bytes before BORNHOST; always the same layout."""


class SysFlag:
    """SYSFLAG bits (plain ints: they are tested on the hot path)."""

    COMPRESSED = 0x1
    MULTI_TAGS = 0x2
    TRANSACTION_NOT_TYPE = 0x0
    TRANSACTION_PREPARED = 0x4
    TRANSACTION_COMMIT = 0x8
    TRANSACTION_ROLLBACK = 0xC
    TRANSACTION_MASK = 0xC
    BORNHOST_V6 = 0x10
    STOREHOST_V6 = 0x20
    COMPRESSION_LZ4 = 0x100
    COMPRESSION_ZSTD = 0x200
    COMPRESSION_ZLIB = 0x300
    COMPRESSION_MASK = 0x700


def transaction_type(sys_flag: int) -> int:
    return sys_flag & SysFlag.TRANSACTION_MASK


def with_transaction_type(sys_flag: int, tran_type: int) -> int:
    return (sys_flag & ~SysFlag.TRANSACTION_MASK) | tran_type


class Prop:
    """Property keys (Java ``MessageConst.PROPERTY_*``)."""

    KEYS = "KEYS"
    TAGS = "TAGS"
    WAIT = "WAIT"
    DELAY = "DELAY"
    RETRY_TOPIC = "RETRY_TOPIC"
    REAL_TOPIC = "REAL_TOPIC"
    REAL_QID = "REAL_QID"
    TRAN_MSG = "TRAN_MSG"
    PGROUP = "PGROUP"
    MIN_OFFSET = "MIN_OFFSET"
    MAX_OFFSET = "MAX_OFFSET"
    BUYER_ID = "BUYER_ID"
    ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
    TRANSFER_FLAG = "TRANSFER_FLAG"
    CORRECTION_FLAG = "CORRECTION_FLAG"
    MQ2_FLAG = "MQ2_FLAG"
    RECONSUME_TIME = "RECONSUME_TIME"
    MSG_REGION = "MSG_REGION"
    TRACE_ON = "TRACE_ON"
    UNIQ_KEY = "UNIQ_KEY"
    MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
    CONSUME_START_TIME = "CONSUME_START_TIME"
    TRAN_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
    TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    INSTANCE_ID = "INSTANCE_ID"
    CORRELATION_ID = "CORRELATION_ID"
    REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
    TTL = "TTL"
    ARRIVE_TIME = "ARRIVE_TIME"
    PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
    CLUSTER = "CLUSTER"
    MSG_TYPE = "MSG_TYPE"
    SHARDING_KEY = "__SHARDINGKEY"
    TRANSACTION_ID = "__transactionId__"
    START_DELIVER_TIME = "__STARTDELIVERTIME"
    TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
    TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
    TIMER_DELAY_MS = "TIMER_DELAY_MS"
    TIMER_OUT_MS = "TIMER_OUT_MS"
    TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
    TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
    TIMER_ROLL_TIMES = "TIMER_ROLL_TIMES"
    TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"
    """A recall marker's ``<topic>+<message id>``: the timer message it takes back."""


KEY_SEPARATOR = " "
"""Separator of the keys inside ``KEYS``."""

_NV = "\x01"
_PS = "\x02"

_HEAD = struct.Struct(">iIiiiqqiq")  # TOTALSIZE … BORNTIMESTAMP (48 bytes)
_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_H = struct.Struct(">h")
_IQ = struct.Struct(">iq")
_HOST4 = struct.Struct(">4si")
_HOST6 = struct.Struct(">16si")


class MessageDecodeError(ValueError):
    """The bytes are not a well-formed message record (or batch body)."""


# -- properties ---------------------------------------------------------------------------------


def encode_properties(props: dict[str, str]) -> bytes:
    """``k\x01v`` pairs joined by ``\x02`` in the dict's order, as Java 4.9.8 writes them (no
    trailing ``\x02``; None values are skipped).

    >>> encode_properties({"TAGS": "a", "KEYS": "k"})
    b'TAGS\x01a\x02KEYS\x01k'
    """
    if not props:
        return b""
    return _PS.join([f"{k}{_NV}{v}" for k, v in props.items() if v is not None]).encode()


def set_raw_properties(raw: bytes | bytearray | memoryview, updates: dict[str, str]) -> bytes:
    """Encoded properties with ``updates`` set (replacing those keys), everything else kept as the
    bytes hold it — the broker appends properties (CLUSTER) to the bytes it never decodes."""
    drop = {k.encode() for k in updates}
    kept = [p for p in bytes(raw).split(b"\x02") if p and p.split(b"\x01", 1)[0] not in drop]
    return b"\x02".join([*kept, encode_properties(updates)])


def decode_properties(raw: bytes | bytearray | memoryview) -> dict[str, str]:
    """Inverse of :func:`encode_properties`; a trailing ``\\x02`` and empty keys or values are ignored.

    A value may itself contain ``\\x01``: the pair splits at the first one (as Java does).
    """
    out: dict[str, str] = {}
    if not raw:
        return out
    for item in bytes(raw).decode("utf-8", "replace").split(_PS):
        k, sep, v = item.partition(_NV)
        if sep and k and v:
            out[k] = v
    return out


def strip_property(raw: bytes, key: bytes) -> bytes:
    """``raw`` encoded properties without the pair for ``key`` (bytes in, bytes out: no decoding)."""
    needle = key + b"\x01"
    if raw.startswith(needle):
        start = 0
    else:
        i = raw.find(b"\x02" + needle)
        if i < 0:
            return raw
        start = i + 1
    end = raw.find(b"\x02", start)
    if end < 0:  # the last pair: drop it with the separator before it
        return raw[: max(start - 1, 0)]
    return raw[:start] + raw[end + 1 :]


# -- hosts and ids ------------------------------------------------------------------------------




# -- tag hash -----------------------------------------------------------------------------------


def tags_code(tags: str | None) -> int:
    """Java ``String.hashCode()`` of the tags (signed 32-bit, over UTF-16 code units); 0 for none.

    The consume queue stores it sign-extended to 64 bits, which a Python int already is. Every
    stored message needs it and a topic has few distinct tags: results are memoised (bounded).

    >>> tags_code("TagA")
    2598919
    """
    if not tags:
        return 0
    code = _TAGS_CODES.get(tags)
    if code is None:
        if len(_TAGS_CODES) >= _TAGS_CODES_MAX:
            _TAGS_CODES.clear()
        code = _TAGS_CODES[tags] = _java_hash(tags)
    return code


_TAGS_CODES: dict[str, int] = {}
_TAGS_CODES_MAX = 4096


def _java_hash(tags: str) -> int:
    h = 0
    if tags.isascii():
        for c in tags.encode():
            h = (31 * h + c) & 0xFFFFFFFF
    else:
        u = tags.encode(
            "utf-16-be", "surrogatepass"
        )  # non-BMP characters become two surrogate units, as in Java
        for i in range(0, len(u), 2):
            h = (31 * h + ((u[i] << 8) | u[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


# -- the record ---------------------------------------------------------------------------------


def store_timestamp_pos(sys_flag: int) -> int:
    return POS_STORE_TIMESTAMP_V6 if sys_flag & SysFlag.BORNHOST_V6 else POS_STORE_TIMESTAMP_V4


def body_crc32(body: bytes | bytearray | memoryview) -> int:
    return zlib.crc32(body) & 0x7FFFFFFF


def record_size(sys_flag: int, body_len: int, topic_len: int, properties_len: int) -> int:
    """TOTALSIZE of a record with these part lengths (Java ``calMsgLength``)."""
    born = 20 if sys_flag & SysFlag.BORNHOST_V6 else 8
    store = 20 if sys_flag & SysFlag.STOREHOST_V6 else 8
    return HEAD_SIZE + born + 8 + store + 4 + 8 + 4 + body_len + 1 + topic_len + 2 + properties_len


class RecordSource(Protocol):
    """What a record takes from its message besides the topic, properties, flags and hosts (the
    broker's message to store and a decoded :class:`MessageExt` both have these)."""

    @property
    def body(self) -> bytes | bytearray | memoryview: ...
    @property
    def flag(self) -> int: ...
    @property
    def queue_id(self) -> int: ...
    @property
    def born_timestamp(self) -> int: ...
    @property
    def reconsume_times(self) -> int: ...
    @property
    def prepared_transaction_offset(self) -> int: ...


def encode_record(msg: RecordSource, topic: bytes, properties: bytes, sys_flag: int, born_host: bytes,
                  store_host: bytes, store_timestamp: int, body_crc: int | None = None) -> bytearray:
    """The record of ``msg`` with QUEUEOFFSET and PHYSICALOFFSET zero (the store patches them in).

    ``born_host``/``store_host`` are packed (:func:`pack_host`); their lengths must agree with the
    BORNHOST_V6 / STOREHOST_V6 bits of ``sys_flag``. Raises ``ValueError`` on an over-long topic or
    properties.
    """
    body = msg.body
    tlen = len(topic)
    if tlen > MAX_TOPIC_BYTES:
        raise ValueError(f"topic is {tlen} bytes; at most {MAX_TOPIC_BYTES} fit in a record")
    plen = len(properties)
    if plen > MAX_PROPERTIES_BYTES:
        raise ValueError(f"properties are {plen} bytes; at most {MAX_PROPERTIES_BYTES} fit in a record")
    if len(born_host) != (20 if sys_flag & SysFlag.BORNHOST_V6 else 8):
        raise ValueError(f"born host of {len(born_host)} bytes does not match sys_flag {sys_flag:#x}")
    if len(store_host) != (20 if sys_flag & SysFlag.STOREHOST_V6 else 8):
        raise ValueError(f"store host of {len(store_host)} bytes does not match sys_flag {sys_flag:#x}")
    blen = len(body)
    size = HEAD_SIZE + len(born_host) + 8 + len(store_host) + 16 + blen + 3 + tlen + plen
    crc = (zlib.crc32(body) & 0x7FFFFFFF) if body_crc is None else body_crc
    # One join = one allocation and one copy of the body (the body is the bulk of the bytes).
    return bytearray(b"").join(
        (
            _HEAD.pack(size, MAGIC, crc, msg.queue_id, msg.flag, 0, 0, sys_flag, msg.born_timestamp),
            born_host,
            _Q.pack(store_timestamp),
            store_host,
            _IQ.pack(msg.reconsume_times, msg.prepared_transaction_offset),
            _I.pack(blen),
            body,
            bytes((tlen,)),
            topic,
            _H.pack(plen),
            properties,
        )
    )


def patch_record(
    buf: bytearray | memoryview,
    pos: int,
    queue_offset: int,
    physical_offset: int,
    store_timestamp: int | None = None,
) -> None:
    """Write QUEUEOFFSET, PHYSICALOFFSET (and STORETIMESTAMP if given) of the record at ``pos``."""
    _Q.pack_into(buf, pos + POS_QUEUE_OFFSET, queue_offset)
    _Q.pack_into(buf, pos + POS_PHYSICAL_OFFSET, physical_offset)
    if store_timestamp is not None:
        (sys_flag,) = _I.unpack_from(buf, pos + POS_SYS_FLAG)
        _Q.pack_into(buf, pos + store_timestamp_pos(sys_flag), store_timestamp)


@dataclass(slots=True)
class MessageExt:
    """A decoded record. ``born_host``/``store_host`` are ``(ip, port)``."""

    topic: str = ""
    body: bytes = b""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    queue_id: int = 0
    queue_offset: int = 0
    commitlog_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[str, int] = ("0.0.0.0", 0)
    store_timestamp: int = 0
    store_host: tuple[str, int] = ("0.0.0.0", 0)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    body_crc: int | None = None
    store_size: int = 0

    @property
    def tags(self) -> str | None:
        return self.properties.get(Prop.TAGS)

    @property
    def keys(self) -> list[str]:
        k = self.properties.get(Prop.KEYS)
        return [x for x in k.split(KEY_SEPARATOR) if x] if k else []

    @property
    def offset_msg_id(self) -> str:
        return create_offset_msg_id(pack_host(*self.store_host), self.commitlog_offset)

    @property
    def msg_id(self) -> str:
        """What clients show as the id: ``UNIQ_KEY`` when the producer set one, else the offset id."""
        return self.properties.get(Prop.UNIQ_KEY) or self.offset_msg_id


def encode_message(msg: MessageExt) -> bytearray:
    """A whole record from a :class:`MessageExt` (offsets included); the body is written as is.

    ``sys_flag``'s host bits are derived from the hosts. ``body_crc`` None means compute it.
    """
    born = pack_host(*msg.born_host)
    store = pack_host(*msg.store_host)
    sys_flag = msg.sys_flag & ~(SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6)
    if len(born) == 20:
        sys_flag |= SysFlag.BORNHOST_V6
    if len(store) == 20:
        sys_flag |= SysFlag.STOREHOST_V6
    buf = encode_record(msg, msg.topic.encode(), encode_properties(msg.properties), sys_flag, born, store,
                        msg.store_timestamp, msg.body_crc)
    patch_record(buf, 0, msg.queue_offset, msg.commitlog_offset)
    return buf


def _host_at(buf: bytes | bytearray | memoryview, pos: int, v6: bool) -> tuple[str, int]:
    if v6:
        a, port = _HOST6.unpack_from(buf, pos)
        return socket.inet_ntop(socket.AF_INET6, a), port
    a, port = _HOST4.unpack_from(buf, pos)
    return socket.inet_ntoa(a), port


def decode_message(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, read_body: bool = True
) -> tuple[MessageExt, int]:
    """Decode the record at ``pos``; returns it and the position just past it.

    With ``read_body=False`` the body is left as ``b""`` (its CRC is still there). A compressed body
    is returned as stored. Raises :class:`MessageDecodeError` on a blank, torn or inconsistent record.
    """
    n = len(buf)
    if n - pos < HEAD_SIZE:
        raise MessageDecodeError(f"{n - pos} bytes left at {pos}: shorter than a record header")
    size, magic, crc, qid, flag, qoff, phys, sys_flag, born_ts = _HEAD.unpack_from(buf, pos)
    if magic != MAGIC:
        raise MessageDecodeError(f"bad magic {magic:#010x} at {pos}")
    end = pos + size
    if size < HEAD_SIZE or end > n:
        raise MessageDecodeError(f"record size {size} at {pos} runs past the buffer ({n - pos} bytes left)")
    try:
        p = pos + HEAD_SIZE
        born_v6 = bool(sys_flag & SysFlag.BORNHOST_V6)
        born_host = _host_at(buf, p, born_v6)
        p += 20 if born_v6 else 8
        (store_ts,) = _Q.unpack_from(buf, p)
        p += 8
        store_v6 = bool(sys_flag & SysFlag.STOREHOST_V6)
        store_host = _host_at(buf, p, store_v6)
        p += 20 if store_v6 else 8
        reconsume, prepared = _IQ.unpack_from(buf, p)
        p += 12
        (blen,) = _I.unpack_from(buf, p)
        p += 4
        if blen < 0 or p + blen > end:
            raise MessageDecodeError(f"body length {blen} runs past the record at {pos}")
        body = bytes(buf[p : p + blen]) if read_body and blen else b""
        p += blen
        tlen = buf[p]
        p += 1
        topic = bytes(buf[p : p + tlen]).decode("utf-8", "replace")
        p += tlen
        (plen,) = _H.unpack_from(buf, p)
        p += 2
        if plen < 0 or p + plen > end:
            raise MessageDecodeError(f"properties length {plen} runs past the record at {pos}")
        props = decode_properties(buf[p : p + plen]) if plen else {}
        p += plen
    except (struct.error, IndexError) as e:
        raise MessageDecodeError(f"record at {pos} is torn: {e}") from None
    if p != end:
        raise MessageDecodeError(f"record at {pos}: TOTALSIZE {size} but its fields take {p - pos}")
    msg = MessageExt(
        topic=topic,
        body=body,
        flag=flag,
        properties=props,
        queue_id=qid,
        queue_offset=qoff,
        commitlog_offset=phys,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=born_host,
        store_timestamp=store_ts,
        store_host=store_host,
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
        body_crc=crc,
        store_size=size,
    )
    return msg, end


def record_properties(rec: bytes | bytearray | memoryview) -> dict[str, str]:
    """The properties of one whole stored record, reading nothing else (the broker's SQL92 filter);
    MessageDecodeError on a record too short for the fields it announces."""
    try:
        (sys_flag,) = _I.unpack_from(rec, 36)
        p = HEAD_SIZE + (20 if sys_flag & SysFlag.BORNHOST_V6 else 8) + 8
        p += (20 if sys_flag & SysFlag.STOREHOST_V6 else 8) + 12
        (blen,) = _I.unpack_from(rec, p)
        p += 4 + blen
        p += 1 + rec[p]
        (plen,) = _H.unpack_from(rec, p)
        p += 2
    except (struct.error, IndexError) as e:
        raise MessageDecodeError(f"record is torn: {e}") from None
    if blen < 0 or plen < 0 or p + plen > len(rec):
        raise MessageDecodeError("record's properties run past its end")
    return decode_properties(rec[p : p + plen]) if plen else {}


def iter_messages(buf: bytes | bytearray | memoryview, *, read_body: bool = True) -> Iterator[MessageExt]:
    """Every record of a concatenation (a pull or query body); raises on a malformed one."""
    pos = 0
    n = len(buf)
    while pos < n:
        msg, pos = decode_message(buf, pos, read_body=read_body)
        yield msg


def decode_messages(buf: bytes | bytearray | memoryview, *, read_body: bool = True) -> list[MessageExt]:
    return list(iter_messages(buf, read_body=read_body))


def uncompressed_body(msg: MessageExt) -> bytes:
    """The body, inflated when SYSFLAG says it is compressed (zlib only: what Java 4.x clients use)."""
    if not msg.sys_flag & SysFlag.COMPRESSED:
        return msg.body
    ctype = msg.sys_flag & SysFlag.COMPRESSION_MASK
    if ctype not in (0, SysFlag.COMPRESSION_ZLIB):
        raise MessageDecodeError(f"compression type {ctype >> 8} (LZ4/ZSTD) is not supported")
    return zlib.decompress(msg.body)
