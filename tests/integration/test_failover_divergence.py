"""Three SYNC_MASTER replicas; a record reaches one slave and not the other, and the other is elected.
The slave holding the extra record must cut it at the new master's epoch start before it follows:
else it goes on from its own end, reports offsets the new master has not even written, joins the
in-sync set on the strength of them, and when the new master dies every message it acknowledged is
missing from the replica elected next.

Made deterministic with a switchover to a frozen slave (SIGSTOP): the record (2 MiB, far more than
the socket buffers hold) reaches the frozen slave at most in part, which its promotion cuts, and the
other slave hears of the new master before the frozen one could record where its epoch starts."""

from __future__ import annotations

import asyncio
import json
import os
import signal

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import RemotingError

from .failover import GROUP, controller_group, has_topic, in_sync, read_queue, until, view
from .wire import create_topic, max_phy_offset, send_v2

TOPIC = "DivergenceTopic"


def test_a_slave_holding_more_than_the_elected_one_loses_nothing_it_acknowledged(tmp_path) -> None:
    # the frozen slave stays in the in-sync set though 2 MiB behind, until the switchover names it
    with controller_group(tmp_path, 3, haMaxGapNotInSync=64 << 20) as (ns, replicas):
        asyncio.run(_scenario(ns, replicas))


async def _scenario(ns, replicas) -> None:
    client = RemotingClient()
    try:
        await until("a master with all three in sync", lambda: in_sync(client, ns.addr, 3))
        old = (await view(client, ns.addr))["masterId"]
        elected, holder = sorted(r for r in replicas if r != old)
        assert (await client.invoke(replicas[old].addr, create_topic(TOPIC, 1), 10)).code == 0
        for rid in (elected, holder):
            await until(f"the topic on replica {rid}",
                        lambda rid=rid: has_topic(client, replicas[rid].addr, TOPIC))
        assert (await client.invoke(replicas[old].addr, send_v2(TOPIC, b"before"), 10)).code == 0

        frozen = replicas[elected].proc.pid
        os.kill(frozen, signal.SIGSTOP)
        try:
            end = await max_phy_offset(client, replicas[old].addr)
            unacked = asyncio.ensure_future(
                client.invoke(replicas[old].addr, send_v2(TOPIC, b"u" * (2 << 20)), 10)
            )
            await until(f"the unacknowledged record on replica {holder}",
                        lambda: _holds_past(client, replicas[holder].addr, end), timeout=10)
            body = json.dumps({"brokerName": GROUP, "replicaId": elected}).encode()
            resp = await client.invoke(
                ns.addr, RemotingCommand.request(RequestCode.CONTROLLER_ELECT_MASTER, {}, body), 5
            )
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            await asyncio.sleep(1.2)  # the others' heartbeats name the new master, its epoch start unknown
        finally:
            os.kill(frozen, signal.SIGCONT)
        assert (await unacked).code != ResponseCode.SUCCESS

        await until(f"replica {elected} writable", lambda: _writable(client, ns.addr, elected))
        acked: dict[int, str] = {}  # queue offset → body
        for i in range(20):
            await until(f"m-{i} acknowledged by replica {elected}",
                        lambda i=i: _send_ok(client, replicas[elected].addr, f"m-{i}", acked))
        await until("all three in sync again", lambda: in_sync(client, ns.addr, 3))

        replicas[elected].kill9()
        await until("the next master writable",
                    lambda: _writable(client, ns.addr, *(r for r in replicas if r != elected)), timeout=30)
        nxt = (await view(client, ns.addr))["masterId"]
        stored = await read_queue(client, replicas[nxt].addr, TOPIC, 0)
        missing = {off: body for off, body in acked.items() if stored.get(off) != body}
        assert not missing, f"replica {nxt} lacks {len(missing)} of the {len(acked)} acknowledged: {missing}"
    finally:
        await client.close()


async def _holds_past(client: RemotingClient, addr: str, end: int) -> bool:
    return await max_phy_offset(client, addr) > end + (2 << 20)


async def _writable(client: RemotingClient, ns: str, *rids: int) -> bool:
    v = await view(client, ns)
    return v.get("masterId") in rids and v["epochStart"] >= 0


async def _send_ok(client: RemotingClient, addr: str, body: str, acked: dict[int, str]) -> bool:
    try:
        resp = await client.invoke(addr, send_v2(TOPIC, body.encode()), 5)
    except RemotingError:
        return False
    if resp.code != ResponseCode.SUCCESS:
        return False
    acked[int(resp.ext_fields["queueOffset"])] = body
    return True
