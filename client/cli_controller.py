"""``pyrocketmq admin`` commands for controller mode, with mqadmin's names: ``getControllerMetaData``,
``getSyncStateSet`` and ``electMaster`` (a switchover to a replica of the group's in-sync set).
``-a`` lists the controllers; the one leading answers (the others say they do not lead)."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand

from .cli_common import _add_ns
from .errors import MQClientError, MQConnectionError

COMMANDS = frozenset({"getControllerMetaData", "getSyncStateSet", "electMaster"})


def add_parsers(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("getControllerMetaData", help="every broker group the controller knows (JSON)")
    _add_ns(p)
    _controller(p)
    p = sub.add_parser("getSyncStateSet", help="a broker group's master, epoch and in-sync set (JSON)")
    _add_ns(p)
    _controller(p)
    p.add_argument("-b", "--brokerName", dest="broker_name", required=True, help="broker group")
    p = sub.add_parser("electMaster", help="move a broker group's master to another replica of its in-sync set")
    _add_ns(p)
    _controller(p)
    p.add_argument("-b", "--brokerName", dest="broker_name", required=True, help="broker group")
    p.add_argument("-i", "--brokerId", dest="replica_id", type=int, required=True,
                   help="the replica to make master (its brokerId)")


def _controller(p: argparse.ArgumentParser) -> None:
    p.add_argument("-a", "--controllerAddress", dest="controller", required=True, metavar="ADDR",
                   help="controllers, host:port;host:port (name servers with enableControllerInNamesrv=true)")


async def _call(admin: Any, controllers: str, code: RequestCode, body: dict[str, Any]) -> dict[str, Any]:
    refusals = []
    for addr in [a.strip() for a in controllers.split(";") if a.strip()]:
        try:
            resp = await admin.instance.invoke(addr, RemotingCommand.request(code, {}, json.dumps(body).encode()),
                                               what="controller")
        except MQConnectionError as e:
            refusals.append(f"{addr}: {e}")
            continue
        if resp.code == ResponseCode.CONTROLLER_NOT_LEADER:
            refusals.append(f"{addr}: {resp.remark}")
            continue
        if resp.code != ResponseCode.SUCCESS:
            raise MQClientError(f"controller {addr} refused: {resp.remark}")
        out: dict[str, Any] = json.loads(bytes(resp.payload))
        return out
    raise MQClientError("no leading controller answered: " + "; ".join(refusals))


async def run(cmd: str, args: argparse.Namespace, admin: Any, out: TextIO) -> int:
    if cmd == "getControllerMetaData":
        data = await _call(admin, args.controller, RequestCode.CONTROLLER_GET_METADATA_INFO, {})
    elif cmd == "getSyncStateSet":
        data = await _call(admin, args.controller, RequestCode.CONTROLLER_GET_METADATA_INFO,
                           {"brokerName": args.broker_name})
        groups = data.get("groups") or []
        if not groups:
            raise MQClientError(f"the controller knows no broker group {args.broker_name!r}")
        data = groups[0]
    else:
        data = await _call(admin, args.controller, RequestCode.CONTROLLER_ELECT_MASTER,
                           {"brokerName": args.broker_name, "replicaId": args.replica_id})
        out.write(f"switched the master of {args.broker_name} to replica {data['masterId']} "
                  f"({data['masterAddr']}), epoch {data['epoch']}\n")
        return 0
    out.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return 0
