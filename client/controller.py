"""Requests to the controller of controller mode (``pyrocketmq admin electMaster`` and the operator):
the leading instance among ``controllers`` answers; the others say they do not lead."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand

from .errors import MQClientError, MQConnectionError, MQError, MQTimeoutError
from .instance import ClientInstance

_asking: set[asyncio.Future[Any]] = set()
"""Requests still waiting for a controller after their caller had its answer."""


async def _answers(instance: ClientInstance, controllers: str, code: RequestCode, body: dict[str, Any]
                   ) -> AsyncIterator[tuple[str, RemotingCommand | MQError]]:
    """Every controller among ``controllers`` asked at once: ``(address, answer or error)`` as each
    comes (a frozen instance holds nobody up; a caller that stops early leaves it to time out)."""
    data = json.dumps(body).encode()

    async def one(addr: str) -> tuple[str, RemotingCommand | MQError]:
        try:
            resp = await instance.invoke(addr, RemotingCommand.request(code, {}, data), what="controller")
        except (MQConnectionError, MQTimeoutError) as e:
            return addr, e
        return addr, resp

    asks = [asyncio.ensure_future(one(a.strip())) for a in controllers.split(";") if a.strip()]
    for ask in asks:
        _asking.add(ask)
        ask.add_done_callback(_asking.discard)
    for next_answer in asyncio.as_completed(asks):
        yield await next_answer


async def controller_request(instance: ClientInstance, controllers: str, code: RequestCode,
                             body: dict[str, Any]) -> dict[str, Any]:
    """The leading controller's JSON answer; MQClientError with every refusal when none leads."""
    refusals = []
    async for addr, answer in _answers(instance, controllers, code, body):
        if isinstance(answer, MQError):
            refusals.append(f"{addr}: {answer}")
        elif answer.code == ResponseCode.CONTROLLER_NOT_LEADER:
            refusals.append(f"{addr}: {answer.remark}")
        elif answer.code != ResponseCode.SUCCESS:
            raise MQClientError(f"controller {addr} refused: {answer.remark}")
        else:
            instance.controller_leader = addr
            out: dict[str, Any] = json.loads(bytes(answer.payload))
            return out
    raise MQClientError("no leading controller answered: " + "; ".join(sorted(refusals)))


async def controller_groups(instance: ClientInstance, controllers: str) -> dict[str, dict[str, Any]]:
    """Every broker group the controller knows: name → view (master, epoch, in-sync set, replicas)."""
    data = await controller_request(instance, controllers, RequestCode.CONTROLLER_GET_METADATA_INFO, {})
    return {str(g["brokerName"]): g for g in data.get("groups") or []}


async def controller_heard(instance: ClientInstance, controllers: str) -> dict[str, dict[str, int]]:
    """How long ago the controller instances among ``controllers`` last heard each replica, leader or
    not (group → replica id → ms; the shortest among a majority of the instances, or among all that
    answered): what is known of a master's silence while no controller leads. Empty when none
    answered."""
    majority = len([a for a in controllers.split(";") if a.strip()]) // 2 + 1
    out: dict[str, dict[str, int]] = {}
    answered = 0
    async for _, answer in _answers(instance, controllers, RequestCode.CONTROLLER_GET_METADATA_INFO,
                                    {"heard": True}):
        if isinstance(answer, MQError) or answer.code != ResponseCode.SUCCESS:
            continue
        heard: dict[str, dict[str, int]] = json.loads(bytes(answer.payload)).get("heard") or {}
        for group, replicas in heard.items():
            mine = out.setdefault(group, {})
            for rid, ms in replicas.items():
                mine[rid] = min(int(ms), mine.get(rid, int(ms)))
        answered += 1
        if answered >= majority:
            break
    return out


async def elect_master(
    instance: ClientInstance, controllers: str, broker_name: str, replica_id: int
) -> dict[str, Any]:
    """Switch ``broker_name``'s master to ``replica_id`` (a live member of its in-sync set); the new view."""
    return await controller_request(instance, controllers, RequestCode.CONTROLLER_ELECT_MASTER,
                                    {"brokerName": broker_name, "replicaId": replica_id})
