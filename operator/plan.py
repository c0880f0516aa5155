"""Decisions of a Broker reconcile that are worth a table of cases. Pure.

Scaling a Broker's ``groups`` down removes the highest groups, but never with data in them that a
consumer still has to read. For each group above ``spec.groups`` the operator gathers
:class:`DrainFacts` (from the name servers and the group's master) and :func:`scale_down_decision`
says what to do:

==========================================  ==============  ============================================
facts                                       action          why
==========================================  ==============  ============================================
annotation force-scale-down: "true"         REMOVE          the user accepts losing unread messages
never served (no ready master, never        REMOVE          nothing was ever written to it
registered)
master unreachable                          WAIT            cannot stop writes or measure the lag
user topics still writable                  STOP_WRITES     producers must go elsewhere first
a consumer group has lag on it              WAIT            its messages are not consumed yet
otherwise                                   REMOVE          drained: writes stopped, every queue read
==========================================  ==============  ============================================
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pyrocketmq.remoting.names import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SYSTEM_GROUPS as SYSTEM_GROUP_NAMES,
    SYSTEM_TOPIC_PREFIXES,
    SYSTEM_TOPICS,
)


class Action(StrEnum):
    REMOVE = "remove"
    STOP_WRITES = "stop-writes"
    WAIT = "wait"


@dataclass(frozen=True, slots=True)
class DrainFacts:
    group: str
    served_traffic: bool = False
    """The master was ready or registered at some point (kept in status.groups[].servedTraffic)."""
    registered: bool = False
    """The master is registered with the name servers now."""
    reachable: bool = False
    """The master answered the operator's admin requests."""
    writable_topics: tuple[str, ...] = ()
    """User topics on the master that still take writes."""
    lag: tuple[tuple[str, int], ...] = ()
    """Consumer groups with unconsumed messages on the master: (group, messages)."""
    unread_topics: tuple[tuple[str, int], ...] = ()
    """User topics holding messages on the master that no consumer group has read there: (topic,
    messages). A group's lag covers only topics it has offsets for, so without this a scale-down
    would drop messages sent before any consumer of their topic came by."""
    error: str = ""
    """Why the master could not be asked, if it could not."""


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    reason: str
    message: str


def scale_down_decision(facts: DrainFacts, force: bool = False) -> Decision:
    g = facts.group
    if force:
        return Decision(Action.REMOVE, "Forced", f"{g} removed without draining (force-scale-down)")
    if not facts.served_traffic and not facts.registered:
        return Decision(Action.REMOVE, "NeverServed", f"{g} never served traffic: nothing to drain")
    if not facts.reachable:
        why = f": {facts.error}" if facts.error else ""
        return Decision(
            Action.WAIT,
            "MasterUnreachable",
            f"cannot reach the master of {g} to drain it{why}; set the annotation "
            "pyrocketmq.io/force-scale-down=true to remove it anyway",
        )
    if facts.writable_topics:
        shown = ", ".join(facts.writable_topics[:5]) + (" …" if len(facts.writable_topics) > 5 else "")
        return Decision(Action.STOP_WRITES, "StoppingWrites", f"making the topics of {g} read-only: {shown}")
    if facts.lag:
        shown = ", ".join(f"{group} ({n} messages)" for group, n in facts.lag[:5])
        return Decision(Action.WAIT, "QueuesNotDrained", f"{g} still holds unconsumed messages of {shown}")
    if facts.unread_topics:
        shown = ", ".join(f"{topic} ({n} messages)" for topic, n in facts.unread_topics[:5])
        return Decision(
            Action.WAIT,
            "TopicsNotConsumed",
            f"{g} holds messages no consumer group has read: {shown}; consume them, or set the annotation "
            "pyrocketmq.io/force-scale-down=true to remove the group anyway",
        )
    return Decision(Action.REMOVE, "Drained", f"{g} is drained: writes stopped and every queue consumed")


SYSTEM_GROUPS = frozenset(SYSTEM_GROUP_NAMES)


def is_user_topic(topic: str, cluster: str, broker_names: frozenset[str] = frozenset()) -> bool:
    """Topics producers write to (not system, retry, DLQ, or the cluster/broker-name topics).

    >>> is_user_topic("Orders", "c"), is_user_topic("%RETRY%g", "c"), is_user_topic("c", "c")
    (True, False, False)
    """
    if topic in SYSTEM_TOPICS or topic == cluster or topic in broker_names:
        return False
    return not topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX, *SYSTEM_TOPIC_PREFIXES))


def is_user_group(group: str) -> bool:
    return group not in SYSTEM_GROUPS and not group.startswith("CID_RMQ_SYS_")


def removable_groups(existing: set[int], desired: int) -> list[int]:
    """Indices of existing groups above the desired count, highest first (removed top down).

    >>> removable_groups({0, 1, 2, 3}, 2)
    [3, 2]
    """
    return sorted((i for i in existing if i >= desired), reverse=True)


# -- Rolling updates, one group at a time ---------------------------------------------------------
#
# A change of a Broker's pod template (image, broker.conf, resources) reaches every group's
# StatefulSet at once. Each StatefulSet rolls its own pods slaves first, one at a time, but the groups
# would roll side by side, so the masters of two groups could be down together and a producer would
# find no writable queue. The operator gates the groups with the StatefulSet's ``partition``: a group
# whose pods may change gets 0, a group that has to wait gets ``replicas`` (no ordinal is >= it, so no
# pod is replaced; a pod that dies meanwhile comes back at the old revision).
#
# ==========================================  ==========  ==============================================
# group                                       partition   why
# ==========================================  ==========  ==============================================
# new (no StatefulSet yet)                    0           creating pods is not a roll
# settled (template current, rolled out,      0           nothing to replace (held or not)
# every replica ready)
# rolling (template current, released, not   0           finish what was started
# yet rolled out or not all ready)
# pending (template changed, or held)         replicas    while any group is rolling
# pending, none rolling                       0 for one   the first pending group with a replica not
#                                                         ready, else the lowest index; the rest wait
# ==========================================  ==========  ==============================================


@dataclass(frozen=True, slots=True)
class GroupRollFacts:
    index: int
    exists: bool = True
    template_changed: bool = False
    """The desired pod template differs from the live StatefulSet's."""
    released: bool = True
    """The live StatefulSet's partition lets the controller replace its pods (partition < replicas)."""
    rolled_out: bool = True
    """The controller has every replica at the StatefulSet's current revision."""
    all_ready: bool = True
    """Every replica is Ready."""


def rollout_partitions(facts: list[GroupRollFacts], replicas: int) -> dict[int, int]:
    """The ``partition`` of each group's StatefulSet: at most one group replaces pods at a time.

    >>> rollout_partitions([GroupRollFacts(0, template_changed=True),
    ...                     GroupRollFacts(1, template_changed=True)], 2)
    {0: 0, 1: 2}
    """
    partitions: dict[int, int] = {}
    rolling: list[int] = []
    pending: list[GroupRollFacts] = []
    for f in facts:
        if not f.exists or (not f.template_changed and f.rolled_out and f.all_ready):
            partitions[f.index] = 0
        elif f.template_changed or not f.released:
            pending.append(f)
        else:
            rolling.append(f.index)
            partitions[f.index] = 0
    if pending and not rolling:
        first = next((f for f in pending if not f.all_ready), None) or min(pending, key=lambda f: f.index)
        partitions[first.index] = 0
        pending = [f for f in pending if f is not first]
    for f in pending:
        partitions[f.index] = replicas
    return dict(sorted(partitions.items()))
