"""SYNC_MASTER waits on the master's HA server without sockets: answered by acks, by the one
deadline timer, or at once when no slave is connected."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pyrocketmq.broker.ha.service import HAServer
from pyrocketmq.broker.store.values import PutMessageStatus

from ..store.storekit import make_settings, open_store, put


def test_wait_outcomes(tmp_path: Path) -> None:
    store = open_store(make_settings(tmp_path / "s"))

    async def run() -> None:
        ha = HAServer(store)
        end = put(store).wrote_bytes
        assert await ha.wait_for_slave(end, 5.0) == PutMessageStatus.SLAVE_NOT_AVAILABLE
        ha.table.connect("slave")
        acked = ha.wait_for_slave(end, 60.0)
        late = ha.wait_for_slave(end + 1, 0.01)  # an earlier deadline re-arms the one timer
        assert await late == PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        assert not acked.done()
        ha.table.ack("slave", end)
        assert await acked == PutMessageStatus.PUT_OK
        pending = ha.wait_for_slave(end + 10, 60.0)
        await ha.stop()  # shutdown answers every waiter
        assert await pending == PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        assert ha.lag_bytes == store.get_max_phy_offset() - end == 0

    try:
        asyncio.run(run())
    finally:
        store.shutdown()


def test_a_send_waiting_when_the_last_slave_leaves_is_answered_at_once(tmp_path: Path) -> None:
    """A slave restarting (its link closes) must not leave a SYNC send waiting out its deadline: the
    client would time out first and count a stored message as failed."""
    store = open_store(make_settings(tmp_path / "s"))

    async def run() -> None:
        ha = HAServer(store)
        port = await ha.start("127.0.0.1", 0)
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(100):
            if ha.table.connected:
                break
            await asyncio.sleep(0.01)
        assert ha.table.connected == 1
        pending = ha.wait_for_slave(put(store).wrote_bytes, 60.0)
        writer.close()
        assert await asyncio.wait_for(pending, 2.0) == PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        await ha.stop()

    try:
        asyncio.run(run())
    finally:
        store.shutdown()
