"""Recall handles (Apache RocketMQ 5.3.2+): what the send of a timer message returns so that its
producer can take the message back before it is due. Pure codec, no I/O.

A handle is text, the URL-safe base64 (with ``=`` padding, as Java's ``Base64.getUrlEncoder()``
writes it) of the UTF-8 string (Apache ``RecallMessageHandle.HandleV1``)::

    v1 <topic> <brokerName> <timestamp> <messageId>

one space between the fields: the version, the topic the message is bound for (not the timer's
own), the broker that holds it, its due time + 1 in epoch milliseconds (Apache floors a due time to
the timer's precision and adds 1 to land in the same slot; ours is exact, the + 1 is kept so that
handles read the same) and the message's id (its ``UNIQ_KEY``, the 5.x message id). Reading is
Java's: missing padding is fine, any other character outside the URL alphabet is not, fields past
the fifth are ignored, and everything that does not read is "recall handle is invalid".

>>> h = RecallHandle.of("Orders", "broker-a", 1_700_000_000_000, "7F0000010001")
>>> h.encode()
'djEgT3JkZXJzIGJyb2tlci1hIDE3MDAwMDAwMDAwMDEgN0YwMDAwMDEwMDAx'
>>> decode_recall_handle(h.encode()) == h, h.due_ms
(True, 1700000000000)
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

VERSION = "v1"
SEPARATOR = " "
INVALID = "recall handle is invalid"
"""Apache's words for a handle that does not read."""

_URL_BASE64 = re.compile(r"[A-Za-z0-9_-]*={0,2}")
_LONG = re.compile(r"[+-]?[0-9]+")


class RecallHandleError(ValueError):
    """The handle does not read (its message is Apache's: "recall handle is invalid")."""

    def __init__(self) -> None:
        super().__init__(INVALID)


@dataclass(frozen=True, slots=True)
class RecallHandle:
    topic: str
    broker_name: str
    timestamp: str
    """The due time + 1 (epoch ms, decimal), as the handle holds it (Apache reads the field only when
    it judges the recall: a non-number is then "timestamp invalid")."""
    message_id: str

    def encode(self) -> str:
        raw = SEPARATOR.join((VERSION, self.topic, self.broker_name, self.timestamp, self.message_id))
        return base64.urlsafe_b64encode(raw.encode()).decode("ascii")

    @property
    def due_ms(self) -> int | None:
        """When the message is due (the timestamp - 1), or None when the timestamp is not a number as
        Java's ``NumberUtils.toLong`` reads one (an optional sign and digits, within 64 bits)."""
        if _LONG.fullmatch(self.timestamp) is None or not -(2**63) <= int(self.timestamp) < 2**63:
            return None
        return int(self.timestamp) - 1

    @classmethod
    def of(cls, topic: str, broker_name: str, due_ms: int, message_id: str) -> RecallHandle:
        """The handle of a message of ``topic`` held by ``broker_name`` until ``due_ms``."""
        return cls(topic, broker_name, str(due_ms + 1), message_id)


def decode_recall_handle(handle: str) -> RecallHandle:
    """The handle's fields; :class:`RecallHandleError` when it does not read."""
    if not handle or _URL_BASE64.fullmatch(handle) is None:
        raise RecallHandleError()
    try:
        raw = base64.urlsafe_b64decode(handle + "=" * (-len(handle) % 4)).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        raise RecallHandleError() from None
    items = raw.split(SEPARATOR)
    while items and not items[-1]:  # Java's String.split drops trailing empty strings
        items.pop()
    if len(items) < 5 or items[0] != VERSION:
        raise RecallHandleError()
    return RecallHandle(items[1], items[2], items[3], items[4])
