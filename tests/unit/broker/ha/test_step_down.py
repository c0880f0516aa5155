"""A controller-mode master that loses its role (another replica elected while it runs): the sends
still waiting for its in-sync set fail; none is acknowledged on the strength of a single slave, since
the replica the controller chose may not hold what that slave holds."""

from __future__ import annotations

import asyncio

from pyrocketmq.broker.ha.ack_table import AckTable
from pyrocketmq.broker.ha.replica import ReplicaManager
from pyrocketmq.broker.settings import BrokerRole, BrokerSettings


class _HA:
    def __init__(self) -> None:
        self.table = AckTable()

    async def drop_slaves(self) -> None:
        self.table.fail_all()


class _Store:
    def get_max_phy_offset(self) -> int:
        return 500

    def truncate_to(self, offset: int, *, whole: bool = False) -> int:
        return 0


class _Registrar:
    def register_soon(self) -> None:
        pass


def test_a_deposed_master_fails_the_sends_its_in_sync_set_did_not_all_hold(tmp_path) -> None:
    settings = BrokerSettings.from_conf({"storePathRootDir": str(tmp_path), "brokerIP1": "127.0.0.1",
                                         "brokerRole": "SYNC_MASTER"})
    ha = _HA()
    stopped: list[bool] = []

    async def stop_master() -> None:
        stopped.append(True)

    async def scenario() -> list[tuple[int, bool]]:
        manager = ReplicaManager(settings, _Store(), _Registrar(), ha, None,  # type: ignore[arg-type]
                                 start_master=lambda: None, stop_master=stop_master)
        manager.master = True
        t = ha.table
        t.connect("c2"), t.identify("c2", 2)
        t.connect("c3"), t.identify("c3", 3)
        t.set_required(frozenset({2, 3}))
        answers: list[tuple[int, bool]] = []
        for end in (100, 200, 300):
            t.wait(end, 1e9, lambda ok, end=end: answers.append((end, ok)))
        t.ack("c2", 250)  # replica 2 holds up to 250, replica 3 nothing yet
        t.ack("c3", 100)
        assert answers == [(100, True)]
        await manager._step_down()
        await manager.client.close()
        return answers

    answers = asyncio.run(scenario())
    assert answers == [(100, True), (200, False), (300, False)]
    assert settings.identity.role == BrokerRole.SLAVE and stopped == [True]


def test_a_master_cut_off_from_controllers_and_its_in_sync_set_steps_down(tmp_path) -> None:
    """Fenced only when both are out of reach: with a controller answering, or an in-sync slave
    still linked (the controllers lost, sends still acknowledged), the master keeps serving."""
    import time

    from pyrocketmq.broker.ha import replica as replica_mod

    settings = BrokerSettings.from_conf({"storePathRootDir": str(tmp_path), "brokerIP1": "127.0.0.1",
                                         "brokerRole": "SYNC_MASTER"})
    ha = _HA()

    async def stop_master() -> None:
        pass

    async def scenario() -> list[bool]:
        manager = ReplicaManager(settings, _Store(), _Registrar(), ha, None,  # type: ignore[arg-type]
                                 start_master=lambda: None, stop_master=stop_master)
        manager.master = True
        t = ha.table
        t.connect("c2"), t.identify("c2", 2), t.heard("c2", time.monotonic())
        t.set_required(frozenset({2}))
        seen = []
        manager.confirmed_at = time.monotonic()
        seen.append(manager._cut_off())  # the controller answered just now
        manager.confirmed_at = time.monotonic() - replica_mod.FENCE_AFTER_S - 1
        seen.append(manager._cut_off())  # no controller, but the in-sync slave is linked
        t.heard("c2", time.monotonic() - replica_mod.SLAVE_SILENT_S - 1)
        seen.append(manager._cut_off())  # its link still open, but silent: a cut cable
        t.heard("c2", time.monotonic())
        t.disconnect("c2")
        seen.append(manager._cut_off())  # neither: cut off
        t.set_required(frozenset())
        seen.append(manager._cut_off())  # alone in its in-sync set: nobody else could be elected
        await manager.client.close()
        return seen

    assert asyncio.run(scenario()) == [False, False, True, True, False]
