"""HA frame codec: golden bytes, any split of the stream, protocol errors."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from pyrocketmq.broker.ha import frame


def test_golden_bytes() -> None:
    assert frame.encode_offset(0x0102030405060708) == bytes.fromhex("0102030405060708")
    assert frame.encode_frame(1 << 30, b"ab") == bytes.fromhex("0000000040000000" "00000002") + b"ab"
    assert frame.encode_frame(7) == bytes.fromhex("0000000000000007" "00000000")  # heartbeat


@pytest.mark.parametrize(
    ("slave", "master_max", "segment", "expected"),
    [
        (0, 0, 1024, 0),
        (0, 1023, 1024, 0),
        (0, 3000, 1024, 2048),  # an empty slave starts at the master's last segment
        (0, 2048, 1024, 2048),
        (500, 3000, 1024, 500),  # otherwise exactly where the slave stands
    ],
)
def test_master_start_offset(slave: int, master_max: int, segment: int, expected: int) -> None:
    assert frame.master_start_offset(slave, master_max, segment) == expected


@given(
    frames=st.lists(st.tuples(st.integers(0, 2**62), st.binary(max_size=64)), max_size=8),
    cuts=st.lists(st.integers(0, 1000), max_size=10),
)
def test_frames_survive_any_split(frames: list[tuple[int, bytes]], cuts: list[int]) -> None:
    stream = b"".join(frame.encode_frame(o, b) for o, b in frames)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    r = frame.FrameReader()
    got: list[frame.Frame] = []
    for a, b in zip(points, points[1:], strict=False):
        r.feed(stream[a:b])
        got += list(r)
    assert [(f.offset, f.body) for f in got] == frames
    assert all(f.heartbeat == (not f.body) for f in got)


def test_frame_errors() -> None:
    r = frame.FrameReader(max_body=16)
    r.feed(frame.encode_frame(0, b"x" * 17))
    with pytest.raises(frame.FrameError):
        next(r)
    r = frame.FrameReader()
    r.feed(bytes.fromhex("ffffffffffffffff00000000"))
    with pytest.raises(frame.FrameError):
        next(r)


def test_offset_reader_keeps_the_newest_report() -> None:
    r = frame.OffsetReader()
    data = frame.encode_offset(5) + frame.encode_offset(9) + frame.encode_offset(12)
    assert r.feed(data[:3]) is None
    assert r.feed(data[3:20]) == 9
    assert r.feed(data[20:]) == 12
    with pytest.raises(frame.FrameError):
        r.feed(frame.encode_offset(-1))


def test_a_controller_mode_slave_names_itself_first() -> None:
    r = frame.OffsetReader()
    data = frame.encode_identity(7) + frame.encode_offset(42)
    assert r.feed(data[:5]) is None
    assert r.feed(data[5:]) == 42 and r.replica_id == 7
    with pytest.raises(frame.FrameError):  # only the first report may name the slave
        r.feed(frame.encode_identity(3))
