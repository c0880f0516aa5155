"""A replica told of a new master cuts its log at that master's epoch start before following it, and
follows nobody until the controller has recorded that start: a slave may hold more of the last epoch
than the replica elected (a record that reached it and not the other), and replicating on from its
own end would put the new master's acknowledged records after that tail, at offsets the new master
gave to others."""

from __future__ import annotations

import asyncio
import os

from pyrocketmq.broker.ha.replica import ReplicaManager
from pyrocketmq.broker.settings import BrokerSettings


class _Store:
    def __init__(self, end: int) -> None:
        self.end = end

    def get_max_phy_offset(self) -> int:
        return self.end

    def truncate_to(self, offset: int, *, whole: bool = False) -> int:
        dropped, self.end = max(0, self.end - offset), min(self.end, offset)
        return dropped


class _Registrar:
    master_addr: str | None = None
    ha_server_addr: str | None = None


class _HAClient:
    def __init__(self) -> None:
        self.disconnects = 0

    def disconnect(self) -> None:
        self.disconnects += 1


def _view(epoch_start: int) -> dict[str, object]:
    return {"masterId": 2, "masterAddr": "127.0.0.1:2000", "masterHaAddr": "127.0.0.1:2001", "epoch": 2,
            "epochStart": epoch_start, "history": [[1, 0], [2, epoch_start]], "syncStateSet": [2]}


def test_a_slave_follows_a_new_master_only_once_its_epoch_start_says_where_to_cut(tmp_path) -> None:
    settings = BrokerSettings.from_conf({"storePathRootDir": str(tmp_path), "brokerIP1": "127.0.0.1",
                                         "brokerRole": "SYNC_MASTER", "brokerId": "3",
                                         "enableControllerMode": "true", "controllerAddr": "127.0.0.1:1"})
    os.makedirs(settings.store.config_dir, exist_ok=True)
    store, ha_client = _Store(1500), _HAClient()

    async def scenario() -> None:
        manager = ReplicaManager(settings, store, _Registrar(), None, ha_client,  # type: ignore[arg-type]
                                 start_master=lambda: None, stop_master=asyncio.sleep)
        manager.epoch, manager.master_ha = 1, "127.0.0.1:1001"  # following the master of epoch 1
        manager._following = (1, "127.0.0.1:1001")
        try:
            await manager.apply(_view(-1))  # replica 2 elected; it holds the log up to 1000 only
            assert (store.end, manager.epoch, manager.master_ha) == (1500, 1, None)
            assert ha_client.disconnects == 1  # the old master's link is not kept either
            await manager.apply(_view(-1))
            assert (store.end, manager.master_ha) == (1500, None)
            await manager.apply(_view(1000))  # the start recorded: cut there, then follow
            assert (store.end, manager.epoch, manager.master_ha) == (1000, 2, "127.0.0.1:2001")
            manager.load()
            assert manager.epoch == 2
        finally:
            await manager.client.close()

    asyncio.run(scenario())
