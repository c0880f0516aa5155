"""JSON bodies of the remoting protocol (PROTOCOL.md §3): routes, registrations, heartbeats, stats.

Pure codec: bytes in, values out, no I/O. Python attributes are snake_case; JSON keys are exactly
the Java field names (camelCase, ``clientID`` included). Each class has ``to_json() -> bytes`` and
``from_json(bytes)``; nested values also have ``to_dict()`` / ``from_dict()``.

Invariants:

- **Emit** standard JSON, keys sorted (as fastjson writes them), null fields left out, map keys
  quoted (``{"0":"ip:port"}``), except the maps keyed by :class:`MessageQueue`
  (:class:`TopicStatsTable`, :class:`ConsumeStats`, :class:`ResetOffsetBody`,
  :class:`GetConsumerStatusBody`), written in the raw-object-key form fastjson produces and
  reads back: ``{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{…}}}``.
- **Parse** leniently: orjson first; on failure a small recursive-descent reader that also takes
  the fastjson forms (bare numeric keys ``{0:"ip"}``, object keys, raw control characters in
  strings, single quotes). Unknown fields are ignored; missing ones take Java's defaults.
- Domain values (:class:`MessageQueue`, :class:`DataVersion`, :class:`TopicConfig`, …) are frozen;
  the body containers are plain slotted dataclasses the caller may fill in. :class:`QueueData`
  stays mutable because the client trims a default topic's route in place.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

import orjson

_SORT = orjson.OPT_SORT_KEYS
T = TypeVar("T")


# -- lenient JSON -------------------------------------------------------------------------------


class ObjectKey:
    """A JSON object (or array) used as a map key, as fastjson writes ``Map<MessageQueue, X>``."""

    __slots__ = ("value", "_text")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._text = orjson.dumps(value, option=_SORT)

    def __hash__(self) -> int:
        return hash(self._text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectKey) and other._text == self._text

    def __repr__(self) -> str:
        return f"ObjectKey({self._text.decode()})"


_WS = re.compile(r"[ \t\r\n]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_DQ_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)
_SQ_STRING = re.compile(r"'((?:[^'\\]|\\.)*)'", re.S)
_BARE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


class _LenientReader:
    """Recursive-descent JSON reader for what fastjson writes but strict JSON forbids.

    Only used when orjson refuses a body, so clarity beats speed here.
    """

    __slots__ = ("s", "pos")

    def __init__(self, text: str) -> None:
        self.s = text
        self.pos = 0

    def fail(self, what: str) -> ValueError:
        return ValueError(f"invalid JSON body: {what} at position {self.pos}")

    def ws(self) -> None:
        self.pos = _WS.match(self.s, self.pos).end()  # type: ignore[union-attr]

    def document(self) -> Any:
        self.ws()
        v = self.value()
        self.ws()
        if self.pos != len(self.s):
            raise self.fail("trailing characters")
        return v

    def value(self) -> Any:
        s, p = self.s, self.pos
        if p >= len(s):
            raise self.fail("unexpected end")
        c = s[p]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c in "\"'":
            return self.string()
        m = _NUMBER.match(s, p)
        if m:
            self.pos = m.end()
            t = m.group()
            return float(t) if any(ch in t for ch in ".eE") else int(t)
        m = _BARE.match(s, p)
        if m and m.group() in ("true", "false", "null"):
            self.pos = m.end()
            return {"true": True, "false": False, "null": None}[m.group()]
        raise self.fail(f"unexpected {c!r}")

    def string(self) -> str:
        m = (_DQ_STRING if self.s[self.pos] == '"' else _SQ_STRING).match(self.s, self.pos)
        if not m:
            raise self.fail("unterminated string")
        self.pos = m.end()
        raw = m.group(1)
        if "\\" not in raw:
            return raw
        if self.s[m.start()] == "'":
            raw = raw.replace("\\'", "'").replace('"', '\\"')
        # json.loads(strict=False) decodes the escapes and tolerates raw control characters
        return json.loads(f'"{raw}"', strict=False)

    def key(self) -> Any:
        c = self.s[self.pos] if self.pos < len(self.s) else ""
        if c in "\"'":
            return self.string()
        if c in "{[":  # fastjson's Map<MessageQueue, X>: the key is a whole object
            return ObjectKey(self.value())
        m = _NUMBER.match(self.s, self.pos) or _BARE.match(self.s, self.pos)
        if not m:
            raise self.fail("expected an object key")
        self.pos = m.end()
        return m.group()  # bare numbers and names become their text, as a quoted key would

    def obj(self) -> dict[Any, Any]:
        self.pos += 1
        out: dict[Any, Any] = {}
        while True:
            self.ws()
            if self.s.startswith("}", self.pos):
                self.pos += 1
                return out
            k = self.key()
            self.ws()
            if not self.s.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            self.ws()
            out[k] = self.value()
            self.ws()
            if self.s.startswith(",", self.pos):
                self.pos += 1
            elif not self.s.startswith("}", self.pos):
                raise self.fail("expected ',' or '}'")

    def arr(self) -> list[Any]:
        self.pos += 1
        out: list[Any] = []
        while True:
            self.ws()
            if self.s.startswith("]", self.pos):
                self.pos += 1
                return out
            out.append(self.value())
            self.ws()
            if self.s.startswith(",", self.pos):
                self.pos += 1
            elif not self.s.startswith("]", self.pos):
                raise self.fail("expected ',' or ']'")


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a body: strict JSON fast, fastjson's dialect when that fails.

    >>> loads(b'{"brokerAddrs":{0:"10.0.0.9:10911"}}')
    {'brokerAddrs': {'0': '10.0.0.9:10911'}}
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")
    return _LenientReader(text).document()


def dumps(doc: Any) -> bytes:
    """Standard JSON with sorted keys (fastjson's order); the input must have string keys."""
    return orjson.dumps(doc, option=_SORT)


def _obj(data: bytes | bytearray | memoryview | str) -> dict[str, Any]:
    doc = loads(data)
    if not isinstance(doc, dict):
        raise ValueError(f"invalid JSON body: expected an object, got {type(doc).__name__}")
    return doc


def _int(v: Any, default: int = 0) -> int:
    return default if v is None or v == "" else int(v)


def _bool(v: Any, default: bool = False) -> bool:
    if v is None:
        return default
    return v.lower() == "true" if isinstance(v, str) else bool(v)


def _strs(v: Any) -> list[str]:
    return [str(x) for x in v] if v else []


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


# -- message queues and maps keyed by them -------------------------------------------------------


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """One queue of a topic on one broker. Sorts like Java's: topic, broker name, queue id.

    >>> MessageQueue("T", "broker-a", 0) < MessageQueue("T", "broker-a", 1)
    True
    """

    topic: str
    broker_name: str
    queue_id: int

    def to_dict(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MessageQueue:
        return cls(topic=str(d.get("topic") or ""), broker_name=str(d.get("brokerName") or ""), queue_id=_int(d.get("queueId")))

    def to_json(self) -> bytes:
        return dumps(self.to_dict())

    @classmethod
    def from_json(cls, data: bytes) -> MessageQueue:
        return cls.from_dict(_obj(data))


_MQ_TO_STRING = re.compile(r"MessageQueue \[topic=(.*), brokerName=(.*), queueId=(-?\d+)\]$")


def _mq_key(k: Any) -> MessageQueue:
    """A map key that stands for a MessageQueue: an object, its JSON text, or Java's toString()."""
    if isinstance(k, ObjectKey) and isinstance(k.value, dict):
        return MessageQueue.from_dict(k.value)
    if isinstance(k, str):
        if k.lstrip().startswith("{"):
            return MessageQueue.from_dict(_obj(k))
        m = _MQ_TO_STRING.match(k)
        if m:
            return MessageQueue(m.group(1), m.group(2), int(m.group(3)))
    raise ValueError(f"invalid JSON body: {k!r} is not a message queue key")


def _mq_map_from(v: Any, value: Callable[[Any], T]) -> dict[MessageQueue, T]:
    if not v:
        return {}
    return {_mq_key(k): value(x) for k, x in v.items()}


def _mq_map_json(table: dict[MessageQueue, Any], value: Callable[[Any], Any]) -> bytes:
    """fastjson's form: each key is the queue as a raw JSON object (sorted, for stable output)."""
    items = (dumps(mq.to_dict()) + b":" + dumps(value(v)) for mq, v in sorted(table.items()))
    return b"{" + b",".join(items) + b"}"


# -- topics and registration --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DataVersion:
    """A broker's topic-table version; equal when both timestamp and counter match."""

    timestamp: int = 0
    counter: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"counter": self.counter, "timestamp": self.timestamp}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> DataVersion:
        d = d or {}
        return cls(timestamp=_int(d.get("timestamp")), counter=_int(d.get("counter")))

    def to_json(self) -> bytes:
        return dumps(self.to_dict())

    @classmethod
    def from_json(cls, data: bytes) -> DataVersion:
        return cls.from_dict(_obj(data))


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """A topic on one broker (Java defaults: 16/16 queues, perm 6 = read|write)."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], name: str | None = None) -> TopicConfig:
        return cls(
            topic_name=str(d.get("topicName") or name or ""),
            read_queue_nums=_int(d.get("readQueueNums"), 16),
            write_queue_nums=_int(d.get("writeQueueNums"), 16),
            perm=_int(d.get("perm"), 6),
            topic_filter_type=str(d.get("topicFilterType") or "SINGLE_TAG"),
            topic_sys_flag=_int(d.get("topicSysFlag")),
            order=_bool(d.get("order")),
        )

    def encode_line(self) -> str:
        """Java ``TopicConfig.encode()``: ``name read write perm filterType`` (compressed registration)."""
        return f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} {self.perm} {self.topic_filter_type}"

    @classmethod
    def decode_line(cls, line: str) -> TopicConfig:
        parts = line.split(" ")
        if len(parts) < 5:
            raise ValueError(f"invalid topic config line {line!r}: expected 'name read write perm filterType'")
        sys_flag = int(parts[5]) if len(parts) > 5 and parts[5].lstrip("-").isdigit() else 0
        order = len(parts) > 6 and parts[6].lower() == "true"
        return cls(parts[0], int(parts[1]), int(parts[2]), int(parts[3]), parts[4], sys_flag, order)

    def to_json(self) -> bytes:
        return dumps(self.to_dict())

    @classmethod
    def from_json(cls, data: bytes) -> TopicConfig:
        return cls.from_dict(_obj(data))


@dataclass(slots=True)
class TopicConfigSerializeWrapper:
    """A broker's whole topic table with its version (``topics.json``, GET_ALL_TOPIC_CONFIG)."""

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion | None = field(default_factory=DataVersion)

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({
            "dataVersion": None if self.data_version is None else self.data_version.to_dict(),
            "topicConfigTable": {k: v.to_dict() for k, v in self.topic_config_table.items()},
        })

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> TopicConfigSerializeWrapper:
        d = d or {}
        table = d.get("topicConfigTable") or {}
        dv = d.get("dataVersion")
        return cls(
            topic_config_table={str(k): TopicConfig.from_dict(v, str(k)) for k, v in table.items()},
            data_version=None if dv is None else DataVersion.from_dict(dv),
        )

    def to_json(self) -> bytes:
        return dumps(self.to_dict())

    @classmethod
    def from_json(cls, data: bytes) -> TopicConfigSerializeWrapper:
        return cls.from_dict(_obj(data))


_INT32 = struct.Struct(">i")


@dataclass(slots=True)
class RegisterBrokerBody:
    """REGISTER_BROKER's body: the broker's topic table and its filter servers.

    With the header's ``compressed=true`` (Java ``compressedRegister``) the body is instead::

        zlib( int32 n | DataVersion JSON (n bytes)
              int32 topicCount | { int32 n | TopicConfig.encode() line (n bytes) } * topicCount
              int32 n | filterServerList JSON (n bytes) )

    That form loses ``topicSysFlag`` and ``order``; we read it and always send plain JSON.
    """

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(default_factory=TopicConfigSerializeWrapper)
    filter_server_list: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "filterServerList": list(self.filter_server_list),
            "topicConfigSerializeWrapper": self.topic_config_serialize_wrapper.to_dict(),
        }

    def to_json(self) -> bytes:
        return dumps(self.to_dict())

    @classmethod
    def from_json(cls, data: bytes) -> RegisterBrokerBody:
        d = _obj(data)
        return cls(
            topic_config_serialize_wrapper=TopicConfigSerializeWrapper.from_dict(d.get("topicConfigSerializeWrapper")),
            filter_server_list=_strs(d.get("filterServerList")),
        )

    @classmethod
    def decode(cls, data: bytes, compressed: bool = False) -> RegisterBrokerBody:
        return cls.from_compressed(data) if compressed else cls.from_json(data)

    @classmethod
    def from_compressed(cls, data: bytes) -> RegisterBrokerBody:
        try:
            raw = zlib.decompress(data)
        except zlib.error as e:
            raise ValueError(f"compressed register body does not inflate: {e}") from None
        pos = 0

        def chunk() -> bytes:
            nonlocal pos
            if pos + 4 > len(raw):
                raise ValueError("compressed register body is truncated")
            (n,) = _INT32.unpack_from(raw, pos)
            if n < 0 or pos + 4 + n > len(raw):
                raise ValueError(f"compressed register body: length {n} at {pos} runs past the end")
            pos += 4 + n
            return raw[pos - n : pos]

        version = DataVersion.from_json(chunk())
        if pos + 4 > len(raw):
            raise ValueError("compressed register body is truncated")
        (count,) = _INT32.unpack_from(raw, pos)
        pos += 4
        table: dict[str, TopicConfig] = {}
        for _ in range(count):
            tc = TopicConfig.decode_line(chunk().decode())
            table[tc.topic_name] = tc
        servers = _strs(loads(chunk())) if pos < len(raw) else []
        return cls(TopicConfigSerializeWrapper(table, version), servers)

    def to_compressed(self) -> bytes:
        """The compressed form (for tests and peers that want it)."""
        w = self.topic_config_serialize_wrapper
        parts = []
        for blob in (
            (w.data_version or DataVersion()).to_json(),
            *(tc.encode_line().encode() for tc in w.topic_config_table.values()),
        ):
            parts.append(_INT32.pack(len(blob)) + blob)
        parts.insert(1, _INT32.pack(len(w.topic_config_table)))
        servers = orjson.dumps(list(self.filter_server_list))
        parts.append(_INT32.pack(len(servers)) + servers)
        return zlib.compress(b"".join(parts), 9)


# -- routes -------------------------------------------------------------------------------------


@dataclass(slots=True)
class QueueData:
    """A topic's queues on one broker name (mutable: the client trims default routes in place)."""

    broker_name: str
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 6
    topic_sys_flag: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QueueData:
        return cls(
            broker_name=str(d.get("brokerName") or ""),
            read_queue_nums=_int(d.get("readQueueNums")),
            write_queue_nums=_int(d.get("writeQueueNums")),
            perm=_int(d.get("perm")),
            topic_sys_flag=_int(d.get("topicSysFlag")),
        )


MASTER_ID = 0


@dataclass(slots=True)
class BrokerData:
    """One broker name (a master and its slaves): ``broker_addrs`` maps broker id → ``ip:port``."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def select_broker_addr(self) -> str | None:
        """The master's address, else any slave's (Java ``selectBrokerAddr``)."""
        addr = self.broker_addrs.get(MASTER_ID)
        if addr is None and self.broker_addrs:
            return next(iter(self.broker_addrs.values()))
        return addr

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerAddrs": {str(k): v for k, v in sorted(self.broker_addrs.items())},
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BrokerData:
        addrs = d.get("brokerAddrs") or {}
        return cls(
            cluster=str(d.get("cluster") or ""),
            broker_name=str(d.get("brokerName") or ""),
            broker_addrs={int(k): str(v) for k, v in addrs.items()},
        )


@dataclass(slots=True)
class TopicRouteData:
    """GET_ROUTEINFO_BY_TOPIC's answer. ``order_topic_conf`` (``"brokerName:num;…"``) overrides
    ``queue_datas`` for publishing when set."""

    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)
    order_topic_conf: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({
            "brokerDatas": [b.to_dict() for b in self.broker_datas],
            "filterServerTable": {k: list(v) for k, v in self.filter_server_table.items()},
            "orderTopicConf": self.order_topic_conf,
            "queueDatas": [q.to_dict() for q in self.queue_datas],
        })

    def to_json(self) -> bytes:
        return dumps(self.to_dict())

    @classmethod
    def from_json(cls, data: bytes) -> TopicRouteData:
        d = _obj(data)
        return cls(
            queue_datas=[QueueData.from_dict(q) for q in d.get("queueDatas") or ()],
            broker_datas=[BrokerData.from_dict(b) for b in d.get("brokerDatas") or ()],
            filter_server_table={str(k): _strs(v) for k, v in (d.get("filterServerTable") or {}).items()},
            order_topic_conf=d.get("orderTopicConf"),
        )


@dataclass(slots=True)
class ClusterInfo:
    """GET_BROKER_CLUSTER_INFO: every broker name, and the broker names of each cluster."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return dumps({
            "brokerAddrTable": {k: v.to_dict() for k, v in self.broker_addr_table.items()},
            "clusterAddrTable": {k: sorted(v) for k, v in self.cluster_addr_table.items()},
        })

    @classmethod
    def from_json(cls, data: bytes) -> ClusterInfo:
        d = _obj(data)
        return cls(
            broker_addr_table={str(k): BrokerData.from_dict(v) for k, v in (d.get("brokerAddrTable") or {}).items()},
            cluster_addr_table={str(k): _strs(v) for k, v in (d.get("clusterAddrTable") or {}).items()},
        )


@dataclass(slots=True)
class TopicList:
    """``{"topicList":[…]}`` (GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_TOPICS_BY_CLUSTER)."""

    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None

    def to_json(self) -> bytes:
        return dumps(_drop_none({"brokerAddr": self.broker_addr, "topicList": list(self.topic_list)}))

    @classmethod
    def from_json(cls, data: bytes) -> TopicList:
        d = _obj(data)
        return cls(topic_list=_strs(d.get("topicList")), broker_addr=d.get("brokerAddr"))


@dataclass(slots=True)
class KVTable:
    """``{"table":{…}}``: string → string (order-topic config, broker runtime info)."""

    table: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return dumps({"table": dict(self.table)})

    @classmethod
    def from_json(cls, data: bytes) -> KVTable:
        return cls(table={str(k): str(v) for k, v in (_obj(data).get("table") or {}).items()})


# -- clients ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SubscriptionData:
    """One topic subscription of a consumer group; ``code_set`` holds Java hash codes of the tags."""

    topic: str
    sub_string: str = "*"
    tags_set: tuple[str, ...] = ()
    code_set: tuple[int, ...] = ()
    sub_version: int = 0
    expression_type: str = "TAG"
    class_filter_mode: bool = False

    @classmethod
    def build(cls, topic: str, expression: str | None, sub_version: int, expression_type: str = "TAG") -> SubscriptionData:
        """Java ``FilterAPI.buildSubscriptionData``: ``*`` or tags joined by ``||``.

        >>> SubscriptionData.build("T", "TagA || TagB", 1).code_set
        (2598919, 2598920)
        """
        expr = (expression or "").strip()
        if expression_type != "TAG" or expr in ("", "*"):
            return cls(topic, expr or "*", (), (), sub_version, expression_type)
        from pyrocketmq.remoting.message import tags_code  # lazily: the message codec is a sibling

        tags = tuple(dict.fromkeys(t.strip() for t in expr.split("||") if t.strip()))
        return cls(topic, expr, tags, tuple(tags_code(t) for t in tags), sub_version, expression_type)

    def to_dict(self) -> dict[str, Any]:
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": list(self.code_set),
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": list(self.tags_set),
            "topic": self.topic,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SubscriptionData:
        return cls(
            topic=str(d.get("topic") or ""),
            sub_string=str(d.get("subString") if d.get("subString") is not None else "*"),
            tags_set=tuple(_strs(d.get("tagsSet"))),
            code_set=tuple(int(c) for c in d.get("codeSet") or ()),
            sub_version=_int(d.get("subVersion")),
            expression_type=str(d.get("expressionType") or "TAG"),
            class_filter_mode=_bool(d.get("classFilterMode")),
        )


@dataclass(frozen=True, slots=True)
class ConsumerData:
    """A consumer group as one client runs it (in a heartbeat)."""

    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscription_data_set: tuple[SubscriptionData, ...] = ()
    unit_mode: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": self.consume_from_where,
            "consumeType": self.consume_type,
            "groupName": self.group_name,
            "messageModel": self.message_model,
            "subscriptionDataSet": [s.to_dict() for s in self.subscription_data_set],
            "unitMode": self.unit_mode,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerData:
        return cls(
            group_name=str(d.get("groupName") or ""),
            consume_type=str(d.get("consumeType") or "CONSUME_PASSIVELY"),
            message_model=str(d.get("messageModel") or "CLUSTERING"),
            consume_from_where=str(d.get("consumeFromWhere") or "CONSUME_FROM_LAST_OFFSET"),
            subscription_data_set=tuple(SubscriptionData.from_dict(s) for s in d.get("subscriptionDataSet") or ()),
            unit_mode=_bool(d.get("unitMode")),
        )


@dataclass(frozen=True, slots=True)
class ProducerData:
    group_name: str


@dataclass(slots=True)
class HeartbeatData:
    """HEART_BEAT's body: a client's producer and consumer groups."""

    client_id: str
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)

    def to_json(self) -> bytes:
        return dumps({
            "clientID": self.client_id,
            "consumerDataSet": [c.to_dict() for c in self.consumer_data_set],
            "producerDataSet": [{"groupName": p.group_name} for p in self.producer_data_set],
        })

    @classmethod
    def from_json(cls, data: bytes) -> HeartbeatData:
        d = _obj(data)
        return cls(
            client_id=str(d.get("clientID") or ""),
            producer_data_set=[ProducerData(str(p.get("groupName") or "")) for p in d.get("producerDataSet") or ()],
            consumer_data_set=[ConsumerData.from_dict(c) for c in d.get("consumerDataSet") or ()],
        )


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """Java ``Connection``: one client connected to a broker (admin connection lists)."""

    client_id: str
    client_addr: str
    language: str = "JAVA"
    version: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"clientAddr": self.client_addr, "clientId": self.client_id, "language": self.language, "version": self.version}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClientConnection:
        return cls(str(d.get("clientId") or ""), str(d.get("clientAddr") or ""), str(d.get("language") or "JAVA"), _int(d.get("version")))


@dataclass(slots=True)
class ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST's body: a group's members and what they subscribe to."""

    connection_set: list[ClientConnection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None

    def to_json(self) -> bytes:
        return dumps(_drop_none({
            "connectionSet": [c.to_dict() for c in self.connection_set],
            "consumeFromWhere": self.consume_from_where,
            "consumeType": self.consume_type,
            "messageModel": self.message_model,
            "subscriptionTable": {k: v.to_dict() for k, v in self.subscription_table.items()},
        }))

    @classmethod
    def from_json(cls, data: bytes) -> ConsumerConnection:
        d = _obj(data)
        return cls(
            connection_set=[ClientConnection.from_dict(c) for c in d.get("connectionSet") or ()],
            subscription_table={str(k): SubscriptionData.from_dict(v) for k, v in (d.get("subscriptionTable") or {}).items()},
            consume_type=d.get("consumeType"),
            message_model=d.get("messageModel"),
            consume_from_where=d.get("consumeFromWhere"),
        )


@dataclass(slots=True)
class ProducerConnection:
    connection_set: list[ClientConnection] = field(default_factory=list)

    def to_json(self) -> bytes:
        return dumps({"connectionSet": [c.to_dict() for c in self.connection_set]})

    @classmethod
    def from_json(cls, data: bytes) -> ProducerConnection:
        return cls([ClientConnection.from_dict(c) for c in _obj(data).get("connectionSet") or ()])


@dataclass(slots=True)
class ConsumerIdList:
    """GET_CONSUMER_LIST_BY_GROUP's body (Java ``GetConsumerListByGroupResponseBody``)."""

    consumer_id_list: list[str] = field(default_factory=list)

    def to_json(self) -> bytes:
        return dumps({"consumerIdList": list(self.consumer_id_list)})

    @classmethod
    def from_json(cls, data: bytes) -> ConsumerIdList:
        return cls(_strs(_obj(data).get("consumerIdList")))


def _mqs(v: Any) -> list[MessageQueue]:
    return sorted({MessageQueue.from_dict(m) for m in v or ()})


@dataclass(slots=True)
class LockBatchRequestBody:
    """LOCK_BATCH_MQ's body; UNLOCK_BATCH_MQ's has the same shape."""

    consumer_group: str
    client_id: str
    mq_set: list[MessageQueue] = field(default_factory=list)
    only_this_broker: bool = False

    def to_json(self) -> bytes:
        return dumps({
            "clientId": self.client_id,
            "consumerGroup": self.consumer_group,
            "mqSet": [m.to_dict() for m in self.mq_set],
            "onlyThisBroker": self.only_this_broker,
        })

    @classmethod
    def from_json(cls, data: bytes):  # -> Self
        d = _obj(data)
        return cls(str(d.get("consumerGroup") or ""), str(d.get("clientId") or ""), _mqs(d.get("mqSet")), _bool(d.get("onlyThisBroker")))


class UnlockBatchRequestBody(LockBatchRequestBody):
    __slots__ = ()


@dataclass(slots=True)
class LockBatchResponseBody:
    """``{"lockOKMQSet":[mq…]}``: the queues the client now holds."""

    lock_ok_mq_set: list[MessageQueue] = field(default_factory=list)

    def to_json(self) -> bytes:
        return dumps({"lockOKMQSet": [m.to_dict() for m in self.lock_ok_mq_set]})

    @classmethod
    def from_json(cls, data: bytes) -> LockBatchResponseBody:
        return cls(_mqs(_obj(data).get("lockOKMQSet")))


# -- subscription groups ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig:
    """A consumer group's broker-side config, with Java's defaults."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    _JAVA = (
        ("group_name", "groupName"),
        ("consume_enable", "consumeEnable"),
        ("consume_from_min_enable", "consumeFromMinEnable"),
        ("consume_broadcast_enable", "consumeBroadcastEnable"),
        ("retry_queue_nums", "retryQueueNums"),
        ("retry_max_times", "retryMaxTimes"),
        ("broker_id", "brokerId"),
        ("which_broker_when_consume_slowly", "whichBrokerWhenConsumeSlowly"),
        ("notify_consumer_ids_changed_enable", "notifyConsumerIdsChangedEnable"),
    )

    def to_dict(self) -> dict[str, Any]:
        return {j: getattr(self, a) for a, j in self._JAVA}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SubscriptionGroupConfig:
        kw: dict[str, Any] = {}
        for attr, java in cls._JAVA[1:]:
            v = d.get(java)
            if v is not None:
                kw[attr] = _bool(v) if isinstance(_GROUP_DEFAULTS[attr], bool) else _int(v)
        return cls(group_name=str(d.get("groupName") or ""), **kw)

    def to_json(self) -> bytes:
        return dumps(self.to_dict())

    @classmethod
    def from_json(cls, data: bytes) -> SubscriptionGroupConfig:
        return cls.from_dict(_obj(data))


_GROUP_DEFAULTS = {f.name: f.default for f in fields(SubscriptionGroupConfig)}


@dataclass(slots=True)
class SubscriptionGroupWrapper:
    """``subscriptionGroup.json`` and GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion | None = field(default_factory=DataVersion)

    def to_json(self) -> bytes:
        return dumps(_drop_none({
            "dataVersion": None if self.data_version is None else self.data_version.to_dict(),
            "subscriptionGroupTable": {k: v.to_dict() for k, v in self.subscription_group_table.items()},
        }))

    @classmethod
    def from_json(cls, data: bytes) -> SubscriptionGroupWrapper:
        d = _obj(data)
        table = d.get("subscriptionGroupTable") or {}
        dv = d.get("dataVersion")
        return cls(
            {str(k): SubscriptionGroupConfig.from_dict({"groupName": k, **v}) for k, v in table.items()},
            None if dv is None else DataVersion.from_dict(dv),
        )


# -- statistics and offsets (maps keyed by MessageQueue) -----------------------------------------


@dataclass(frozen=True, slots=True)
class TopicOffset:
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"lastUpdateTimestamp": self.last_update_timestamp, "maxOffset": self.max_offset, "minOffset": self.min_offset}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TopicOffset:
        return cls(_int(d.get("minOffset")), _int(d.get("maxOffset")), _int(d.get("lastUpdateTimestamp")))


@dataclass(slots=True)
class TopicStatsTable:
    """GET_TOPIC_STATS_INFO's body: min/max offset per queue."""

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return b'{"offsetTable":' + _mq_map_json(self.offset_table, TopicOffset.to_dict) + b"}"

    @classmethod
    def from_json(cls, data: bytes) -> TopicStatsTable:
        return cls(_mq_map_from(_obj(data).get("offsetTable"), TopicOffset.from_dict))


@dataclass(frozen=True, slots=True)
class OffsetWrapper:
    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"brokerOffset": self.broker_offset, "consumerOffset": self.consumer_offset, "lastTimestamp": self.last_timestamp}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> OffsetWrapper:
        return cls(_int(d.get("brokerOffset")), _int(d.get("consumerOffset")), _int(d.get("lastTimestamp")))


@dataclass(slots=True)
class ConsumeStats:
    """GET_CONSUME_STATS's body: broker and consumer offsets per queue, and the group's TPS."""

    consume_tps: float = 0.0
    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)

    def total_diff(self) -> int:
        """Messages not yet consumed, summed over the queues (Java ``computeTotalDiff``)."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())

    def to_json(self) -> bytes:
        tps = orjson.dumps(float(self.consume_tps))
        return b'{"consumeTps":' + tps + b',"offsetTable":' + _mq_map_json(self.offset_table, OffsetWrapper.to_dict) + b"}"

    @classmethod
    def from_json(cls, data: bytes) -> ConsumeStats:
        d = _obj(data)
        return cls(float(d.get("consumeTps") or 0.0), _mq_map_from(d.get("offsetTable"), OffsetWrapper.from_dict))


@dataclass(slots=True)
class ResetOffsetBody:
    """RESET_CONSUMER_CLIENT_OFFSET's body and INVOKE_BROKER_TO_RESET_OFFSET's answer."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return b'{"offsetTable":' + _mq_map_json(self.offset_table, int) + b"}"

    @classmethod
    def from_json(cls, data: bytes) -> ResetOffsetBody:
        return cls(_mq_map_from(_obj(data).get("offsetTable"), int))


@dataclass(slots=True)
class GetConsumerStatusBody:
    """GET_CONSUMER_STATUS_FROM_CLIENT's answer: offsets per queue, per client."""

    message_queue_table: dict[MessageQueue, int] = field(default_factory=dict)
    consumer_table: dict[str, dict[MessageQueue, int]] = field(default_factory=dict)

    def to_json(self) -> bytes:
        clients = b",".join(dumps(k) + b":" + _mq_map_json(v, int) for k, v in sorted(self.consumer_table.items()))
        return b'{"consumerTable":{' + clients + b'},"messageQueueTable":' + _mq_map_json(self.message_queue_table, int) + b"}"

    @classmethod
    def from_json(cls, data: bytes) -> GetConsumerStatusBody:
        d = _obj(data)
        clients = d.get("consumerTable") or {}
        return cls(
            _mq_map_from(d.get("messageQueueTable"), int),
            {str(k): _mq_map_from(v, int) for k, v in clients.items()},
        )

