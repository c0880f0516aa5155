"""ACL 2.0 administration on the wire (Apache RocketMQ 5.3's AUTH_* requests): their headers and
the JSON bodies they carry, declared as :mod:`.header` declares the broker's. Pure codec, no I/O.

=====  ===============  ======================================  ======================================
code   request          header fields                           body
=====  ===============  ======================================  ======================================
3001   AUTH_CREATE_USER  ``username``                           UserInfo
3002   AUTH_UPDATE_USER  ``username``                           UserInfo (only the fields to change)
3003   AUTH_DELETE_USER  ``username``                           —
3004   AUTH_GET_USER     ``username``                           answer: UserInfo (none: no such user)
3005   AUTH_LIST_USER    ``filter`` (a substring of the name)   answer: [UserInfo] (none: no user)
3006   AUTH_CREATE_ACL   ``subject`` (``User:<name>``)           AclInfo
3007   AUTH_UPDATE_ACL   ``subject``                            AclInfo
3008   AUTH_DELETE_ACL   ``subject, policyType?, resource?``    —
3009   AUTH_GET_ACL      ``subject``                            answer: AclInfo (none: no ACL)
3010   AUTH_LIST_ACL     ``subjectFilter?, resourceFilter?``    answer: [AclInfo] (none: no ACL)
=====  ===============  ======================================  ======================================

Bodies (standard JSON, Apache's field names)::

    UserInfo  {"username": "alice", "password": "...", "userType": "Normal", "userStatus": "enable"}
    AclInfo   {"subject": "User:alice",
               "policies": [{"policyType": "Custom",
                             "entries": [{"resource": "Topic:orders*", "actions": ["Pub", "Get"],
                                          "sourceIps": ["10.0.0.0/8"], "decision": "Allow"}]}]}

Every header field is optional on the wire (Apache declares none ``@CFNotNull``); the broker says
which one is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

import orjson

from .header import Header


class UserInfo(TypedDict, total=False):
    username: str
    password: str
    userType: str
    """``Super`` or ``Normal``."""
    userStatus: str
    """``enable`` or ``disable``."""


class PolicyEntryInfo(TypedDict, total=False):
    resource: str
    """``Topic:name``, ``Group:prefix*``, ``Cluster:*``, ``*``…"""
    actions: list[str]
    sourceIps: list[str]
    decision: str
    """``Allow`` or ``Deny``."""


class PolicyInfo(TypedDict, total=False):
    policyType: str
    """``Custom`` (the default) or ``Default``."""
    entries: list[PolicyEntryInfo]


class AclInfo(TypedDict, total=False):
    subject: str
    policies: list[PolicyInfo]


def decode_object(body: bytes | bytearray | memoryview | None, what: str) -> dict[str, Any]:
    """The JSON object in a request's body; ValueError saying what is wrong otherwise."""
    if not body:
        raise ValueError(f"the request carries no {what} body")
    try:
        doc = orjson.loads(bytes(body))
    except orjson.JSONDecodeError as e:
        raise ValueError(f"the {what} body is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"the {what} body is not a JSON object")
    return doc


def decode_list(body: bytes | bytearray | memoryview | None) -> list[dict[str, Any]]:
    """An answer's JSON list of objects (an absent body: none)."""
    if not body:
        return []
    doc = orjson.loads(bytes(body))
    if not isinstance(doc, list) or not all(isinstance(d, dict) for d in doc):
        raise ValueError("the answer is not a JSON list of objects")
    return doc


@dataclass(frozen=True, slots=True)
class UserRequestHeader(Header):
    """AUTH_CREATE_USER, AUTH_UPDATE_USER, AUTH_DELETE_USER and AUTH_GET_USER."""

    username: str | None = None


@dataclass(frozen=True, slots=True)
class ListUsersRequestHeader(Header):
    filter: str | None = None


@dataclass(frozen=True, slots=True)
class AclRequestHeader(Header):
    """AUTH_CREATE_ACL, AUTH_UPDATE_ACL and AUTH_GET_ACL."""

    subject: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteAclRequestHeader(Header):
    subject: str | None = None
    policy_type: str | None = None
    resource: str | None = None
    """One resource's entry (its key, ``Topic:foo``); absent: the subject's whole ACL."""


@dataclass(frozen=True, slots=True)
class ListAclsRequestHeader(Header):
    subject_filter: str | None = None
    resource_filter: str | None = None
