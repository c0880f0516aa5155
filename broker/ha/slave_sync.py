"""A slave copies its master's configs every 10 s (RocketMQ's SlaveSynchronize.syncAll).

Topic configs (GET_ALL_TOPIC_CONFIG 21) and subscription groups (201) replace the slave's tables
when the master's data version differs; consumer offsets (GET_ALL_CONSUMER_OFFSET 43) are merged
over the slave's (a consumer may have committed to the slave while the master was away); delay
offsets (GET_ALL_DELAY_OFFSET 45) replace the slave's, and in controller mode the timer's progress
(GET_TIMER_CHECK_POINT 60) too. Each is persisted like a local change.
A failed round is logged and retried at the next tick.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyrocketmq.remoting.body import SubscriptionGroupWrapper, TopicConfigSerializeWrapper
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.lenient_json import loads
from pyrocketmq.remoting.transport import RemotingError

from ..registration import outgoing_client

if TYPE_CHECKING:
    from ..consumer_offset import ConsumerOffsetManager
    from ..delay_service import ScheduleService
    from ..registration import Registrar
    from ..subscription_group import SubscriptionGroupManager
    from ..timer_service import TimerService
    from ..topic_config import TopicConfigManager

log = logging.getLogger("pyrocketmq.broker.ha")

SYNC_INTERVAL = 10.0


class SlaveSync:
    def __init__(
        self,
        *,
        registrar: Registrar,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetManager,
        schedule: ScheduleService | None,
        interval: float = SYNC_INTERVAL,
        timer: TimerService | None = None,
    ) -> None:
        self.timer = timer
        """Controller mode: the timer's progress is copied too (a promoted slave goes on from it)."""
        self.interval = interval
        """Seconds between rounds (controller mode: 2, so a failover repeats little consumption)."""
        self.registrar = registrar
        self.topics = topics
        self.groups = groups
        self.offsets = offsets
        self.schedule = schedule
        self.client = outgoing_client(registrar.settings)

    async def sync_round(self) -> float:
        """One sync from the master, once its address is known; the seconds until the next."""
        addr = self.registrar.master_addr
        if not addr:
            return 1.0
        try:
            await self.sync_all(addr)
        except (RemotingError, ValueError, TypeError, KeyError) as e:
            log.info("config sync from master %s failed: %s", addr, e)
        return self.interval

    async def _get(self, addr: str, code: RequestCode) -> bytes:
        resp = await self.client.invoke(addr, RemotingCommand.request(code, {}), 5.0)
        if resp.code != ResponseCode.SUCCESS:
            raise ValueError(f"request {code.name}: code {resp.code} {resp.remark}")
        return bytes(resp.payload)

    async def sync_all(self, addr: str) -> None:
        topics = TopicConfigSerializeWrapper.from_json(
            await self._get(addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        )
        if topics.data_version != self.topics.data_version:
            self.topics.table.clear()
            self.topics.table.update(topics.topic_config_table)
            if topics.data_version is not None:
                self.topics.data_version = topics.data_version
            self.topics.persist()
            self.registrar.register_soon()
        offsets = loads(await self._get(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)).get("offsetTable") or {}
        for key, queues in offsets.items():
            self.offsets.table[str(key)] = {int(q): int(o) for q, o in queues.items()}
        self.offsets.persist(force=True)
        delay = loads(await self._get(addr, RequestCode.GET_ALL_DELAY_OFFSET)).get("offsetTable") or {}
        if self.schedule is not None:
            self.schedule.offsets = {int(k): int(v) for k, v in delay.items()}
            self.schedule.persist(force=True)
        if self.timer is not None:
            self.timer.adopt(loads(await self._get(addr, RequestCode.GET_TIMER_CHECK_POINT)) or {})
        groups = SubscriptionGroupWrapper.from_json(
            await self._get(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        )
        if groups.data_version != self.groups.data_version:
            self.groups.table.clear()
            self.groups.table.update(groups.subscription_group_table)
            if groups.data_version is not None:
                self.groups.data_version = groups.data_version
            self.groups.persist()

    async def close(self) -> None:
        await self.client.close()
