"""Verbs on ACL 2.0 (Apache 5.3's mqadmin ``createUser`` .. ``listAcl``, with its option letters):
users and their ACLs, on one broker (``-b``) or every master of a cluster (``-c``). A broker with
authentication on answers only a super user: sign with ``--accessKey NAME`` and the password in
``PYROCKETMQ_SECRET_KEY`` (or ``--secretKey``)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, TextIO

from .verb import Verb, one_of, opt

if TYPE_CHECKING:
    from ..admin import Admin

WHERE = one_of(opt("-c", "--clusterName", dest="cluster", help="every master of this cluster"),
               opt("-b", "--brokerAddr", dest="broker", help="one broker (host:port)"))
USERNAME = opt("-u", "--username", required=True, help="the user's name")
SUBJECT = opt("-s", "--subject", required=True, help="whose ACL: User:<username>")


def _items(text: str | None) -> list[str]:
    """mqadmin's comma-separated lists (``-r Topic:a,Group:b``)."""
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _done(out: TextIO, what: str, addrs: list[str]) -> None:
    for addr in addrs:
        out.write(f"{what} {addr} success.\n")


def _json(out: TextIO, doc: object) -> None:
    out.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")


async def create_user(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    _done(out, "create user to", await admin.create_user(args.username, args.password, args.user_type,
                                                         broker_addr=args.broker, cluster=args.cluster))


async def update_user(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    if not (args.password or args.user_type or args.user_status):
        raise argparse.ArgumentTypeError("give one of -p PASSWORD, -t USERTYPE, -s USERSTATUS")
    _done(out, "update user to", await admin.update_user(args.username, args.password, args.user_type,
                                                         args.user_status, broker_addr=args.broker,
                                                         cluster=args.cluster))


async def delete_user(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    _done(out, "delete user from", await admin.delete_user(args.username, broker_addr=args.broker,
                                                           cluster=args.cluster))


async def get_user(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    _json(out, await admin.get_user(args.username, broker_addr=args.broker, cluster=args.cluster))


async def list_user(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    _json(out, await admin.list_users(args.filter, broker_addr=args.broker, cluster=args.cluster))


async def create_acl(admin: Admin, args: argparse.Namespace, out: TextIO, update: bool = False) -> None:
    addrs = await admin.create_acl(args.subject, _items(args.resources), _items(args.actions), args.decision,
                                   _items(args.source_ip), broker_addr=args.broker, cluster=args.cluster,
                                   update=update)
    _done(out, "update acl to" if update else "create acl to", addrs)


async def update_acl(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    await create_acl(admin, args, out, update=True)


async def delete_acl(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    _done(out, "delete acl to", await admin.delete_acl(args.subject, args.resources, broker_addr=args.broker,
                                                       cluster=args.cluster))


async def get_acl(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    _json(out, await admin.get_acl(args.subject, broker_addr=args.broker, cluster=args.cluster))


async def list_acl(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    _json(out, await admin.list_acls(args.subject, args.resource, broker_addr=args.broker,
                                     cluster=args.cluster))


_ENTRY = (
    opt("-r", "--resources", required=True,
        help="resources, comma-separated: Topic:a, Group:g*, Cluster:*, *"),
    opt("-a", "--actions", required=True,
        help="actions, comma-separated: Pub, Sub, Create, Update, Delete, Get, List, All"),
    opt("-d", "--decision", required=True, help="Allow or Deny"),
    opt("-i", "--sourceIp", dest="source_ip", help="source addresses or CIDR blocks, comma-separated"),
)

VERBS = (
    Verb("createUser", "create a user (Normal unless -t Super)", create_user, (
        WHERE, USERNAME, opt("-p", "--password", required=True, help="the user's password"),
        opt("-t", "--userType", dest="user_type", help="Super or Normal"))),
    Verb("updateUser", "change a user's password, type or status", update_user, (
        WHERE, USERNAME, opt("-p", "--password", help="a new password"),
        opt("-t", "--userType", dest="user_type", help="Super or Normal"),
        opt("-s", "--userStatus", dest="user_status", help="enable or disable"))),
    Verb("deleteUser", "delete a user and its ACL", delete_user, (WHERE, USERNAME)),
    Verb("getUser", "a user (JSON)", get_user, (WHERE, USERNAME)),
    Verb("listUser", "the users (JSON)", list_user, (
        WHERE, opt("-f", "--filter", help="only names containing this"))),
    Verb("createAcl", "give a user entries (resources, actions, decision, source IPs) in its ACL",
         create_acl, (WHERE, SUBJECT, *_ENTRY)),
    Verb("updateAcl", "change or add entries of a user's ACL", update_acl, (WHERE, SUBJECT, *_ENTRY)),
    Verb("deleteAcl", "delete a user's ACL, or one resource's entry of it", delete_acl, (
        WHERE, SUBJECT, opt("-r", "--resources", help="only this resource's entry (Topic:a)"))),
    Verb("getAcl", "a user's ACL (JSON)", get_acl, (WHERE, SUBJECT)),
    Verb("listAcl", "the ACLs (JSON)", list_acl, (
        WHERE, opt("-s", "--subject", help="only subjects containing this"),
        opt("-r", "--resource", help="only entries whose resource contains this"))),
)
