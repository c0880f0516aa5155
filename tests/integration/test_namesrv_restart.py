"""A name server started again at the same address (a restarted pod) knows no broker; the brokers
notice that their connection to it closed and register with the new one within seconds, not at their
next period (30 s)."""

from __future__ import annotations

import asyncio
import time

from pyrocketmq.client import Admin

from .procs import start_broker, start_namesrv


async def _brokers(addr: str) -> set[str]:
    async with Admin(addr) as admin:
        return set((await admin.cluster_info()).broker_addr_table)


def test_a_restarted_name_server_learns_the_brokers_within_seconds(tmp_path):
    ns = start_namesrv(tmp_path, "ns-1")
    procs = [ns]
    try:
        procs.append(start_broker(tmp_path, ns.addr, "broker-a", registerNameServerPeriod=60000))
        assert asyncio.run(_brokers(ns.addr)) == {"broker-a"}
        ns.stop()
        procs.append(ns2 := start_namesrv(tmp_path, "ns-2", port=ns.port))
        began = time.monotonic()
        while asyncio.run(_brokers(ns2.addr)) != {"broker-a"}:
            assert time.monotonic() - began < 15, "the broker did not register with the new name server"
            time.sleep(0.3)
    finally:
        for p in reversed(procs):
            p.stop()
