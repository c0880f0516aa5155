"""Every ``pyrocketmq admin`` verb, in one table, and the one way a verb runs.

Where a verb goes — the module of the thing it acts on (its mqadmin name says which):

- ``topic.py``: topics — create, delete, list, route, queue offsets, the clusters serving one;
- ``group.py``: consumer and producer groups — create, delete, members, subscriptions, offsets
  (progress and lag, reset, copy, what online consumers hold);
- ``message.py``: stored messages — lookups by id, unique id, key, queue offset or time; traces;
- ``cluster.py``: clusters and brokers — members, runtime figures, configuration, round trips,
  every topic's traffic;
- ``controller.py``: controller mode — broker groups' masters and in-sync sets, elections;
- ``acl.py``: ACL 2.0 — users and their ACLs;
- ``quota.py``: per-user quotas — produced and consumed bytes, requests per second.

A new kind of thing gets a module of its own and a line in
:data:`SECTIONS`. Each module declares its verbs once, in its ``VERBS`` table (:class:`~.verb.Verb`:
mqadmin name, help, options, handler); the parser of ``pyrocketmq admin`` and its ``--help``
listing are generated from :data:`SECTIONS`, and :func:`run_admin` finds the verb by name and runs
its handler with an open :class:`~pyrocketmq.client.admin.Admin`.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from ..cli_common import Parser, _add_ns, client_settings
from . import acl, cluster, controller, group, message, quota, topic
from .verb import Verb


@dataclass(frozen=True, slots=True)
class Section:
    """One module's verbs, under the title ``--help`` shows them with."""

    title: str
    verbs: tuple[Verb, ...]


SECTIONS = (
    Section("topics", topic.VERBS),
    Section("consumer and producer groups, their offsets", group.VERBS),
    Section("messages", message.VERBS),
    Section("clusters and brokers", cluster.VERBS),
    Section("controller mode", controller.VERBS),
    Section("users and ACLs (ACL 2.0)", acl.VERBS),
    Section("per-user quotas", quota.VERBS),
)


def index(sections: tuple[Section, ...]) -> dict[str, Verb]:
    """Verbs by name; a name declared twice is a mistake caught at import."""
    verbs: dict[str, Verb] = {}
    for section in sections:
        for verb in section.verbs:
            if verb.mqadmin in verbs:
                raise ValueError(f"admin verb {verb.mqadmin!r} is declared twice")
            verbs[verb.mqadmin] = verb
    return verbs


VERBS: Mapping[str, Verb] = index(SECTIONS)

DESCRIPTION = ("Apache mqadmin's commands, under its names, with its flags and output. "
               "'pyrocketmq admin <command> -h' shows a command's options.")


def listing(sections: tuple[Section, ...] = SECTIONS, width: int = 100) -> str:
    """The verbs under their sections' titles, each with its help: the end of ``admin --help``."""
    column = 2 + max(len(v.mqadmin) for s in sections for v in s.verbs) + 2
    blocks = []
    for s in sections:
        lines = [f"{s.title}:"]
        for v in s.verbs:
            lines.append(textwrap.fill(v.help, width, initial_indent=f"  {v.mqadmin}".ljust(column),
                                       subsequent_indent=" " * column))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def add_parser(sub: argparse._SubParsersAction[Parser]) -> tuple[Parser, dict[str, Parser]]:
    """``admin`` and a sub-parser per verb (the name-server and TLS/ACL options first, then the
    verb's); returns the ``admin`` parser and the verbs' parsers by name."""
    admin = sub.add_parser("admin", help="administer a cluster (mqadmin commands)",
                           description=textwrap.fill(DESCRIPTION, 100), epilog=listing(),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs_sub = admin.add_subparsers(dest="admin_command", metavar="<command>", parser_class=Parser,
                                     help="one of the commands below")
    verbs_sub.required = True
    parsers: dict[str, Parser] = {}
    for verb in VERBS.values():
        p = verbs_sub.add_parser(verb.mqadmin, description=verb.help)
        _add_ns(p)
        verb.add_options(p)
        parsers[verb.mqadmin] = p
    return admin, parsers


async def run_admin(args: argparse.Namespace, out: TextIO) -> int:
    """Runs the verb ``args.admin_command`` with an Admin on ``args.namesrv``; its status is 0."""
    from .. import admin  # at run time: ``--help`` needs no client machinery

    verb = VERBS[args.admin_command]
    async with admin.Admin(args.namesrv, client=client_settings(args)) as opened:
        await verb.run(opened, args, out)
    return 0
