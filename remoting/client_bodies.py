"""JSON bodies of client traffic: heartbeats and subscriptions, connections, queue locks,
subscription groups, and the statistics and offset tables keyed by :class:`MessageQueue`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

import orjson

from .json_body import (
    DataVersion,
    JsonBody,
    MessageQueue,
    _mq_map_from,
    _mq_map_json,
    _mqs,
    _version,
    jname,
)
from .lenient_json import _items, _strs, dumps

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
    def build(
        cls, topic: str, expression: str | None, sub_version: int, expression_type: str = "TAG"
    ) -> SubscriptionData:
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
            code_set=tuple(int(c) for c in _items(d.get("codeSet"))),
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
        return {
            **JsonBody.to_dict(self),
            "subscriptionDataSet": [s.to_dict() for s in self.subscription_data_set],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerData:
        subs = tuple(SubscriptionData.from_dict(s) for s in _items(d.get("subscriptionDataSet")))
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
            producer_data_set=[ProducerData.from_dict(p) for p in _items(d.get("producerDataSet"))],
            consumer_data_set=[ConsumerData.from_dict(c) for c in _items(d.get("consumerDataSet"))],
            **cls._scalar_kwargs(d),
        )


@dataclass(frozen=True, slots=True)
class CheckClientRequestBody(JsonBody):
    """CHECK_CLIENT_CONFIG's body: a consumer asks whether the broker can serve one subscription
    (Java consumers send it at start for every SQL92 subscription)."""

    client_id: str = ""
    group: str = ""
    subscription_data: SubscriptionData | None = None

    def to_dict(self) -> dict[str, Any]:
        sub = self.subscription_data
        return {**JsonBody.to_dict(self), "subscriptionData": None if sub is None else sub.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckClientRequestBody:
        raw = d.get("subscriptionData")
        sub = SubscriptionData.from_dict(raw) if isinstance(raw, dict) else None
        return cls(subscription_data=sub, **cls._scalar_kwargs(d))


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
    consume_message_orderly: bool = False
    """RocketMQ 5's flag of a group that consumes orderly; in JSON only when true (4.x has no such key)."""

    def to_dict(self) -> dict[str, Any]:
        d = JsonBody.to_dict(self)
        if not self.consume_message_orderly:
            d.pop("consumeMessageOrderly", None)
        return d


@dataclass(slots=True)
class SubscriptionGroupWrapper(JsonBody):
    """``subscriptionGroup.json`` and GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion | None = field(default_factory=DataVersion)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "subscriptionGroupTable": {k: v.to_dict() for k, v in self.subscription_group_table.items()}
        }
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
        return cls(
            float(d.get("consumeTps") or 0.0), _mq_map_from(d.get("offsetTable"), OffsetWrapper.from_dict)
        )


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
        clients = b",".join(
            dumps(k) + b":" + _mq_map_json(v, int) for k, v in sorted(self.consumer_table.items())
        )
        queues = _mq_map_json(self.message_queue_table, int)
        return b'{"consumerTable":{' + clients + b'},"messageQueueTable":' + queues + b"}"

    @classmethod
    def from_dict(cls, d: dict[Any, Any]) -> GetConsumerStatusBody:
        clients = d.get("consumerTable") or {}
        return cls(
            _mq_map_from(d.get("messageQueueTable"), int),
            {str(k): _mq_map_from(v, int) for k, v in clients.items()},
        )
