"""Frame and header codec: golden bytes, both serialize types, streams split anywhere, bad frames."""

from __future__ import annotations

import struct

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from pyrocketmq.remoting.code import LanguageCode, SerializeType
from pyrocketmq.remoting.command import (
    MAX_FRAME_LENGTH,
    FrameDecoder,
    FrameError,
    RemotingCommand,
    decode_frame,
    encode,
)


def test_binary_header_golden_bytes():
    cmd = RemotingCommand(
        code=10, opaque=7, flag=0, remark="hi", ext_fields={"a": "b"}, body=b"xyz",
        language=LanguageCode.JAVA, version=407, serialize_type=SerializeType.ROCKETMQ,
    )
    header = (
        struct.pack(">hbhii", 10, 0, 407, 7, 0)
        + struct.pack(">i", 2) + b"hi"
        + struct.pack(">i", 2 + 1 + 4 + 1) + struct.pack(">h", 1) + b"a" + struct.pack(">i", 1) + b"b"
    )
    expected = struct.pack(">ii", 4 + len(header) + 3, (1 << 24) | len(header)) + header + b"xyz"
    assert encode(cmd) == expected
    back = decode_frame(expected[4:])
    assert (back.code, back.opaque, back.remark, back.ext_fields, back.body, back.version) == (
        10,
        7,
        "hi",
        {"a": "b"},
        b"xyz",
        407,
    )
    assert back.serialize_type == SerializeType.ROCKETMQ


def test_json_header_fields_and_layout():
    cmd = RemotingCommand(
        code=105, opaque=3, ext_fields={"topic": "T"}, language=LanguageCode.JAVA, version=401
    )
    frame = encode(cmd)
    length, h = struct.unpack_from(">ii", frame)
    assert length == len(frame) - 4
    assert h >> 24 == 0
    doc = orjson.loads(frame[8 : 8 + (h & 0xFFFFFF)])
    assert doc["code"] == 105 and doc["language"] == "JAVA" and doc["version"] == 401 and doc["opaque"] == 3
    assert doc["extFields"] == {"topic": "T"} and "remark" not in doc


def test_java_style_json_header_is_read_leniently():
    # Java writes numbers in extFields as strings, but a sloppy peer may not; control chars escaped.
    header = (b'{"code":34,"extFields":{"n":5,"b":true},"flag":0,"language":"GO","opaque":9,'
              b'"remark":"a\\u0001b","serializeTypeCurrentRPC":"JSON","version":317}')
    frame = struct.pack(">i", len(header)) + header
    cmd = decode_frame(frame)
    assert cmd.ext_fields == {"n": "5", "b": "true"}
    assert cmd.language == LanguageCode.GO and cmd.remark == "a\x01b"


def test_request_response_flags():
    req = RemotingCommand.request(11, {"x": 1, "y": None, "z": False}, oneway=True)
    assert req.is_oneway and not req.is_response and req.ext_fields == {"x": "1", "z": "false"}
    resp = req.response(0, "ok", {"k": 2})
    assert resp.is_response and resp.opaque == req.opaque and resp.ext_fields == {"k": "2"}


def test_list_body_is_written_as_concatenation():
    cmd = RemotingCommand(code=0, body=[memoryview(b"ab"), memoryview(b"cde")])
    frame = encode(cmd)
    assert decode_frame(frame[4:]).body == b"abcde"


@pytest.mark.parametrize(
    "frame, message",
    [
        (struct.pack(">i", 2) + b"\0\0", "outside"),
        (struct.pack(">ii", 8, 100) + b"1234", "runs past"),
        (struct.pack(">ii", 9, 5) + b"{nope", "not valid JSON"),
        (struct.pack(">ii", 7, 3) + b"[1]", "not an object"),
        (struct.pack(">ii", 6, (7 << 24) | 2) + b"{}", "serialize type"),
        (struct.pack(">ii", 8, (1 << 24) | 4) + b"\0\0\0\0", "truncated"),
    ],
)
def test_malformed_frames_raise(frame, message):
    with pytest.raises(FrameError, match=message):
        list(FrameDecoder().feed(frame))


def test_oversized_length_rejected_before_buffering():
    d = FrameDecoder()
    with pytest.raises(FrameError, match="outside"):
        list(d.feed(struct.pack(">i", MAX_FRAME_LENGTH + 1) + b"\0" * 16))


commands = st.builds(
    RemotingCommand,
    code=st.integers(0, 32767),
    opaque=st.integers(0, 2**31 - 1),
    flag=st.sampled_from([0, 1, 2]),
    remark=st.one_of(st.none(), st.text(max_size=20)),
    ext_fields=st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=16), max_size=4),
    body=st.one_of(st.none(), st.binary(min_size=1, max_size=64)),
    language=st.sampled_from(list(LanguageCode)),
    version=st.integers(0, 32767),
    serialize_type=st.sampled_from(list(SerializeType)),
)


@settings(max_examples=150, deadline=None)
@given(cmds=st.lists(commands, min_size=1, max_size=5), cuts=st.lists(st.integers(0, 10_000), max_size=8))
def test_stream_split_anywhere_round_trips(cmds, cuts):
    stream = b"".join(encode(c) for c in cmds)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    d = FrameDecoder()
    out = []
    for a, b in zip(points, points[1:], strict=False):
        out.extend(d.feed(stream[a:b]))
    assert d.pending == 0
    assert len(out) == len(cmds)
    for got, want in zip(out, cmds, strict=True):
        assert (got.code, got.opaque, got.flag, got.ext_fields, got.language, got.version) == (
            want.code, want.opaque, want.flag, want.ext_fields, want.language, want.version,
        )
        assert (got.remark or None) == (want.remark or None)
        assert got.body == want.body
