"""The name server's request and response headers (registration, routes, KV config), declared as
:mod:`.header` declares the broker's: the fields are the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from .header import Header, Long

# -- name server --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RegisterBrokerRequestHeader(Header):
    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: Long
    compressed: bool = False
    body_crc32: int = 0  # crc32(body) & 0x7FFFFFFF; 0 = not checked


@dataclass(frozen=True, slots=True)
class RegisterBrokerResponseHeader(Header):
    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(frozen=True, slots=True)
class UnRegisterBrokerRequestHeader(Header):
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@dataclass(frozen=True, slots=True)
class QueryDataVersionRequestHeader(Header):
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@dataclass(frozen=True, slots=True)
class QueryDataVersionResponseHeader(Header):
    changed: bool = False


@dataclass(frozen=True, slots=True)
class GetRouteInfoRequestHeader(Header):
    topic: str
    accept_standard_json_only: bool | None = None


@dataclass(frozen=True, slots=True)
class GetTopicsByClusterRequestHeader(Header):
    cluster: str


@dataclass(frozen=True, slots=True)
class WipeWritePermOfBrokerRequestHeader(Header):
    broker_name: str


@dataclass(frozen=True, slots=True)
class WipeWritePermOfBrokerResponseHeader(Header):
    wipe_topic_count: int = 0


@dataclass(frozen=True, slots=True)
class PutKVConfigRequestHeader(Header):
    namespace: str
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class GetKVConfigRequestHeader(Header):
    namespace: str
    key: str


@dataclass(frozen=True, slots=True)
class GetKVConfigResponseHeader(Header):
    value: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteKVConfigRequestHeader(Header):
    namespace: str
    key: str


@dataclass(frozen=True, slots=True)
class GetKVListByNamespaceRequestHeader(Header):
    namespace: str
