"""Verbs on controller mode: the broker groups a controller knows, a group's master, epoch and in-sync
set, and a switchover to another replica of that set. ``-a`` lists the controllers; the one leading
answers (the others say they do not lead)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, TextIO

from ..controller import controller_groups, elect_master
from ..errors import MQClientError
from .verb import Verb, opt

if TYPE_CHECKING:
    from ..admin import Admin


async def get_controller_meta_data(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    groups = await controller_groups(admin.instance, args.controller)
    out.write(json.dumps({"groups": list(groups.values())}, indent=2, sort_keys=True) + "\n")


async def get_sync_state_set(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    groups = await controller_groups(admin.instance, args.controller)
    if args.broker_name not in groups:
        raise MQClientError(f"the controller knows no broker group {args.broker_name!r}")
    out.write(json.dumps(groups[args.broker_name], indent=2, sort_keys=True) + "\n")


async def elect(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    data = await elect_master(admin.instance, args.controller, args.broker_name, args.replica_id)
    out.write(f"switched the master of {args.broker_name} to replica {data['masterId']} "
              f"({data['masterAddr']}), epoch {data['epoch']}\n")


CONTROLLER = opt("-a", "--controllerAddress", dest="controller", required=True, metavar="ADDR",
                 help="controllers, host:port;host:port (name servers with enableControllerInNamesrv=true)")
BROKER_NAME = opt("-b", "--brokerName", dest="broker_name", required=True, help="broker group")

VERBS = (
    Verb("getControllerMetaData", "every broker group the controller knows (JSON)", get_controller_meta_data,
         (CONTROLLER,)),
    Verb("getSyncStateSet", "a broker group's master, epoch and in-sync set (JSON)", get_sync_state_set,
         (CONTROLLER, BROKER_NAME)),
    Verb("electMaster", "move a broker group's master to another replica of its in-sync set", elect, (
        CONTROLLER,
        BROKER_NAME,
        opt("-i", "--brokerId", dest="replica_id", type=int, required=True,
            help="the replica to make master (its brokerId)"),
    )),
)
