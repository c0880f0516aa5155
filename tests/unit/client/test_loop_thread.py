"""The background loop of the synchronous facades."""

from __future__ import annotations

import asyncio

import pytest

from pyrocketmq.client.errors import MQClientError, MQTimeoutError
from pyrocketmq.client.loop_thread import LoopThread


def test_runs_coroutines_and_reraises() -> None:
    lt = LoopThread("t1")
    try:
        assert lt.run(asyncio.sleep(0, result=5)) == 5

        async def boom():
            raise ValueError("x")

        with pytest.raises(ValueError):
            lt.run(boom())
        with pytest.raises(MQTimeoutError):
            lt.run(asyncio.sleep(5), timeout=0.05)
    finally:
        lt.stop()
    assert not lt.alive
    with pytest.raises(MQClientError, match="stopped"):
        lt.run(asyncio.sleep(0))


def test_blocking_call_on_the_loop_thread_is_refused() -> None:
    lt = LoopThread("t2")
    try:
        async def inner():
            return lt.run(asyncio.sleep(0))

        with pytest.raises(MQClientError, match="async API"):
            lt.run(inner())
    finally:
        lt.stop()


def test_a_calls_own_timeout_comes_through_as_it_was_raised() -> None:
    # MQTimeoutError is a TimeoutError: with no wait bound it once became a TypeError (formatting None)
    lt = LoopThread(name="test-own-timeout")
    try:
        async def times_out() -> None:
            raise MQTimeoutError("send to topic T did not complete within 3.0s")

        with pytest.raises(MQTimeoutError, match="send to topic T"):
            lt.run(times_out())
        with pytest.raises(MQTimeoutError, match="send to topic T"):
            lt.run(times_out(), timeout=5)
    finally:
        lt.stop()
