"""Three controller instances (in three name servers) replicate the controller's state: losing the
leading one, the others elect a new leader and still fail a group over; with two of the three gone
nobody elects (no split brain) and the master keeps serving."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import time

import yaml

from pyrocketmq.remoting.acl_sign import sign
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import RemotingError

from .failover import (
    GROUP,
    Acked,
    all_stopped,
    count,
    has_topic,
    in_sync,
    lost,
    produce,
    start_controller_namesrv,
    start_replica,
    until,
    view,
)
from .procs import free_port
from .wire import create_topic

TOPIC = "QuorumTopic"
QUEUES = 2


def test_three_controllers_survive_one_loss_and_refuse_to_elect_without_a_majority(tmp_path) -> None:
    _with_group_on_three_controllers(tmp_path, _scenario)


def _with_group_on_three_controllers(tmp_path, scenario) -> None:
    """Three controllers (in three name servers), once one leads a group of two replicas; then
    ``scenario(controllers, addresses, replicas)``; everything stopped afterwards."""
    ports = [free_port() for _ in range(3)]
    peers = ";".join(f"n{i}-127.0.0.1:{p}" for i, p in enumerate(ports))
    with all_stopped() as keep:
        ctls = [keep(start_controller_namesrv(tmp_path, f"namesrv-{i}", port=ports[i], controllerPeers=peers,
                                              controllerSelfId=f"n{i}")) for i in range(3)]
        addrs = ";".join(c.addr for c in ctls)
        asyncio.run(_until_leader(addrs))
        replicas = {rid: keep(start_replica(tmp_path, addrs, rid)) for rid in (1, 2)}
        asyncio.run(scenario(ctls, addrs, replicas))


async def _until_leader(addrs: str) -> None:
    client = RemotingClient()
    try:
        await until("a controller leader", lambda: _has_leader(client, addrs), timeout=30)
    finally:
        await client.close()


async def _has_leader(client: RemotingClient, addrs: str) -> bool:
    await view(client, addrs)
    return True


async def _leader(client: RemotingClient, ctls) -> int:
    for i, c in enumerate(ctls):
        if c.proc.poll() is not None:
            continue
        try:
            resp = await client.invoke(
                c.addr, RemotingCommand.request(RequestCode.CONTROLLER_GET_METADATA_INFO, {}, b"{}"), 2
            )
        except RemotingError:
            continue
        if resp.code == ResponseCode.SUCCESS:
            return i
    raise AssertionError("no controller leads")


async def _scenario(ctls, addrs: str, replicas) -> None:
    client = RemotingClient()
    acked, stop = Acked(), asyncio.Event()
    task = None
    try:
        await until("a master with both replicas in sync", lambda: in_sync(client, addrs))
        first = (await view(client, addrs))["masterId"]
        other = 3 - first
        assert (await client.invoke(replicas[first].addr, create_topic(TOPIC, QUEUES), 10)).code == 0
        await until("the topic on the slave", lambda: has_topic(client, replicas[other].addr, TOPIC))
        task = asyncio.create_task(produce(addrs, TOPIC, stop, acked, "q"))
        await until("100 acknowledged sends", lambda: count(acked, 100))

        # one controller lost (the leader): the other two elect a leader and still fail the group over
        ctls[await _leader(client, ctls)].kill9()
        await until("a new controller leader", lambda: _has_leader(client, addrs), timeout=30)
        replicas[first].kill9()
        await until(
            "the slave elected by the new leader", lambda: _master_is(client, addrs, other), timeout=30
        )
        n = len(acked.sent)
        await until("100 sends acknowledged by the new master", lambda: count(acked, n + 100), timeout=30)
        replicas[first].start()
        await until("the old master back in sync", lambda: in_sync(client, addrs))

        # two lost: no majority, no leader, no election; the master keeps serving
        ctls[await _leader(client, ctls)].kill9()
        await asyncio.sleep(4)  # past the election timeout and the leader's step-down
        survivor = next(c for c in ctls if c.proc.poll() is None)
        resp = await client.invoke(
            survivor.addr, RemotingCommand.request(RequestCode.CONTROLLER_GET_METADATA_INFO, {}, b"{}"), 2
        )
        assert resp.code == ResponseCode.CONTROLLER_NOT_LEADER, (resp.code, resp.remark)
        n = len(acked.sent)
        await until(
            "100 more sends acknowledged without a controller", lambda: count(acked, n + 100), timeout=30
        )
        stop.set()
        await task
        task = None
        elections = replicas[first].log_text().count("elected master")
        replicas[other].kill9()  # the master dies too: nobody may take over
        await asyncio.sleep(6)
        assert replicas[first].log_text().count("elected master") == elections, "elected without a majority"
        missing = await lost(
            client, replicas[first].addr, TOPIC, QUEUES, acked
        )  # the in-sync slave holds them
        assert missing == [], (
            f"{len(missing)} acknowledged message(s) missing on the in-sync slave: {missing[:5]}"
        )
        print(f"\n{len(acked.sent)} acknowledged through a controller loss and a failover, none lost")
    finally:
        stop.set()
        if task is not None:
            await task
        await client.close()



def test_a_leader_frozen_through_a_failover_answers_nothing_stale_and_deposes_nobody_when_it_thaws(
    tmp_path,
) -> None:
    """A frozen machine's controller comes back believing it leads, with the view of before a
    failover: it must not answer with that view (its lease ran out), and its return must not depose
    the leader the others follow (pre-vote), which would risk a needless failover."""
    _with_group_on_three_controllers(tmp_path, _frozen_leader)


async def _frozen_leader(ctls, addrs: str, replicas) -> None:
    client = RemotingClient()
    try:
        await until("a master with both replicas in sync", lambda: in_sync(client, addrs))
        first = (await view(client, addrs))["masterId"]
        frozen = ctls[await _leader(client, ctls)]
        os.kill(frozen.proc.pid, signal.SIGSTOP)
        try:
            await until("a new controller leader", lambda: _has_leader(client, addrs), timeout=30)
            replicas[first].kill9()
            await until(
                "the slave elected by the new leader",
                lambda: _master_is(client, addrs, 3 - first),
                timeout=30,
            )
            leader = await _leader(client, ctls)
            elections = (await view(client, addrs))["elections"]
        finally:
            os.kill(frozen.proc.pid, signal.SIGCONT)
        for _ in range(30):  # 3 s from the thaw: every answer is the current view or a refusal
            try:
                resp = await client.invoke(
                    frozen.addr,
                    RemotingCommand.request(
                        RequestCode.CONTROLLER_GET_METADATA_INFO,
                        {},
                        json.dumps({"brokerName": GROUP}).encode(),
                    ),
                    2,
                )
            except RemotingError:  # still catching up: no answer is not a stale one
                continue
            if resp.code == ResponseCode.SUCCESS:
                answered = json.loads(bytes(resp.payload))["groups"][0]
                assert answered["masterId"] == 3 - first, (
                    f"a thawed controller answered a stale view: {answered}"
                )
            else:
                assert resp.code == ResponseCode.CONTROLLER_NOT_LEADER, (resp.code, resp.remark)
            await asyncio.sleep(0.1)
        assert await _leader(client, ctls) == leader, "the thawed controller deposed the leader"
        v = await view(client, addrs)
        assert (v["masterId"], v["elections"]) == (3 - first, elections), v
    finally:
        await client.close()


def test_a_master_frozen_with_the_leading_controller_is_timed_from_its_last_heartbeat(tmp_path) -> None:
    """A machine holding both the leading controller and the master hangs: the controller that takes
    over heard the master's heartbeats too (brokers report to every controller), so it counts the
    master's silence from the freeze, not from its own election (which is at least the shortest
    election timeout, 1.5 s, later)."""
    _with_group_on_three_controllers(tmp_path, _frozen_leader_and_master)


async def _frozen_leader_and_master(ctls, addrs: str, replicas) -> None:
    client = RemotingClient()
    try:
        await until("a master with both replicas in sync", lambda: in_sync(client, addrs))
        first = (await view(client, addrs))["masterId"]
        leader = ctls[await _leader(client, ctls)]
        live = ";".join(c.addr for c in ctls if c is not leader)  # asked without waiting on the frozen one
        frozen = [leader.proc.pid, replicas[first].proc.pid]
        froze = time.monotonic()
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        try:
            await until("the slave elected by the new leader", lambda: _master_is(client, live, 3 - first),
                        timeout=30)
            elected_after = time.monotonic() - froze
            silent = (await view(client, live))["replicas"][str(first)]["silentMs"]
            frozen_for_ms = (time.monotonic() - froze) * 1000
            heard = [await _heard(client, addr) for addr in live.split(";")]  # the leader and a follower
        finally:
            for pid in frozen:
                os.kill(pid, signal.SIGCONT)
        print(f"\nthe slave elected {elected_after:.1f} s after the leader and the master froze")
        for by_one in heard:  # every instance, leading or not, says how long ago it heard each replica
            assert by_one[str(first)] >= frozen_for_ms - 500 and by_one[str(3 - first)] < 2500, heard
        assert silent >= frozen_for_ms - 500, (
            f"the new leader counts the master silent {silent} ms; it was frozen {frozen_for_ms:.0f} ms ago"
        )
    finally:
        await client.close()


async def _heard(client: RemotingClient, addr: str) -> dict[str, int]:
    resp = await client.invoke(addr, RemotingCommand.request(
        RequestCode.CONTROLLER_GET_METADATA_INFO, {}, json.dumps({"heard": True}).encode()), 2)
    assert resp.code == ResponseCode.SUCCESS, (addr, resp.code, resp.remark)
    heard: dict[str, int] = json.loads(bytes(resp.payload))["heard"][GROUP]
    return heard


async def _master_is(client: RemotingClient, addrs: str, rid: int) -> bool:
    v = await view(client, addrs)
    return v["masterId"] == rid and v["epochStart"] >= 0






def test_controllers_with_acl_sign_their_consensus_and_only_admins_elect(tmp_path) -> None:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(yaml.safe_dump({"accounts": [
        {"accessKey": "brokeradmin", "secretKey": "broker-admin-secret", "admin": True},
        {"accessKey": "alice01", "secretKey": "alice-secret-key", "defaultTopicPerm": "PUB|SUB"},
    ]}))
    admin = {"accessKey": "brokeradmin", "secretKey": "broker-admin-secret"}
    ports = [free_port() for _ in range(3)]
    peers = ";".join(f"n{i}-127.0.0.1:{p}" for i, p in enumerate(ports))
    with all_stopped() as keep:
        ctls = [
            keep(
                start_controller_namesrv(
                    tmp_path,
                    f"namesrv-{i}",
                    port=ports[i],
                    controllerPeers=peers,
                    controllerSelfId=f"n{i}",
                    aclEnable="true",
                    aclConfigFile=acl,
                    **admin,
                )
            )
            for i in range(3)
        ]
        addrs = ";".join(c.addr for c in ctls)
        for rid in (1, 2):
            keep(start_replica(tmp_path, addrs, rid, aclEnable="true", aclConfigFile=acl, **admin))
        asyncio.run(_acl_scenario(addrs))


async def _acl_scenario(addrs: str) -> None:
    signed = RemotingClient(
        sign=functools.partial(sign, access_key="brokeradmin", secret_key="broker-admin-secret")
    )
    alice = RemotingClient(sign=functools.partial(sign, access_key="alice01", secret_key="alice-secret-key"))
    try:
        await until("a master with both replicas in sync (signed heartbeats and consensus)",
                    lambda: in_sync(signed, addrs), timeout=60)
        v = await view(signed, addrs)
        leader = [a for a in addrs.split(";") if await _answers(signed, a)][0]
        elect = RemotingCommand.request(
            RequestCode.CONTROLLER_ELECT_MASTER,
            {},
            json.dumps({"brokerName": "broker-a", "replicaId": 3 - v["masterId"]}).encode(),
        )
        resp = await alice.invoke(leader, elect, 5)
        assert resp.code != ResponseCode.SUCCESS and "Need admin permission" in resp.remark, (
            resp.code,
            resp.remark,
        )
        assert (await view(signed, addrs))["masterId"] == v["masterId"]
    finally:
        await signed.close()
        await alice.close()


async def _answers(client: RemotingClient, addr: str) -> bool:
    resp = await client.invoke(
        addr, RemotingCommand.request(RequestCode.CONTROLLER_GET_METADATA_INFO, {}, b"{}"), 2
    )
    return resp.code == ResponseCode.SUCCESS
