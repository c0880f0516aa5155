"""The shape every remoting JSON body shares (:class:`JsonBody`), and the values all of them use:
:class:`MessageQueue` (also as a fastjson object key) and :class:`DataVersion`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from .lenient_json import ObjectKey, _obj, dumps

T = TypeVar("T")


# -- the shared shape ---------------------------------------------------------------------------

_SCALAR = re.compile(r"^(int|str|bool|float)\b")


def jname(json_name: str, **kw: Any) -> Any:
    """A field whose JSON key is not the camelCase of its attribute (``clientID``, ``lockOKMQSet``)."""
    return field(metadata={"json": json_name}, **kw)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _convert(kind: str, v: Any) -> Any:
    if kind == "int":
        n = int(v)
        if not _LONG_MIN <= n <= _LONG_MAX:  # no Java number field holds it; never let it reach a config file
            raise ValueError(f"{str(v)[:40]} is beyond a Java long")
        return n
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
        """Parse a body (strict JSON or fastjson's dialect); unknown keys are ignored.

        A value of the wrong shape (a string where a list of objects belongs, a list where an
        object does) is a :class:`ValueError` naming the body, like malformed JSON is.
        """
        d = _obj(data)
        try:
            return cls.from_dict(d)
        except (AttributeError, TypeError, KeyError) as e:
            raise ValueError(
                f"invalid JSON body for {cls.__name__}: a value has the wrong shape ({e})"
            ) from None


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


@dataclass(frozen=True, slots=True)
class DataVersion(JsonBody):
    """A broker's topic-table version; equal when both timestamp and counter match."""

    timestamp: int = 0
    counter: int = 0


def _version(d: Any) -> DataVersion | None:
    return None if d is None else DataVersion.from_dict(d)
