"""A compressed register body is inflated only up to a limit: a decompression bomb is refused
before it is inflated, and never makes more than the limit exist in memory."""

from __future__ import annotations

import tracemalloc
import zlib

import pytest

from pyrocketmq.remoting.body import (
    MAX_INFLATED_REGISTER_BODY,
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from pyrocketmq.remoting.inflate import InflateError, inflate


def bomb(size: int) -> bytes:
    """``size`` zero bytes, deflated (about a thousandth of it)."""
    c = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    parts = [c.compress(chunk) for _ in range(size >> 20)]
    return b"".join(parts) + c.flush()


def test_inflate_takes_up_to_the_limit():
    data = bytes(range(256)) * 40
    assert inflate(zlib.compress(data), len(data)) == data
    with pytest.raises(InflateError, match=f"more than {len(data) - 1} bytes"):
        inflate(zlib.compress(data), len(data) - 1)


@pytest.mark.parametrize(
    ("data", "words"),
    [(b"not zlib", "does not inflate"), (zlib.compress(b"abc" * 100)[:-6], "truncated"), (b"", "truncated")],
)
def test_what_does_not_inflate(data, words):
    with pytest.raises(InflateError, match=words):
        inflate(data, 1 << 20)


def test_a_bomb_is_refused_without_being_inflated():
    data = bomb(256 << 20)
    assert len(data) < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(InflateError, match="more than 1048576 bytes"):
            inflate(data, 1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak


def test_the_register_body_is_inflated_up_to_its_limit():
    wrapper = TopicConfigSerializeWrapper({"T": TopicConfig("T", 4, 4, 6)}, DataVersion(5, 7))
    body = RegisterBrokerBody(wrapper, []).to_compressed()
    decoded = RegisterBrokerBody.decode(body, compressed=True)
    assert decoded.topic_config_serialize_wrapper.topic_config_table["T"].write_queue_nums == 4
    with pytest.raises(ValueError, match="compressed register body inflates to more than 10 bytes"):
        RegisterBrokerBody.decode(body, compressed=True, max_inflated=10)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=f"more than {MAX_INFLATED_REGISTER_BODY} bytes"):
            RegisterBrokerBody.decode(bomb(MAX_INFLATED_REGISTER_BODY + (1 << 20)), compressed=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * MAX_INFLATED_REGISTER_BODY + (8 << 20), peak  # zlib's output blocks, then joined
