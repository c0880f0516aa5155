"""Verbs on per-user quotas (pyrocketmq's own, beyond Apache mqadmin): a user's produced bytes,
consumed bytes and requests per second, on one broker (``-b``) or every master of a cluster
(``-c``). A user over its quota is slowed (its answers come late), never refused. A broker with
authentication on answers only a super user: sign with ``--accessKey NAME`` and the password in
``PYROCKETMQ_SECRET_KEY`` (or ``--secretKey``)."""

from __future__ import annotations

import argparse
import json
import math
from typing import TYPE_CHECKING, TextIO

from .verb import Verb, one_of, opt

if TYPE_CHECKING:
    from ..admin import Admin

WHERE = one_of(opt("-c", "--clusterName", dest="cluster", help="every master of this cluster"),
               opt("-b", "--brokerAddr", dest="broker", help="one broker (host:port)"))
USERNAME = opt("-u", "--username", required=True, help="the user's name")


def rate(text: str) -> float:
    """An argument type: a number per second, 0 (no limit) or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or more, not {text!r}")
    return int(value) if value.is_integer() else value


def _done(out: TextIO, what: str, addrs: list[str]) -> None:
    for addr in addrs:
        out.write(f"{what} {addr} success.\n")


def _json(out: TextIO, doc: object) -> None:
    out.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")


async def update_user_quota(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    limits = (args.produced, args.consumed, args.requests)
    if all(v is None for v in limits):
        raise argparse.ArgumentTypeError(
            "give one of --producedBytesPerSecond, --consumedBytesPerSecond, --requestsPerSecond")
    addrs = await admin.set_user_quota(args.username, produced_bytes_per_second=args.produced,
                                       consumed_bytes_per_second=args.consumed,
                                       requests_per_second=args.requests, broker_addr=args.broker,
                                       cluster=args.cluster)
    _done(out, "update user quota to", addrs)


async def get_user_quota(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    _json(out, await admin.get_user_quota(args.username, broker_addr=args.broker, cluster=args.cluster))


async def delete_user_quota(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    _done(out, "delete user quota from", await admin.delete_user_quota(args.username, broker_addr=args.broker,
                                                                       cluster=args.cluster))


async def list_user_quota(admin: Admin, args: argparse.Namespace, out: TextIO) -> None:
    _json(out, await admin.list_user_quotas(broker_addr=args.broker, cluster=args.cluster))


_LIMITS = (
    opt("--producedBytesPerSecond", dest="produced", type=rate, metavar="N",
        help="bytes the user may send a second (message bodies; 0: no limit)"),
    opt("--consumedBytesPerSecond", dest="consumed", type=rate, metavar="N",
        help="bytes the user's pulls may receive a second (0: no limit)"),
    opt("--requestsPerSecond", dest="requests", type=rate, metavar="N",
        help="requests the user may send a second (0: no limit)"),
)

VERBS = (
    Verb("updateUserQuota", "set a user's quota (the limits given; the others stay)", update_user_quota,
         (WHERE, USERNAME, *_LIMITS)),
    Verb("getUserQuota", "a user's quota (JSON; null: none)", get_user_quota, (WHERE, USERNAME)),
    Verb("deleteUserQuota", "remove a user's quota (no limits)", delete_user_quota, (WHERE, USERNAME)),
    Verb("listUserQuota", "every user's quota (JSON)", list_user_quota, (WHERE,)),
)
