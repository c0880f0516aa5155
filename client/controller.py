"""Requests to the controller of controller mode (``pyrocketmq admin electMaster`` and the operator):
the leading instance among ``controllers`` answers; the others say they do not lead."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand

from .errors import MQClientError, MQConnectionError, MQTimeoutError
from .instance import ClientInstance


async def controller_request(instance: ClientInstance, controllers: str, code: RequestCode,
                             body: dict[str, Any]) -> dict[str, Any]:
    """The leading controller's JSON answer; MQClientError with every refusal when none leads."""
    refusals = []
    addrs = [a.strip() for a in controllers.split(";") if a.strip()]
    if instance.controller_leader in addrs:  # the leader of last time first: a lost one costs a timeout
        addrs.remove(instance.controller_leader)
        addrs.insert(0, instance.controller_leader)
    for addr in addrs:
        try:
            resp = await instance.invoke(addr, RemotingCommand.request(code, {}, json.dumps(body).encode()),
                                         what="controller")
        except (MQConnectionError, MQTimeoutError) as e:
            refusals.append(f"{addr}: {e}")
            continue
        if resp.code == ResponseCode.CONTROLLER_NOT_LEADER:
            refusals.append(f"{addr}: {resp.remark}")
            continue
        if resp.code != ResponseCode.SUCCESS:
            raise MQClientError(f"controller {addr} refused: {resp.remark}")
        instance.controller_leader = addr
        out: dict[str, Any] = json.loads(bytes(resp.payload))
        return out
    raise MQClientError("no leading controller answered: " + "; ".join(refusals))


async def controller_groups(instance: ClientInstance, controllers: str) -> dict[str, dict[str, Any]]:
    """Every broker group the controller knows: name → view (master, epoch, in-sync set, replicas)."""
    data = await controller_request(instance, controllers, RequestCode.CONTROLLER_GET_METADATA_INFO, {})
    return {str(g["brokerName"]): g for g in data.get("groups") or []}


async def controller_heard(instance: ClientInstance, controllers: str) -> dict[str, dict[str, int]]:
    """How long ago any controller instance among ``controllers`` last heard each replica, leader or
    not (group → replica id → ms; the shortest of the instances that answered): what is known of a
    master's silence while no controller leads. Empty when none answered."""
    addrs = [a.strip() for a in controllers.split(";") if a.strip()]
    body = json.dumps({"heard": True}).encode()

    async def ask(addr: str) -> dict[str, dict[str, int]]:
        try:
            resp = await instance.invoke(addr, RemotingCommand.request(
                RequestCode.CONTROLLER_GET_METADATA_INFO, {}, body), what="controller")
        except (MQConnectionError, MQTimeoutError):
            return {}
        if resp.code != ResponseCode.SUCCESS:
            return {}
        heard: dict[str, dict[str, int]] = json.loads(bytes(resp.payload)).get("heard") or {}
        return heard

    out: dict[str, dict[str, int]] = {}
    for answer in await asyncio.gather(*(ask(a) for a in addrs)):
        for group, replicas in answer.items():
            mine = out.setdefault(group, {})
            for rid, ms in replicas.items():
                mine[rid] = min(int(ms), mine.get(rid, int(ms)))
    return out


async def elect_master(
    instance: ClientInstance, controllers: str, broker_name: str, replica_id: int
) -> dict[str, Any]:
    """Switch ``broker_name``'s master to ``replica_id`` (a live member of its in-sync set); the new view."""
    return await controller_request(instance, controllers, RequestCode.CONTROLLER_ELECT_MASTER,
                                    {"brokerName": broker_name, "replicaId": replica_id})
