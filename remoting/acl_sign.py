"""Request signatures of RocketMQ's plain ACL (Apache 4.x ``AclClientRPCHook``), as pure functions.

A signed request carries ``AccessKey`` (and ``SecurityToken`` if any) and ``Signature``: the
Base64 of HMAC-SHA1, keyed with the secret key, over the UTF-8 concatenation of every other ext
field's *value* in the order of the field names, followed by the body bytes, leaving
``_UNIQUE_KEY_QUERY`` out (Java signs its header's fields, and that flag is added beside the
header; a broker leaves it out too). A broker recomputes it the same way.

>>> ext = {"topic": "T", "AccessKey": "alice01"}
>>> signature(ext, b"hi", "alice-secret-key") == signature({"AccessKey": "alice01", "topic": "T"}, b"hi",
...                                                          "alice-secret-key")
True
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping, Set

from .command import RemotingCommand

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"
ACL_FIELDS = frozenset({ACCESS_KEY, SIGNATURE, SECURITY_TOKEN})
"""The fields a signature adds to a request."""

SERVER_SKIPS = frozenset({SIGNATURE, UNIQUE_KEY_QUERY})
_CLIENT_SKIPS = SERVER_SKIPS


def content(ext: Mapping[str, str], body: bytes | bytearray | memoryview | None,
            skip: Set[str] = _CLIENT_SKIPS) -> bytes:
    """What is signed: the values of ``ext`` by sorted name (``skip`` left out), then the body."""
    joined = "".join(v for k, v in sorted(ext.items()) if k not in skip and v is not None).encode()
    return joined + bytes(body) if body else joined


def signature(ext: Mapping[str, str], body: bytes | bytearray | memoryview | None, secret_key: str,
              skip: Set[str] = _CLIENT_SKIPS) -> str:
    digest = hmac.new(secret_key.encode(), content(ext, body, skip), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def sign(cmd: RemotingCommand, access_key: str, secret_key: str, security_token: str = "") -> None:
    """Add ``AccessKey`` (``SecurityToken``) and ``Signature`` to ``cmd`` as a Java client does."""
    ext = cmd.ext_fields
    ext[ACCESS_KEY] = access_key
    if security_token:
        ext[SECURITY_TOKEN] = security_token
    body = cmd.body if isinstance(cmd.body, (bytes, bytearray, memoryview)) else None
    ext[SIGNATURE] = signature(ext, body, secret_key)
