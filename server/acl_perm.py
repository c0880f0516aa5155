"""The plain ACL's permission bits (Apache ``Permission``) and the test of a needed permission against
an owned one. Pure; shared by the accounts (:mod:`.acl`) and the table of what requests need
(:mod:`.acl_table`).

A resource is a topic name, or ``%RETRY%<group>`` for a group (ACL 1.0 keeps a group's rights on its
retry topic). ``ANY`` is only ever *needed*, never owned: it asks for PUB or SUB, whichever.

The broker's internal topics (delayed, timer and half messages, transaction op records) hold other
topics' messages: an account's default topic permission does not cover them (pulling
``SCHEDULE_TOPIC_XXXX`` would read every topic's delayed messages), only an explicit grant does, or
an admin account.

>>> check_permission(SUB, PUB | SUB), check_permission(ANY, PUB), check_permission(PUB, SUB)
(True, True, False)
"""

from __future__ import annotations

from typing import TypeAlias

from pyrocketmq.remoting.names import NOT_ALLOWED_SEND_TOPICS, RETRY_GROUP_TOPIC_PREFIX

DENY, ANY, PUB, SUB = 1, 2, 4, 8

Needs: TypeAlias = dict[str, int]
"""Resource (topic, or ``%RETRY%<group>``) → the permission a request needs on it."""
INTERNAL_TOPICS = NOT_ALLOWED_SEND_TOPICS
"""Topics holding other topics' messages (the ones no producer may send to): no default permission
covers them."""


def check_permission(needed: int, owned: int) -> bool:
    """Apache ``Permission.checkPermission``."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def group_resource(group: str) -> str:
    """The resource that holds a group's rights: ``%RETRY%<group>``."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def is_group_resource(resource: str) -> bool:
    return resource.startswith(RETRY_GROUP_TOPIC_PREFIX)


def describe(resource: str) -> str:
    """``group:<name>`` or ``topic:<name>``, as Apache names a resource in a refusal."""
    if is_group_resource(resource):
        return "group:" + resource[len(RETRY_GROUP_TOPIC_PREFIX):]
    return "topic:" + resource
