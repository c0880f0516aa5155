"""The remoting command and its frame: the unit every RocketMQ 4.x peer exchanges.

Frame layout (all big-endian)::

    +---------+-----------------------------+-------------+-----------+
    | int32 L | int32 H                     | header (hl) | body      |
    +---------+-----------------------------+-------------+-----------+
    L  = 4 + hl + len(body)                  (L does not count itself)
    H  = serializeType << 24 | hl            (serializeType 0 JSON, 1 ROCKETMQ)

JSON header: ``{"code","language","version","opaque","flag","remark"?,"extFields"?}``; language by
name. ROCKETMQ binary header::

    int16 code | int8 language | int16 version | int32 opaque | int32 flag |
    int32 remarkLen | remark | int32 extLen | { int16 kLen | k | int32 vLen | v }*

Flag bit 0 marks a response, bit 1 a oneway request. This module is pure: bytes in, commands out.
A malformed frame raises :class:`FrameError`; the transport closes that one connection.

A frame whose JSON header has the plain form every peer writes is decoded by the compiled
``_frames`` module (``_frames.c``) when it was built; any other frame, or every frame when it was not
built or ``PYROCKETMQ_PURE_PYTHON=1``, by the Python code here, which gives the same commands. The
compiled module also writes the JSON header of a command whose strings need no escaping, the same
bytes as the Python encoder.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import orjson

from .code import VERSION_4_9_7, LanguageCode, ResponseCode, SerializeType
from .compiled import load_compiled

MAX_FRAME_LENGTH = 16 * 1024 * 1024
"""Largest accepted value of the length field (RocketMQ's ``com.rocketmq.remoting.frameMaxLength``)."""

RPC_RESPONSE = 0x1
RPC_ONEWAY = 0x2

_INT = struct.Struct(">i")
_PREFIX = struct.Struct(">ii")
_BIN_HEAD = struct.Struct(">hbhii")
_LANG_BY_NAME = {m.name: m for m in LanguageCode}


class FrameError(ValueError):
    """The peer sent bytes that are not a valid remoting frame; the connection must be closed."""


@dataclass(slots=True)
class RemotingCommand:
    """One request or response. ``ext_fields`` values are strings on the wire."""

    code: int
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    #: The body; a list of buffers (mapped-file slices of a pull) is written out without joining.
    body: bytes | bytearray | memoryview | list[memoryview] | None = None
    language: int = LanguageCode.PYTHON
    version: int = VERSION_4_9_7
    serialize_type: int = SerializeType.JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, Any] | None = None,
        body: bytes | bytearray | memoryview | None = None,
        *,
        oneway: bool = False,
    ) -> RemotingCommand:
        return cls(
            code=int(code),
            flag=RPC_ONEWAY if oneway else 0,
            ext_fields=stringify(ext_fields) if ext_fields else {},
            body=body,
        )

    def response(
        self,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        ext_fields: dict[str, Any] | None = None,
        body: bytes | bytearray | memoryview | None = None,
    ) -> RemotingCommand:
        """A response to this request: same opaque and serialize type, response flag set."""
        return RemotingCommand(
            code=int(code),
            opaque=self.opaque,
            flag=RPC_RESPONSE,
            remark=remark,
            ext_fields=stringify(ext_fields) if ext_fields else {},
            body=body,
            version=VERSION_4_9_7,
            serialize_type=self.serialize_type,
        )

    @property
    def payload(self) -> bytes | bytearray | memoryview:
        """The body as one buffer (``b""`` when there is none): what a received command carries.
        A list body (the mapped-file slices of an outgoing pull answer) is joined."""
        body = self.body
        if body is None:
            return b""
        if isinstance(body, list):
            return b"".join(body)
        return body

    # -- typed access to ext fields ------------------------------------------------------------
    def get_str(self, key: str, default: str | None = None) -> str | None:
        return self.ext_fields.get(key, default)

    def get_int(self, key: str, default: int | None = None) -> int | None:
        v = self.ext_fields.get(key)
        if v is None or v == "" or v == "null":
            return default
        return int(v)

    def get_bool(self, key: str, default: bool = False) -> bool:
        v = self.ext_fields.get(key)
        if v is None:
            return default
        return v.lower() == "true"

    def __repr__(self) -> str:
        blen = 0 if self.body is None else len(self.body)
        kind = "response" if self.is_response else ("oneway" if self.is_oneway else "request")
        return (
            f"RemotingCommand({kind} code={self.code} opaque={self.opaque} remark={self.remark!r} "
            f"ext={self.ext_fields!r} body={blen}B)"
        )


def stringify(fields: dict[str, Any]) -> dict[str, str]:
    """Ext fields as Java sends them: decimal numbers, ``true``/``false``; ``None`` left out."""
    out: dict[str, str] = {}
    for k, v in fields.items():
        if v is None:
            continue
        if isinstance(v, bool):
            out[k] = "true" if v else "false"
        else:
            out[k] = v if isinstance(v, str) else str(v)
    return out


# -- encoding ---------------------------------------------------------------------------------


def encode_header(cmd: RemotingCommand) -> bytes:
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        return _encode_binary_header(cmd)
    return _encode_json_header(cmd)


_LANG_NAMES = {m.value: m.name for m in LanguageCode}


def version_desc(version: int) -> str:
    """A client's version number as Java names it (``407`` → ``V4_9_7``); 4.9.x only, else the number."""
    if 393 <= version <= 409 and version % 2:
        return f"V4_9_{(version - 393) // 2}"
    return str(version) if version else "N/A"


def language_name(language: int) -> str:
    """The name a JSON header gives a language code (``OTHER`` for a code RocketMQ does not know)."""
    return _LANG_NAMES.get(language, "OTHER")


def _encode_json_header(cmd: RemotingCommand) -> bytes:
    doc: dict[str, Any] = {
        "code": cmd.code,
        "flag": cmd.flag,
        "language": _LANG_NAMES.get(cmd.language, "OTHER"),  # language_name, inlined: every frame
        "opaque": cmd.opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": cmd.version,
    }
    if cmd.remark is not None:
        doc["remark"] = cmd.remark
    if cmd.ext_fields:
        doc["extFields"] = cmd.ext_fields
    return orjson.dumps(doc)


def _encode_binary_header(cmd: RemotingCommand) -> bytes:
    parts = [_BIN_HEAD.pack(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag)]
    if cmd.remark:
        rb = cmd.remark.encode()
        parts.append(_INT.pack(len(rb)))
        parts.append(rb)
    else:
        parts.append(_INT.pack(0))
    ext = bytearray()
    for k, v in cmd.ext_fields.items():
        kb = k.encode()
        vb = v.encode()
        ext += struct.pack(">h", len(kb))
        ext += kb
        ext += _INT.pack(len(vb))
        ext += vb
    parts.append(_INT.pack(len(ext)))
    parts.append(bytes(ext))
    return b"".join(parts)


def encode_prefix(cmd: RemotingCommand) -> bytes:
    """Length fields + header: write this, then ``cmd.body`` as it is (no copy of the body)."""
    if _encode_compiled is not None:
        prefix = _encode_compiled(cmd)
        if prefix is not None:
            return prefix
    return py_encode_prefix(cmd)


def py_encode_prefix(cmd: RemotingCommand) -> bytes:
    """:func:`encode_prefix` in Python only (any header: escapes, the binary form)."""
    header = encode_header(cmd)
    body = cmd.body
    body_len = 0 if body is None else (sum(map(len, body)) if isinstance(body, list) else len(body))
    return _PREFIX.pack(4 + len(header) + body_len, (cmd.serialize_type << 24) | len(header)) + header


def encode(cmd: RemotingCommand) -> bytes:
    """The whole frame as one bytes object (convenient; the transport avoids the body copy)."""
    prefix = encode_prefix(cmd)
    if isinstance(cmd.body, list):
        return prefix + b"".join(cmd.body)
    return prefix + bytes(cmd.body) if cmd.body else prefix


# -- decoding ---------------------------------------------------------------------------------


def decode_frame(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode one frame *without* its leading length field (``H | header | body``)."""
    if _compiled is not None:
        cmd = _compiled(frame, 0, len(frame))
        if cmd is not None:
            return cmd
    return py_decode_frame(frame)


def py_decode_frame(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """:func:`decode_frame` in Python only: every form of header, and the reason a bad one is refused."""
    n = len(frame)
    if n < 4:
        raise FrameError(f"frame of {n} bytes is shorter than its header-length field")
    (h,) = _INT.unpack_from(frame, 0)
    stype = (h >> 24) & 0xFF
    hlen = h & 0xFFFFFF
    if hlen > n - 4:
        raise FrameError(f"header length {hlen} runs past the frame ({n - 4} bytes left)")
    raw = frame[4 : 4 + hlen]
    if stype == SerializeType.JSON:
        cmd = _decode_json_header(bytes(raw))
    elif stype == SerializeType.ROCKETMQ:
        cmd = _decode_binary_header(raw)
    else:
        raise FrameError(f"unknown serialize type {stype}")
    cmd.serialize_type = stype
    if n > 4 + hlen:
        cmd.body = bytes(frame[4 + hlen :])
    return cmd


def _decode_json_header(raw: bytes) -> RemotingCommand:
    """The header document, or FrameError for anything a hostile or broken peer can put there:
    invalid or too deeply nested JSON, non-finite or huge numbers, fields of the wrong type."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:  # fastjson may leave control characters unescaped inside strings
            doc = json.loads(raw.decode("utf-8", "replace"), strict=False, parse_constant=_no_constant)
        except (ValueError, RecursionError) as e:  # RecursionError: nesting beyond the parser's stack
            raise FrameError(f"header is not valid JSON: {type(e).__name__}: {str(e)[:200]}") from None
    if not isinstance(doc, dict):
        raise FrameError("header JSON is not an object")
    try:
        get = doc.get
        code, opaque, flag, version = get("code"), get("opaque", 0), get("flag", 0), get("version", 0)
        if not (type(code) is int and type(opaque) is int and type(flag) is int and type(version) is int
                and _INT32_MIN <= code <= _INT32_MAX and _INT32_MIN <= opaque <= _INT32_MAX
                and _INT32_MIN <= flag <= _INT32_MAX and _INT32_MIN <= version <= _INT32_MAX):
            # not the plain form every peer sends: the field by field reading names what is wrong
            code = _int32(doc, "code", None)
            opaque, flag, version = (
                _int32(doc, "opaque", 0),
                _int32(doc, "flag", 0),
                _int32(doc, "version", 0),
            )
        lang = get("language", "JAVA")
        language: int
        if isinstance(lang, str):
            language = _LANG_BY_NAME.get(lang, LanguageCode.OTHER)
        elif type(lang) is int and 0 <= lang <= 255:
            language = lang
        else:
            raise FrameError(f"header field language {lang!r:.40} is neither a name nor a byte")
        ext = get("extFields") or {}
        if not isinstance(ext, dict):
            raise FrameError("extFields is not an object")
        # JSON object keys are strings already; only a non-string value needs converting
        ext_fields = {k: v if type(v) is str else _java_str(v) for k, v in ext.items() if v is not None}
        remark = get("remark")
        # positional: this runs for every frame (code, opaque, flag, remark, ext, body, language, version)
        return RemotingCommand(code, opaque, flag, None if remark is None else str(remark), ext_fields, None,
                               language, version)
    except FrameError:
        raise
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as e:
        raise FrameError(f"bad header field: {type(e).__name__}: {str(e)[:200]}") from None


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _int32(doc: dict[str, Any], key: str, default: int | None) -> int:
    """``doc[key]`` as the Java ``int`` it must be (a JSON integer in int32 range; ``true`` or
    ``1.5`` are not ints), ``default`` when absent; FrameError otherwise."""
    v = doc.get(key)
    if v is None:
        if default is None:
            raise FrameError(f"header field {key} is missing")
        return default
    if type(v) is not int or not _INT32_MIN <= v <= _INT32_MAX:
        raise FrameError(f"header field {key} is not a 32-bit integer: {v!r:.40}")
    return v


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _java_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _decode_binary_header(raw: bytes | bytearray | memoryview) -> RemotingCommand:
    try:
        code, language, version, opaque, flag = _BIN_HEAD.unpack_from(raw, 0)
        pos = _BIN_HEAD.size
        (rlen,) = _INT.unpack_from(raw, pos)
        pos += 4
        remark = None
        if rlen > 0:
            if pos + rlen > len(raw):
                raise FrameError("remark runs past the header")
            remark = bytes(raw[pos : pos + rlen]).decode()
            pos += rlen
        (elen,) = _INT.unpack_from(raw, pos)
        pos += 4
        end = pos + elen
        if elen < 0 or end > len(raw):
            raise FrameError("extFields run past the header")
        ext: dict[str, str] = {}
        while pos < end:
            (klen,) = struct.unpack_from(">h", raw, pos)
            pos += 2
            k = bytes(raw[pos : pos + klen]).decode()
            pos += klen
            (vlen,) = _INT.unpack_from(raw, pos)
            pos += 4
            v = bytes(raw[pos : pos + vlen]).decode()
            pos += vlen
            if pos > end or klen < 0 or vlen < 0:
                raise FrameError("an extFields entry runs past the header")
            ext[k] = v
    except struct.error as e:
        raise FrameError(f"truncated binary header: {e}") from None
    except UnicodeDecodeError as e:
        raise FrameError(f"binary header string is not UTF-8: {e}") from None
    return RemotingCommand(
        code=code, opaque=opaque, flag=flag, remark=remark, ext_fields=ext, language=language, version=version
    )


class FrameDecoder:
    """Incremental splitter: feed it what the socket gave, take out whole commands.

    Bytes may arrive split anywhere; a frame is yielded once all of it is there.
    """

    __slots__ = ("_buf", "max_length")

    def __init__(self, max_length: int = MAX_FRAME_LENGTH) -> None:
        self._buf = bytearray()
        self.max_length = max_length

    @property
    def pending(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> Generator[RemotingCommand, None, None]:
        buf = self._buf
        buf += data
        pos = 0
        n = len(buf)
        try:
            while n - pos >= 4:
                (length,) = _INT.unpack_from(buf, pos)
                if length < 4 or length > self.max_length:
                    raise FrameError(f"frame length {length} outside 4..{self.max_length}")
                if n - pos - 4 < length:
                    break
                start = pos + 4
                pos = start + length
                cmd = _compiled(buf, start, pos) if _compiled is not None else None
                yield cmd if cmd is not None else py_decode_frame(memoryview(buf)[start:pos])
        finally:
            if pos:
                try:
                    del buf[:pos]
                except BufferError:  # a view is still held (by an exception's traceback): copy instead
                    self._buf = bytearray(buf[pos:])


def _load_frames() -> Any:
    """The compiled ``_frames`` module, configured to make RemotingCommands; None when it is not built or
    not wanted (``PYROCKETMQ_PURE_PYTHON``)."""
    module = load_compiled(f"{__package__}._frames", "frame decoding and encoding")
    if module is None:
        return None
    module.configure(RemotingCommand, _LANG_BY_NAME, LanguageCode.OTHER, LanguageCode.JAVA, _LANG_NAMES)
    return module


compiled_frames = _load_frames()
"""The compiled module (None without it); :mod:`.header` configures its send-header reader."""
_compiled: Callable[[bytes | bytearray | memoryview, int, int], RemotingCommand | None] | None = (
    None if compiled_frames is None else compiled_frames.decode_json_frame
)
_encode_compiled: Callable[[RemotingCommand], bytes | None] | None = (
    None if compiled_frames is None else compiled_frames.encode_json_prefix
)
