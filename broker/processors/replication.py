"""The master's answers to a slave's periodic config sync (RocketMQ's SlaveSynchronize).

- GET_ALL_CONSUMER_OFFSET (43): ``{"offsetTable":{"topic@group":{"0":12}}}`` (fastjson reads the
  string keys back into ``Integer``).
- GET_ALL_DELAY_OFFSET (45): the ``delayOffset.json`` document, ``{"offsetTable":{"1":123}}``.
- GET_TIMER_CHECK_POINT (60): the ``timerCheckpoint.json`` document (``{}`` without a timer service).

Topic configs (21) and subscription groups (201) are answered by ``admin``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.lenient_json import dumps
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult

if TYPE_CHECKING:
    from ..consumer_offset import ConsumerOffsetManager
    from ..delay_service import ScheduleService
    from ..timer_service import TimerService


class ReplicationProcessor:
    def __init__(self, *, offsets: ConsumerOffsetManager, schedule: ScheduleService | None,
                 timer: TimerService | None = None) -> None:
        self.offsets = offsets
        self.schedule = schedule
        self.timer = timer

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.GET_ALL_CONSUMER_OFFSET, self.handle_all_consumer_offsets)
        server.register(RequestCode.GET_ALL_DELAY_OFFSET, self.handle_all_delay_offsets)
        server.register(RequestCode.GET_TIMER_CHECK_POINT, self.handle_timer_checkpoint)

    def handle_timer_checkpoint(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        doc = self.timer.progress_json() if self.timer is not None else {}
        return cmd.response(ResponseCode.SUCCESS, body=dumps(doc))

    def handle_all_consumer_offsets(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        table = self.offsets.table
        doc = {"offsetTable": {k: {str(q): o for q, o in v.items()} for k, v in table.items()}}
        return cmd.response(ResponseCode.SUCCESS, body=dumps(doc))

    def handle_all_delay_offsets(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        schedule = self.schedule
        offsets = schedule.offsets if schedule is not None else {}
        return cmd.response(
            ResponseCode.SUCCESS, body=dumps({"offsetTable": {str(k): v for k, v in sorted(offsets.items())}})
        )
