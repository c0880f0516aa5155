"""JSON bodies of the remoting protocol (PROTOCOL.md §3): routes, registrations, heartbeats, stats.

Pure codec: bytes in, values out, no I/O. Python attributes are snake_case; JSON keys are exactly
the Java field names (camelCase, ``clientID`` included). Every class derives from :class:`JsonBody`:
``to_json() -> bytes`` / ``from_json(bytes)`` over ``to_dict()`` / ``from_dict()``; scalar fields
map themselves (from the dataclass fields), nested ones are spelled out per class.

>>> route = TopicRouteData.from_json(b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.9:10911"},'
...     b'"brokerName":"broker-a","cluster":"C"}],"queueDatas":[{"brokerName":"broker-a",'
...     b'"perm":6,"readQueueNums":4,"writeQueueNums":4}]}')
>>> route.broker_datas[0].select_broker_addr(), route.queue_datas[0].write_queue_nums
('10.0.0.9:10911', 4)

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

import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Self, TypeVar

import orjson

from .lenient_json import ObjectKey, _obj, _strs, dumps, loads

T = TypeVar("T")


# -- the shared shape ---------------------------------------------------------------------------

_SCALAR = re.compile(r"^(int|str|bool|float)\b")


def jname(json_name: str, **kw: Any) -> Any:
    """A field whose JSON key is not the camelCase of its attribute (``clientID``, ``lockOKMQSet``)."""
    return field(metadata={"json": json_name}, **kw)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _convert(kind: str, v: Any) -> Any:
    if kind == "int":
        return int(v)
    if kind == "bool":
        return v.lower() == "true" if isinstance(v, str) else bool(v)
    if kind == "float":
        return float(v)
    return str(v)


class JsonBody:
    """Base of every body: ``to_json``/``from_json`` over ``to_dict``/``from_dict``.

    Scalar fields (``int``, ``str``, ``bool``, ``float``, optionally ``| None``) are mapped by
    themselves: JSON key = camelCase of the attribute (or :func:`jname`), ``None`` left out,
    a missing key takes the field's default (Java's). Classes with nested values extend
    ``to_dict``/``from_dict`` for those fields.
    """

    __slots__ = ()

    @classmethod
    def _scalars(cls) -> tuple[tuple[str, str, str], ...]:
        spec = cls.__dict__.get("_scalar_spec")
        if spec is None:
            spec = tuple(
                (f.name, f.metadata.get("json") or _camel(f.name), m.group(1))
                for f in fields(cls)  # type: ignore[arg-type]  # every JsonBody subclass is a dataclass
                if (m := _SCALAR.match(str(f.type)))
            )
            type.__setattr__(cls, "_scalar_spec", spec)
        return spec

    def to_dict(self) -> dict[str, Any]:
        return {key: v for attr, key, _ in self._scalars() if (v := getattr(self, attr)) is not None}

    @classmethod
    def _scalar_kwargs(cls, d: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for attr, key, kind in cls._scalars():
            v = d.get(key)
            if v is not None and not (v == "" and kind != "str"):
                out[attr] = _convert(kind, v)
        return out

    @classmethod
    def from_dict(cls: type[B], d: dict[str, Any]) -> B:
        return cls(**cls._scalar_kwargs(d))

    def to_json(self) -> bytes:
        return dumps(self.to_dict())

    @classmethod
    def from_json(cls: type[B], data: bytes | bytearray | memoryview | str) -> B:
        """Parse a body (strict JSON or fastjson's dialect); unknown keys are ignored."""
        return cls.from_dict(_obj(data))


B = TypeVar("B", bound=JsonBody)


# -- message queues and maps keyed by them -------------------------------------------------------


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue(JsonBody):
    """One queue of a topic on one broker. Sorts like Java's: topic, broker name, queue id.

    >>> MessageQueue("T", "broker-a", 0) < MessageQueue("T", "broker-a", 1)
    True
    """

    topic: str = ""
    broker_name: str = ""
    queue_id: int = 0


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
    return {_mq_key(k): value(x) for k, x in v.items()} if v else {}


def _mq_map_json(table: dict[MessageQueue, Any], value: Callable[[Any], Any]) -> bytes:
    """fastjson's form: each key is the queue as a raw JSON object (sorted, for stable output)."""
    items = (dumps(mq.to_dict()) + b":" + dumps(value(v)) for mq, v in sorted(table.items()))
    return b"{" + b",".join(items) + b"}"


def _mqs(v: Any) -> list[MessageQueue]:
    return sorted({MessageQueue.from_dict(m) for m in v or ()})


# -- topics and registration --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DataVersion(JsonBody):
    """A broker's topic-table version; equal when both timestamp and counter match."""

    timestamp: int = 0
    counter: int = 0


@dataclass(frozen=True, slots=True)
class TopicConfig(JsonBody):
    """A topic on one broker (Java defaults: 16/16 queues, perm 6 = read|write)."""

    topic_name: str = ""
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

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


def _version(d: Any) -> DataVersion | None:
    return None if d is None else DataVersion.from_dict(d)


@dataclass(slots=True)
class TopicConfigSerializeWrapper(JsonBody):
    """A broker's whole topic table with its version (``topics.json``, GET_ALL_TOPIC_CONFIG)."""

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion | None = field(default_factory=DataVersion)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"topicConfigTable": {k: v.to_dict() for k, v in self.topic_config_table.items()}}
        if self.data_version is not None:
            d["dataVersion"] = self.data_version.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> TopicConfigSerializeWrapper:
        d = d or {}
        table = d.get("topicConfigTable") or {}
        return cls(
            {str(k): TopicConfig.from_dict({"topicName": k, **v}) for k, v in table.items()},
            _version(d.get("dataVersion")),
        )


_INT32 = struct.Struct(">i")


@dataclass(slots=True)
class RegisterBrokerBody(JsonBody):
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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RegisterBrokerBody:
        return cls(
            TopicConfigSerializeWrapper.from_dict(d.get("topicConfigSerializeWrapper")),
            _strs(d.get("filterServerList")),
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

        def int32() -> int:
            nonlocal pos
            if pos + 4 > len(raw):
                raise ValueError("compressed register body is truncated")
            pos += 4
            value: int = _INT32.unpack_from(raw, pos - 4)[0]
            return value

        def chunk() -> bytes:
            nonlocal pos
            n = int32()
            if n < 0 or pos + n > len(raw):
                raise ValueError(f"compressed register body: length {n} at {pos - 4} runs past the end")
            pos += n
            return raw[pos - n : pos]

        version = DataVersion.from_json(chunk())
        table: dict[str, TopicConfig] = {}
        for _ in range(int32()):
            tc = TopicConfig.decode_line(chunk().decode())
            table[tc.topic_name] = tc
        servers = _strs(loads(chunk())) if pos < len(raw) else []
        return cls(TopicConfigSerializeWrapper(table, version), servers)

    def to_compressed(self) -> bytes:
        """The compressed form (for tests, and peers that want it)."""
        w = self.topic_config_serialize_wrapper

        def chunk(blob: bytes) -> bytes:
            return _INT32.pack(len(blob)) + blob

        parts = [chunk((w.data_version or DataVersion()).to_json()), _INT32.pack(len(w.topic_config_table))]
        parts += [chunk(tc.encode_line().encode()) for tc in w.topic_config_table.values()]
        parts.append(chunk(orjson.dumps(list(self.filter_server_list))))
        return zlib.compress(b"".join(parts), 9)


# -- routes -------------------------------------------------------------------------------------

MASTER_ID = 0


@dataclass(slots=True)
class QueueData(JsonBody):
    """A topic's queues on one broker name (mutable: the client trims default routes in place)."""

    broker_name: str = ""
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 6
    topic_sys_flag: int = 0


@dataclass(slots=True)
class BrokerData(JsonBody):
    """One broker name (a master and its slaves): ``broker_addrs`` maps broker id → ``ip:port``."""

    cluster: str = ""
    broker_name: str = ""
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def select_broker_addr(self) -> str | None:
        """The master's address, else any slave's (Java ``selectBrokerAddr``)."""
        addr = self.broker_addrs.get(MASTER_ID)
        if addr is None and self.broker_addrs:
            return next(iter(self.broker_addrs.values()))
        return addr

    def to_dict(self) -> dict[str, Any]:
        d = JsonBody.to_dict(self)
        d["brokerAddrs"] = {str(k): v for k, v in sorted(self.broker_addrs.items())}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BrokerData:
        addrs = {int(k): str(v) for k, v in (d.get("brokerAddrs") or {}).items()}
        return cls(broker_addrs=addrs, **cls._scalar_kwargs(d))


@dataclass(slots=True)
class TopicRouteData(JsonBody):
    """GET_ROUTEINFO_BY_TOPIC's answer. ``order_topic_conf`` (``"brokerName:num;…"``) overrides
    ``queue_datas`` for publishing when set."""

    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)
    order_topic_conf: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = JsonBody.to_dict(self)
        d["brokerDatas"] = [b.to_dict() for b in self.broker_datas]
        d["filterServerTable"] = {k: list(v) for k, v in self.filter_server_table.items()}
        d["queueDatas"] = [q.to_dict() for q in self.queue_datas]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TopicRouteData:
        return cls(
            queue_datas=[QueueData.from_dict(q) for q in d.get("queueDatas") or ()],
            broker_datas=[BrokerData.from_dict(b) for b in d.get("brokerDatas") or ()],
            filter_server_table={str(k): _strs(v) for k, v in (d.get("filterServerTable") or {}).items()},
            **cls._scalar_kwargs(d),
        )


@dataclass(slots=True)
class ClusterInfo(JsonBody):
    """GET_BROKER_CLUSTER_INFO: every broker name, and the broker names of each cluster."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerAddrTable": {k: v.to_dict() for k, v in self.broker_addr_table.items()},
            "clusterAddrTable": {k: sorted(v) for k, v in self.cluster_addr_table.items()},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClusterInfo:
        return cls(
            {str(k): BrokerData.from_dict(v) for k, v in (d.get("brokerAddrTable") or {}).items()},
            {str(k): _strs(v) for k, v in (d.get("clusterAddrTable") or {}).items()},
        )


@dataclass(slots=True)
class TopicList(JsonBody):
    """``{"topicList":[…]}`` (GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_TOPICS_BY_CLUSTER)."""

    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**JsonBody.to_dict(self), "topicList": list(self.topic_list)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TopicList:
        return cls(_strs(d.get("topicList")), **cls._scalar_kwargs(d))


@dataclass(slots=True)
class KVTable(JsonBody):
    """``{"table":{…}}``: string → string (order-topic config, broker runtime info)."""

    table: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"table": dict(self.table)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KVTable:
        return cls({str(k): str(v) for k, v in (d.get("table") or {}).items()})


# -- clients ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SubscriptionData(JsonBody):
    """One topic subscription of a consumer group; ``code_set`` holds Java hash codes of the tags."""

    topic: str = ""
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
        from pyrocketmq.remoting.message import tags_code  # lazily: a sibling codec, not needed otherwise

        tags = tuple(dict.fromkeys(t.strip() for t in expr.split("||") if t.strip()))
        return cls(topic, expr, tags, tuple(tags_code(t) for t in tags), sub_version, expression_type)

    def to_dict(self) -> dict[str, Any]:
        return {**JsonBody.to_dict(self), "codeSet": list(self.code_set), "tagsSet": list(self.tags_set)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SubscriptionData:
        return cls(
            tags_set=tuple(_strs(d.get("tagsSet"))),
            code_set=tuple(int(c) for c in d.get("codeSet") or ()),
            **cls._scalar_kwargs(d),
        )


@dataclass(frozen=True, slots=True)
class ConsumerData(JsonBody):
    """A consumer group as one client runs it (in a heartbeat)."""

    group_name: str = ""
    consume_type: str = "CONSUME_PASSIVELY"  # or CONSUME_ACTIVELY (pull)
    message_model: str = "CLUSTERING"  # or BROADCASTING
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscription_data_set: tuple[SubscriptionData, ...] = ()
    unit_mode: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {**JsonBody.to_dict(self), "subscriptionDataSet": [s.to_dict() for s in self.subscription_data_set]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerData:
        subs = tuple(SubscriptionData.from_dict(s) for s in d.get("subscriptionDataSet") or ())
        return cls(subscription_data_set=subs, **cls._scalar_kwargs(d))


@dataclass(frozen=True, slots=True)
class ProducerData(JsonBody):
    group_name: str = ""


@dataclass(slots=True)
class HeartbeatData(JsonBody):
    """HEART_BEAT's body: a client's producer and consumer groups."""

    client_id: str = jname("clientID", default="")
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            **JsonBody.to_dict(self),
            "consumerDataSet": [c.to_dict() for c in self.consumer_data_set],
            "producerDataSet": [p.to_dict() for p in self.producer_data_set],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HeartbeatData:
        return cls(
            producer_data_set=[ProducerData.from_dict(p) for p in d.get("producerDataSet") or ()],
            consumer_data_set=[ConsumerData.from_dict(c) for c in d.get("consumerDataSet") or ()],
            **cls._scalar_kwargs(d),
        )


@dataclass(frozen=True, slots=True)
class ClientConnection(JsonBody):
    """Java ``Connection``: one client connected to a broker (admin connection lists)."""

    client_id: str = ""
    client_addr: str = ""
    language: str = "JAVA"
    version: int = 0


@dataclass(slots=True)
class ConsumerConnection(JsonBody):
    """GET_CONSUMER_CONNECTION_LIST's body: a group's members and what they subscribe to."""

    connection_set: list[ClientConnection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **JsonBody.to_dict(self),
            "connectionSet": [c.to_dict() for c in self.connection_set],
            "subscriptionTable": {k: v.to_dict() for k, v in self.subscription_table.items()},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerConnection:
        return cls(
            [ClientConnection.from_dict(c) for c in d.get("connectionSet") or ()],
            {str(k): SubscriptionData.from_dict(v) for k, v in (d.get("subscriptionTable") or {}).items()},
            **cls._scalar_kwargs(d),
        )


@dataclass(slots=True)
class ProducerConnection(JsonBody):
    connection_set: list[ClientConnection] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"connectionSet": [c.to_dict() for c in self.connection_set]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProducerConnection:
        return cls([ClientConnection.from_dict(c) for c in d.get("connectionSet") or ()])


@dataclass(slots=True)
class ConsumerIdList(JsonBody):
    """GET_CONSUMER_LIST_BY_GROUP's body (Java ``GetConsumerListByGroupResponseBody``)."""

    consumer_id_list: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"consumerIdList": list(self.consumer_id_list)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerIdList:
        return cls(_strs(d.get("consumerIdList")))


@dataclass(slots=True)
class LockBatchRequestBody(JsonBody):
    """LOCK_BATCH_MQ's body; UNLOCK_BATCH_MQ's has the same shape."""

    consumer_group: str = ""
    client_id: str = ""
    mq_set: list[MessageQueue] = field(default_factory=list)
    only_this_broker: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {**JsonBody.to_dict(self), "mqSet": [m.to_dict() for m in self.mq_set]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Self:
        return cls(mq_set=_mqs(d.get("mqSet")), **cls._scalar_kwargs(d))


class UnlockBatchRequestBody(LockBatchRequestBody):
    __slots__ = ()


@dataclass(slots=True)
class LockBatchResponseBody(JsonBody):
    """``{"lockOKMQSet":[mq…]}``: the queues the client now holds."""

    lock_ok_mq_set: list[MessageQueue] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"lockOKMQSet": [m.to_dict() for m in self.lock_ok_mq_set]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LockBatchResponseBody:
        return cls(_mqs(d.get("lockOKMQSet")))


# -- subscription groups ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig(JsonBody):
    """A consumer group's broker-side config, with Java's defaults."""

    group_name: str = ""
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True


@dataclass(slots=True)
class SubscriptionGroupWrapper(JsonBody):
    """``subscriptionGroup.json`` and GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion | None = field(default_factory=DataVersion)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"subscriptionGroupTable": {k: v.to_dict() for k, v in self.subscription_group_table.items()}}
        if self.data_version is not None:
            d["dataVersion"] = self.data_version.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SubscriptionGroupWrapper:
        table = d.get("subscriptionGroupTable") or {}
        return cls(
            {str(k): SubscriptionGroupConfig.from_dict({"groupName": k, **v}) for k, v in table.items()},
            _version(d.get("dataVersion")),
        )


# -- statistics and offsets (maps keyed by MessageQueue, written in fastjson's form) -------------


@dataclass(frozen=True, slots=True)
class TopicOffset(JsonBody):
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0


@dataclass(slots=True)
class TopicStatsTable(JsonBody):
    """GET_TOPIC_STATS_INFO's body: min/max offset per queue."""

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return b'{"offsetTable":' + _mq_map_json(self.offset_table, TopicOffset.to_dict) + b"}"

    @classmethod
    def from_dict(cls, d: dict[Any, Any]) -> TopicStatsTable:
        return cls(_mq_map_from(d.get("offsetTable"), TopicOffset.from_dict))


@dataclass(frozen=True, slots=True)
class OffsetWrapper(JsonBody):
    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0


@dataclass(slots=True)
class ConsumeStats(JsonBody):
    """GET_CONSUME_STATS's body: broker and consumer offsets per queue, and the group's TPS."""

    consume_tps: float = 0.0
    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)

    def total_diff(self) -> int:
        """Messages not yet consumed, summed over the queues (Java ``computeTotalDiff``)."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())

    def to_json(self) -> bytes:
        table = _mq_map_json(self.offset_table, OffsetWrapper.to_dict)
        return b'{"consumeTps":' + orjson.dumps(float(self.consume_tps)) + b',"offsetTable":' + table + b"}"

    @classmethod
    def from_dict(cls, d: dict[Any, Any]) -> ConsumeStats:
        return cls(float(d.get("consumeTps") or 0.0), _mq_map_from(d.get("offsetTable"), OffsetWrapper.from_dict))


@dataclass(slots=True)
class ResetOffsetBody(JsonBody):
    """RESET_CONSUMER_CLIENT_OFFSET's body and INVOKE_BROKER_TO_RESET_OFFSET's answer."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return b'{"offsetTable":' + _mq_map_json(self.offset_table, int) + b"}"

    @classmethod
    def from_dict(cls, d: dict[Any, Any]) -> ResetOffsetBody:
        return cls(_mq_map_from(d.get("offsetTable"), int))


@dataclass(slots=True)
class GetConsumerStatusBody(JsonBody):
    """GET_CONSUMER_STATUS_FROM_CLIENT's answer: offsets per queue, per client."""

    message_queue_table: dict[MessageQueue, int] = field(default_factory=dict)
    consumer_table: dict[str, dict[MessageQueue, int]] = field(default_factory=dict)

    def to_json(self) -> bytes:
        clients = b",".join(dumps(k) + b":" + _mq_map_json(v, int) for k, v in sorted(self.consumer_table.items()))
        queues = _mq_map_json(self.message_queue_table, int)
        return b'{"consumerTable":{' + clients + b'},"messageQueueTable":' + queues + b"}"

    @classmethod
    def from_dict(cls, d: dict[Any, Any]) -> GetConsumerStatusBody:
        clients = d.get("consumerTable") or {}
        return cls(
            _mq_map_from(d.get("messageQueueTable"), int),
            {str(k): _mq_map_from(v, int) for k, v in clients.items()},
        )
