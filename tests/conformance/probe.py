"""A tiny, dependency-free RocketMQ remoting client for readiness probes (PROTOCOL.md §1).

Deliberately independent of ``pyrocketmq.remoting``: the fixtures must be able to tell "the server is
up and has a route" even while the project's own codec is being written (or is broken). Blocking
sockets, one request per connection, JSON headers out; JSON or ROCKETMQ headers back.

Frame::

    | int32 L = 4 + headerLen + bodyLen | int32 (serializeType << 24) | headerLen | header | body |
"""

from __future__ import annotations

import json
import re
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
SUCCESS = 0
TOPIC_NOT_EXIST = 17

CLIENT_VERSION = 409  # V4_9_8: the name server answers with standard JSON for versions >= V4_9_4

_LANGUAGES = {
    0: "JAVA",
    1: "CPP",
    2: "DOTNET",
    3: "PYTHON",
    4: "DELPHI",
    5: "ERLANG",
    6: "RUBY",
    7: "OTHER",
    8: "HTTP",
    9: "GO",
    10: "PHP",
    11: "OMS",
    12: "RUST",
}


@dataclass
class Reply:
    code: int
    opaque: int
    flag: int
    remark: str | None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    serialize_type: int = 0


def encode_request(
    code: int, ext_fields: dict[str, str] | None = None, body: bytes = b"", opaque: int = 1
) -> bytes:
    header: dict[str, Any] = {
        "code": code,
        "language": "PYTHON",
        "version": CLIENT_VERSION,
        "opaque": opaque,
        "flag": 0,
    }
    if ext_fields:
        header["extFields"] = {k: str(v) for k, v in ext_fields.items()}
    raw = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack(">ii", 4 + len(raw) + len(body), len(raw)) + raw + body


def _decode_rocketmq_header(raw: bytes) -> dict[str, Any]:
    code, lang, version, opaque, flag, remark_len = struct.unpack_from(">hbhiii", raw, 0)
    pos = 17
    remark = raw[pos : pos + remark_len].decode() if remark_len else None
    pos += remark_len
    (ext_len,) = struct.unpack_from(">i", raw, pos)
    pos += 4
    end = pos + ext_len
    ext: dict[str, str] = {}
    while pos < end:
        (klen,) = struct.unpack_from(">h", raw, pos)
        key = raw[pos + 2 : pos + 2 + klen].decode()
        pos += 2 + klen
        (vlen,) = struct.unpack_from(">i", raw, pos)
        ext[key] = raw[pos + 4 : pos + 4 + vlen].decode()
        pos += 4 + vlen
    return {
        "code": code,
        "language": _LANGUAGES.get(lang, lang),
        "version": version,
        "opaque": opaque,
        "flag": flag,
        "remark": remark,
        "extFields": ext,
    }


def decode_frame(frame: bytes) -> Reply:
    """Decode one frame *without* its leading length field."""
    (mark,) = struct.unpack_from(">i", frame, 0)
    serialize_type = (mark >> 24) & 0xFF
    header_len = mark & 0xFFFFFF
    raw = frame[4 : 4 + header_len]
    header = _decode_rocketmq_header(raw) if serialize_type == 1 else json.loads(raw.decode("utf-8"))
    return Reply(
        code=header["code"],
        opaque=header.get("opaque", 0),
        flag=header.get("flag", 0),
        remark=header.get("remark"),
        ext_fields=header.get("extFields") or {},
        body=frame[4 + header_len :],
        serialize_type=serialize_type,
    )


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("connection closed by peer")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def request(
    addr: str, code: int, ext_fields: dict[str, str] | None = None, body: bytes = b"", timeout: float = 3.0
) -> Reply:
    """Send one request and return the reply with the same opaque (other frames are skipped)."""
    host, port = addr.rsplit(":", 1)
    opaque = int(time.monotonic_ns() & 0x7FFFFFFF)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(encode_request(code, ext_fields, body, opaque))
        while True:
            (length,) = struct.unpack(">i", _recv_exactly(sock, 4))
            reply = decode_frame(_recv_exactly(sock, length))
            if reply.opaque == opaque and reply.flag & 1:
                return reply


_BARE_NUMERIC_KEY = re.compile(r"([{,])\s*(-?\d+)\s*:")


def loads_lenient(data: bytes) -> Any:
    """Parse fastjson output, which may use bare numeric map keys (``{0:"addr"}``) in legacy mode."""
    text = data.decode("utf-8")
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(_BARE_NUMERIC_KEY.sub(r'\1"\2":', text))


def get_route(namesrv_addr: str, topic: str, timeout: float = 3.0) -> tuple[int, Any]:
    """(response code, TopicRouteData as a dict or None)."""
    reply = request(
        namesrv_addr,
        GET_ROUTEINFO_BY_TOPIC,
        {"topic": topic, "acceptStandardJsonOnly": "true"},
        timeout=timeout,
    )
    route = loads_lenient(reply.body) if reply.code == SUCCESS and reply.body else None
    return reply.code, route


def wait_for_route(
    namesrv_addr: str, topic: str = "TBW102", timeout: float = 30.0, alive: Callable[[], bool] | None = None
) -> Any:
    """Poll until the name server serves a route for ``topic`` with a master broker; return it."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise RuntimeError(f"a server exited while waiting for a route to {topic!r} (last: {last})")
        try:
            code, route = get_route(namesrv_addr, topic)
            last = f"code {code}"
            if (
                code == SUCCESS
                and route
                and route.get("queueDatas")
                and any("0" in (bd.get("brokerAddrs") or {}) for bd in route.get("brokerDatas") or [])
            ):
                return route
        except (OSError, ValueError, struct.error) as exc:
            last = repr(exc)
        time.sleep(0.2)
    raise TimeoutError(f"no route for {topic!r} from {namesrv_addr} within {timeout:.0f} s (last: {last})")
