"""``pyrocketmq admin`` commands for controller mode, with mqadmin's names: ``getControllerMetaData``,
``getSyncStateSet`` and ``electMaster`` (a switchover to a replica of the group's in-sync set).
``-a`` lists the controllers; the one leading answers (the others say they do not lead)."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from .cli_common import _add_ns
from .controller import controller_groups, elect_master
from .errors import MQClientError

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


async def run(cmd: str, args: argparse.Namespace, admin: Any, out: TextIO) -> int:
    groups: dict[str, Any]
    if cmd == "getControllerMetaData":
        groups = await controller_groups(admin.instance, args.controller)
        data: dict[str, Any] = {"groups": list(groups.values())}
    elif cmd == "getSyncStateSet":
        groups = await controller_groups(admin.instance, args.controller)
        if args.broker_name not in groups:
            raise MQClientError(f"the controller knows no broker group {args.broker_name!r}")
        data = groups[args.broker_name]
    else:
        data = await elect_master(admin.instance, args.controller, args.broker_name, args.replica_id)
        out.write(f"switched the master of {args.broker_name} to replica {data['masterId']} "
                  f"({data['masterAddr']}), epoch {data['epoch']}\n")
        return 0
    out.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return 0
