"""fastjson-compatible JSON for the remoting bodies: orjson when it can, else a small lenient
reader for what fastjson writes and orjson refuses (bare numeric keys ``{0:"ip"}``, objects as
keys, raw control characters in strings, single quotes); and the writer of sorted-key JSON.

Pure codec: bytes in, values out.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_SORT = orjson.OPT_SORT_KEYS


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
        self.pos = _WS.match(self.s, self.pos).end()  # type: ignore[union-attr]  # _WS matches the empty string: never None

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
        text: str = json.loads(f'"{raw}"', strict=False)
        return text

    def key(self) -> Any:
        if self.pos >= len(self.s):
            raise self.fail("unexpected end")
        c = self.s[self.pos]
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
    try:
        return _LenientReader(text).document()
    except RecursionError:
        raise ValueError("invalid JSON body: nested too deeply") from None


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


def _items(v: Any) -> list[Any]:
    """A JSON array (or a missing/empty one); a string or an object in its place is malformed."""
    if not v:
        return []
    if not isinstance(v, (list, tuple, set, frozenset)):
        raise ValueError(f"invalid JSON body: expected an array, got {type(v).__name__}")
    return list(v)


def _strs(v: Any) -> list[str]:
    return [str(x) for x in _items(v)]


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}
