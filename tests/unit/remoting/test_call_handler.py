"""The one guard: whatever a handler raises becomes a logged SYSTEM_ERROR answer, on a socket's
connection and on the 5.x endpoint's in-process channel alike."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.transport import call_handler, handler_failed


def _broken(channel: Any, cmd: RemotingCommand) -> RemotingCommand:
    raise KeyError("brokerName")


async def _later(channel: Any, cmd: RemotingCommand) -> RemotingCommand:
    await asyncio.sleep(0)
    return cmd.response(ResponseCode.SUCCESS)


async def _broken_later(channel: Any, cmd: RemotingCommand) -> RemotingCommand:
    await asyncio.sleep(0)
    raise RuntimeError("store closed")


def test_a_raising_handler_is_answered_system_error_and_logged(caplog) -> None:
    handlers: dict[int, Any] = {1: _broken, 2: _later, 3: _broken_later}
    caplog.set_level(logging.ERROR, "pyrocketmq.remoting")

    def call(code: int) -> RemotingCommand | None:
        return asyncio.run(call_handler(handlers, None, RemotingCommand.request(code, {}), "test"))  # type: ignore[arg-type]

    broken = call(1)
    assert (
        broken is not None
        and broken.code == ResponseCode.SYSTEM_ERROR
        and broken.remark == "KeyError: 'brokerName'"
    )
    assert call(2).code == ResponseCode.SUCCESS  # type: ignore[union-attr]
    assert call(3).remark == "RuntimeError: store closed"  # type: ignore[union-attr]
    assert call(4).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED  # type: ignore[union-attr]
    assert [r.exc_info is not None for r in caplog.records] == [True, True]  # with the traceback
    same = handler_failed("test", RemotingCommand.request(1, {}), KeyError("brokerName"))
    assert (same.code, same.remark) == (broken.code, broken.remark)
