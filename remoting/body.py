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

import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from .client_bodies import (
    CheckClientRequestBody as CheckClientRequestBody,
    ClientConnection as ClientConnection,
    ConsumerConnection as ConsumerConnection,
    ConsumerData as ConsumerData,
    ConsumerIdList as ConsumerIdList,
    ConsumeStats as ConsumeStats,
    GetConsumerStatusBody as GetConsumerStatusBody,
    HeartbeatData as HeartbeatData,
    LockBatchRequestBody as LockBatchRequestBody,
    LockBatchResponseBody as LockBatchResponseBody,
    OffsetWrapper as OffsetWrapper,
    ProducerConnection as ProducerConnection,
    ProducerData as ProducerData,
    ResetOffsetBody as ResetOffsetBody,
    SubscriptionData as SubscriptionData,
    SubscriptionGroupConfig as SubscriptionGroupConfig,
    SubscriptionGroupWrapper as SubscriptionGroupWrapper,
    TopicOffset as TopicOffset,
    TopicStatsTable as TopicStatsTable,
    UnlockBatchRequestBody as UnlockBatchRequestBody,
)
from .inflate import InflateError, inflate
from .json_body import (
    DataVersion as DataVersion,
    JsonBody as JsonBody,
    MessageQueue as MessageQueue,
    _version,
    jname as jname,
)
from .lenient_json import _strs, loads

# -- topics and registration --------------------------------------------------------------------


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
    attributes: tuple[tuple[str, str], ...] = ()
    """RocketMQ 5 topic attributes (``message.type``), sorted pairs; in JSON an object, left out when
    empty."""

    @property
    def message_type(self) -> str | None:
        return dict(self.attributes).get("message.type")

    def to_dict(self) -> dict[str, Any]:
        d = JsonBody.to_dict(self)
        if self.attributes:
            d["attributes"] = dict(self.attributes)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TopicConfig:
        raw = d.get("attributes")
        attrs = tuple(sorted((str(k), str(v)) for k, v in raw.items())) if isinstance(raw, dict) else ()
        return cls(attributes=attrs, **cls._scalar_kwargs(d))

    def encode_line(self) -> str:
        """Java ``TopicConfig.encode()``: ``name read write perm filterType`` (compressed registration)."""
        return (f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} {self.perm} "
                f"{self.topic_filter_type}")

    @classmethod
    def decode_line(cls, line: str) -> TopicConfig:
        parts = line.split(" ")
        if len(parts) < 5:
            raise ValueError(
                f"invalid topic config line {line!r}: expected 'name read write perm filterType'"
            )
        sys_flag = int(parts[5]) if len(parts) > 5 and parts[5].lstrip("-").isdigit() else 0
        order = len(parts) > 6 and parts[6].lower() == "true"
        return cls(parts[0], int(parts[1]), int(parts[2]), int(parts[3]), parts[4], sys_flag, order)


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
MAX_INFLATED_REGISTER_BODY = 32 * 1024 * 1024
"""The most a compressed REGISTER_BROKER body may inflate to: twice a whole frame (16 MiB), some
300 000 topics' lines (a plain JSON body carries less than half of that)."""


@dataclass(slots=True)
class RegisterBrokerBody(JsonBody):
    """REGISTER_BROKER's body: the broker's topic table and its filter servers.

    With the header's ``compressed=true`` (Java ``compressedRegister``) the body is instead::

        zlib( int32 n | DataVersion JSON (n bytes)
              int32 topicCount | { int32 n | TopicConfig.encode() line (n bytes) } * topicCount
              int32 n | filterServerList JSON (n bytes) )

    That form loses ``topicSysFlag`` and ``order``; we read it and always send plain JSON. It is
    inflated to at most ``max_inflated`` bytes (:data:`MAX_INFLATED_REGISTER_BODY` by default):
    more is refused, not inflated.
    """

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
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
    def decode(
        cls, data: bytes, compressed: bool = False, max_inflated: int | None = None
    ) -> RegisterBrokerBody:
        return cls.from_compressed(data, max_inflated) if compressed else cls.from_json(data)

    @classmethod
    def from_compressed(cls, data: bytes, max_inflated: int | None = None) -> RegisterBrokerBody:
        limit = MAX_INFLATED_REGISTER_BODY if max_inflated is None else max_inflated
        try:
            raw = inflate(data, limit)
        except InflateError as e:
            raise ValueError(f"compressed register body {e}") from None
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

