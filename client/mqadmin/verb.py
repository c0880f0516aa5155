"""What one ``pyrocketmq admin`` verb is, declared in one place: the mqadmin command it is, its help,
its options and its handler.

A verb is called by the name of the Apache ``mqadmin`` command it mirrors, with that command's flags
and output, so scripts and habits carry over: ``Verb.mqadmin`` is both. The ``-n`` name-server option
and the TLS/ACL options every verb takes are added by the registry, not declared per verb.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from ..admin import Admin

Handler = Callable[["Admin", argparse.Namespace, TextIO], Awaitable[None]]
"""Does the verb's work through an open :class:`~pyrocketmq.client.admin.Admin` and writes its
output; a refusal from the cluster is an :class:`~pyrocketmq.client.errors.MQError`."""


@dataclass(frozen=True, slots=True)
class Opt:
    """One option of a verb, as ``ArgumentParser.add_argument`` takes it (see :func:`opt`)."""

    flags: tuple[str, ...]
    help: str
    dest: str | None = None
    type: Callable[[str], object] | None = None
    default: object = None
    required: bool = False
    switch: bool = False
    """A flag that takes no value (``store_true``)."""
    metavar: str | None = None

    def add_to(self, parser: argparse._ActionsContainer) -> None:
        if self.switch:
            parser.add_argument(*self.flags, dest=self.dest, action="store_true", help=self.help)
        else:
            parser.add_argument(*self.flags, dest=self.dest, type=self.type or str, default=self.default,
                                required=self.required, help=self.help, metavar=self.metavar)


def opt(
    *flags: str,
    help: str,
    dest: str | None = None,
    type: Callable[[str], object] | None = None,
    default: object = None,
    required: bool = False,
    switch: bool = False,
    metavar: str | None = None,
) -> Opt:
    """``opt("-t", "--topic", required=True, help="topic name")``; ``help=argparse.SUPPRESS`` hides
    an option mqadmin takes that changes nothing here."""
    return Opt(flags, help, dest, type, default, required, switch, metavar)


@dataclass(frozen=True, slots=True)
class OneOf:
    """Options of which exactly one must be given (``-c CLUSTER`` or ``-b BROKER``)."""

    opts: tuple[Opt, ...]

    def add_to(self, parser: argparse._ActionsContainer) -> None:
        group = parser.add_mutually_exclusive_group(required=True)
        for o in self.opts:
            o.add_to(group)


def one_of(*opts: Opt) -> OneOf:
    return OneOf(opts)


@dataclass(frozen=True, slots=True)
class Verb:
    """``Verb("topicList", "list every topic", topic_list)``: a verb's whole declaration."""

    mqadmin: str
    """The verb's name: the Apache mqadmin command it mirrors (``updateTopic``, ``consumerProgress``…)."""
    help: str
    run: Handler
    options: tuple[Opt | OneOf, ...] = ()

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        for o in self.options:
            o.add_to(parser)


# -- options several verbs take, alike --------------------------------------------------------------

TOPIC = opt("-t", "--topic", required=True, help="topic name")
WHERE = (
    opt("-b", "--brokerAddr", dest="broker", help="one broker (host:port)"),
    opt("-c", "--clusterName", dest="cluster", help="every master of a cluster"),
)
"""``-b BROKER`` or ``-c CLUSTER`` (every master of it): :meth:`Admin.target_brokers`' two ways."""
