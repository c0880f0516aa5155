"""The compiled frame decoder (``remoting/_frames.c``) against the Python one: for any bytes, it
either declines (None, and the Python path decodes the frame) or returns exactly the command the
Python path returns -- the same fields, of the same types, the extFields in the same order. Checked
over generated headers (every field in range and out, any Unicode, escapes, whitespace, extra and
repeated keys) and over random mutations of real ones; and the plain forms peers write must not be
declined (else the compiled path would be dead code). A machine without the compiled module skips
these (CI fails instead: CI builds it)."""

from __future__ import annotations

import dataclasses
import json
import struct

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from pyrocketmq.remoting import command as C, header
from pyrocketmq.remoting.code import LanguageCode, RequestCode, ResponseCode
from pyrocketmq.remoting.command import FrameDecoder, FrameError, RemotingCommand, encode
from tests.helpers.prereq import missing_prerequisite


@pytest.fixture(autouse=True)
def compiled():
    if C._compiled is None:
        missing_prerequisite(
            "compiled frame decoder",
            "pyrocketmq.remoting._frames is not built (pip install -e . "
            "with a C compiler and Python's headers)",
        )
    return C._compiled


def fields_of(cmd: RemotingCommand) -> tuple:
    return (cmd.code, cmd.opaque, cmd.flag, cmd.remark, type(cmd.remark), list(cmd.ext_fields.items()),
            None if cmd.body is None else bytes(cmd.body), cmd.language, type(cmd.language), cmd.version,
            int(cmd.serialize_type))


def frame_of(header: bytes, body: bytes = b"", stype: int = 0) -> bytes:
    """A frame without its length field: ``H | header | body``."""
    return struct.pack(">i", (stype << 24) | len(header)) + header + body


def check(frame: bytes) -> RemotingCommand | None:
    """The compiled result, after holding it to the Python one; None when the compiled path declined."""
    got = C._compiled(frame, 0, len(frame))
    try:
        want = C.py_decode_frame(frame)
    except FrameError:
        assert got is None, f"compiled decoded a frame Python refuses: {frame[:200]!r}"
        return None
    if got is not None:
        assert fields_of(got) == fields_of(want), frame[:300]
    return got


int_field = st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**40), 2**40), st.booleans(),
                      st.floats(allow_nan=False, allow_infinity=False), st.none(), st.text(max_size=3))
any_text = st.text(max_size=20)
ext_value = st.one_of(any_text, any_text, st.integers(-5, 5), st.none(), st.booleans())
headers = st.fixed_dictionaries(
    {},
    optional={
        "code": int_field,
        "opaque": int_field,
        "flag": int_field,
        "version": int_field,
        "language": st.one_of(
            st.sampled_from([m.name for m in LanguageCode]), any_text, st.integers(-3, 300), st.none()
        ),
        "serializeTypeCurrentRPC": st.one_of(st.just("JSON"), st.integers(0, 2)),
        "remark": st.one_of(st.none(), any_text, st.integers(0, 9)),
        "extFields": st.one_of(st.none(), st.dictionaries(any_text, ext_value, max_size=6)),
        "other": st.one_of(
            any_text, st.integers(-9, 9), st.booleans(), st.none(), st.lists(st.integers(-9, 9), max_size=2)
        ),
    },
)


def dump(doc: dict, style: int) -> bytes:
    if style == 0:
        return orjson.dumps(doc)
    if style == 1:
        return json.dumps(doc).encode()  # \\u escapes for everything outside ASCII, spaces after : and ,
    return json.dumps(doc, ensure_ascii=False, indent=1).encode()  # raw UTF-8, newlines


@settings(max_examples=600, deadline=None)
@given(headers, st.integers(0, 2), st.binary(max_size=40))
def test_generated_headers_decode_as_in_python(doc, style, body) -> None:
    frame = frame_of(dump(doc, style), body)
    got = check(frame)
    plain = (isinstance(doc.get("code"), int) and not isinstance(doc.get("code"), bool)
             and -(2**31) <= doc["code"] < 2**31 and "other" not in doc)
    if (
        got is None
        and plain
        and all(
            isinstance(doc.get(k, 0), int)
            and not isinstance(doc.get(k, 0), bool)
            and -(2**31) <= doc.get(k, 0) < 2**31
            for k in ("opaque", "flag", "version")
        )
    ):
        lang = doc.get("language", "JAVA")
        ext = doc.get("extFields") or {}
        remark = doc.get("remark")
        if (
            (isinstance(lang, str) or (isinstance(lang, int) and 0 <= lang <= 255))
            and all(isinstance(v, str) for v in ext.values())
            and (remark is None or isinstance(remark, str))
            and "\ud800" not in json.dumps(doc)
        ):
            raise AssertionError(f"the compiled path declined a plain header: {frame[:300]!r}")


@settings(max_examples=800, deadline=None)
@given(headers.filter(lambda d: "code" in d), st.integers(0, 2), st.data())
def test_mutated_headers_decode_as_in_python_or_are_declined(doc, style, data) -> None:
    raw = bytearray(dump(doc, style))
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.sampled_from(["flip", "insert", "delete", "cut"]))
        if not raw:
            break
        i = data.draw(st.integers(0, len(raw) - 1))
        if op == "flip":
            raw[i] = data.draw(st.sampled_from(b'"\\{}[]:,0-9eE.tfnu \t\r\n\x00\x1f\x7f\x80\xc3\xed\xf4\xff'))
        elif op == "insert":
            raw.insert(i, data.draw(st.integers(0, 255)))
        elif op == "delete":
            del raw[i]
        else:
            del raw[i:]
    check(frame_of(bytes(raw), b"body"))


@pytest.mark.parametrize(
    "header",
    [
        # what a 4.9.7 Java client writes (fastjson: the V2 one-letter fields, properties with
        # \\u0001/\\u0002)
        b'{"code":310,"extFields":{"a":"PG","b":"T","c":"TBW102","d":"4","e":"3","f":"0","g":"1700000000000",'
        b'"h":"0","i":"UNIQ_KEY\\u0001AC11000100002A9F0000000000000000\\u0002WAIT\\u0001true\\u0002","j":"0",'
        b'"k":"false","m":"false"},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON",'
        b'"version":395}',
        # a response with a remark
        b'{"code":17,"flag":1,"language":"JAVA","opaque":9,'
        b'"remark":"topic[T] not exist, apply first please!","serializeTypeCurrentRPC":"JSON","version":395}',
        # whitespace, raw UTF-8 and escapes (quote, backslash, slash, surrogate pair)
        b' {\n "code" : -1 , "language" : 12 , "opaque" : 2147483647 , "flag" : -2147483648 ,\n'
        b' "extFields" : { "k\\"ey" : "v\\\\a\\/l \\ud83d\\ude00 \xc3\xa9\xe4\xb8\xad" , "e" : "" } ,'
        b' "remark" : null } ',
        # no extFields, no version, an unknown language name
        b'{"code":34,"language":"RUST","opaque":0}',
        b'{"code":34,"extFields":null,"remark":"\\u0000x"}',
    ],
)
def test_the_plain_forms_take_the_compiled_path(header) -> None:
    got = check(frame_of(header, b"\x00\x01body"))
    assert got is not None, header


@pytest.mark.parametrize("header", [
    b'{"code":1,"code":2}',                       # a field twice: Python keeps the last
    b'{"code":1,"extFields":{"k":"a","k":"b"}}',  # an ext field twice
    b'{"code":1,"extFields":{"k":null}}',         # a null ext value (dropped by Python)
    b'{"code":1,"extFields":{"k":5}}',            # a number where Java writes a string
    b'{"code":2147483648}',                       # outside Java's int
    b'{"code":1.0}',
    b'{"code":01}',
    b'{"code":1,"remark":"a\x01b"}',              # a raw control character (fastjson may write one)
    b'{"code":1,"remark":"\\ud800"}',             # a lone surrogate
    b'{"code":1,"remark":"\xff"}',                # not UTF-8
    b'{"code":1,"other":[1]}',
    b'{"code":1} x',
    b'{"opaque":1}',
    b'\xef\xbb\xbf{"code":1}',
])
def test_other_forms_are_left_to_python(header) -> None:
    frame = frame_of(header)
    assert C._compiled(frame, 0, len(frame)) is None
    check(frame)


def test_binary_headers_and_bad_lengths_are_left_to_python() -> None:
    cmd = RemotingCommand(code=RequestCode.HEART_BEAT, opaque=3, ext_fields={"a": "b"}, serialize_type=1)
    frame = encode(cmd)[4:]
    assert C._compiled(frame, 0, len(frame)) is None
    assert C.decode_frame(frame).ext_fields == {"a": "b"}
    bad = frame_of(b'{"code":1}')[:-1]  # the header runs past the frame
    assert C._compiled(bad, 0, len(bad)) is None
    with pytest.raises(FrameError):
        C.decode_frame(bad)
    assert C._compiled(b"\x00\x00", 0, 2) is None
    assert (
        C._compiled(b"xx" + frame_of(b'{"code":5}') + b"yy", 2, 2 + 14).code == 5
    )  # a frame inside a buffer


def test_the_decoder_takes_the_compiled_path_for_each_frame_of_a_stream() -> None:
    cmds = [RemotingCommand(code=310, opaque=i, ext_fields={"i": str(i), "u": "\u00e9\x01"}, body=b"x" * i,
                            language=LanguageCode.JAVA) for i in range(5)]
    stream = b"".join(encode(c) for c in cmds)
    dec = FrameDecoder()
    out = []
    for i in range(0, len(stream), 7):
        out.extend(dec.feed(stream[i:i + 7]))
    assert [fields_of(c) for c in out] == [fields_of(C.py_decode_frame(encode(c)[4:])) for c in cmds]
    assert [c.opaque for c in out] == list(range(5)) and dec.pending == 0


# -- SEND_MESSAGE_V2's header ---------------------------------------------------------------------

def python_v2(ext: dict[str, str]):
    """What the Python path reads from these fields: the header, or the HeaderError's type."""
    try:
        return header._send_v2_fast(ext)
    except (KeyError, ValueError):
        try:
            return header._read(header.SendMessageRequestHeader, ext, header._send_v2_spec())
        except header.HeaderError:
            return header.HeaderError


def v2_fields(h) -> tuple:
    return tuple((f.name, getattr(h, f.name), type(getattr(h, f.name))) for f in dataclasses.fields(h))


number = st.one_of(st.integers(-(2**31), 2**31 - 1).map(str), st.integers(-(2**64), 2**64).map(str),
                   st.sampled_from(["", "null", " 5", "+5", "1_0", "007", "-0", "-", "1.5", "\u0665", "abc",
                                    "9223372036854775807", "-9223372036854775808", "999999999999999999"]))
v2_ext = st.fixed_dictionaries(
    {"a": st.text(max_size=5), "b": st.text(max_size=5), "c": st.just("TBW102"), "d": number, "e": number,
     "f": number, "g": number, "h": number},
    optional={"i": st.text(max_size=8), "j": number, "l": number,
              "k": st.sampled_from(["true", "false", "TRUE", " true", "x", ""]),
              "m": st.sampled_from(["true", "false", "False", "1"])},
)


@settings(max_examples=600, deadline=None)
@given(v2_ext, st.sets(st.sampled_from("abcdefgh"), max_size=2))
def test_the_compiled_send_header_is_the_python_one(ext, missing) -> None:
    for k in missing:
        ext.pop(k, None)
    want = python_v2(ext)
    got = header._send_v2_compiled(ext)
    if got is None:
        return
    assert want is not header.HeaderError, f"compiled read a header Python refuses: {ext}"
    assert v2_fields(got) == v2_fields(want)


def test_a_java_send_header_takes_the_compiled_path() -> None:
    ext = {"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0", "g": "1700000000000", "h": "0",
           "i": "UNIQ_KEY\x01A\x02", "j": "0", "k": "false", "m": "false"}
    got = header._send_v2_compiled(ext)
    assert got is not None and v2_fields(got) == v2_fields(python_v2(ext))
    assert header._send_v2_compiled({**ext, "l": "16", "m": "true", "j": "null"}).batch is True
    assert header._send_v2_compiled({**ext, "d": " 4"}) is None  # Python reads it (int() strips spaces)


# -- encoding -------------------------------------------------------------------------------------

wide_int = st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**70), 2**70), st.booleans(),
                     st.sampled_from(list(ResponseCode)[:5]))
wild_text = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ['a"b', "a\\b", "\x7f", "\u2028", "\ud800", "\x00", "\t"]
)
commands = st.builds(
    RemotingCommand,
    code=wide_int, opaque=wide_int, flag=wide_int, version=wide_int,
    remark=st.none() | wild_text,
    ext_fields=st.dictionaries(wild_text, wild_text | st.integers(0, 9), max_size=5),
    body=st.none() | st.binary(max_size=20) | st.lists(st.binary(max_size=8).map(memoryview), max_size=3),
    language=st.sampled_from(list(LanguageCode)) | st.integers(0, 300),
    serialize_type=st.sampled_from([0, 0, 0, 1, 5, 2**70]),
)


@settings(max_examples=800, deadline=None)
@given(commands)
def test_the_compiled_prefix_is_the_python_one(cmd) -> None:
    got = C._encode_compiled(cmd)
    try:
        want = C.py_encode_prefix(cmd)
    except Exception:
        assert got is None, f"compiled encoded a command Python cannot: {cmd!r}"
        return
    assert got is None or got == want, cmd


def test_an_answer_takes_the_compiled_path_and_decodes_back() -> None:
    req = RemotingCommand(code=310, opaque=77, language=LanguageCode.JAVA)
    answer = req.response(ResponseCode.SUCCESS)
    answer.ext_fields = {"msgId": "0A0000010000000000001234", "queueId": "3", "queueOffset": "12",
                         "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
    answer.remark = "caf\u00e9"
    prefix = C._encode_compiled(answer)
    assert prefix is not None and prefix == C.py_encode_prefix(answer)
    back = C.decode_frame(prefix[4:])
    assert (back.code, back.opaque, back.remark, back.ext_fields) == (0, 77, "caf\u00e9", answer.ext_fields)
