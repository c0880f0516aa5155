"""Topic message types (RocketMQ 5's ``message.type`` topic attribute): what a topic accepts, what a
message is, and the ``+key=value`` attribute strings UPDATE_AND_CREATE_TOPIC carries. Pure.

A message is TRANSACTION when it is a half message (``TRAN_MSG=true``), DELAY when it asks for a
delay (a delay level or a 5.x timer property), FIFO when it carries a sharding key (5.x message
group), NORMAL otherwise — Apache 5's rules. A FIFO topic also takes NORMAL messages: 4.x clients
keep order by choosing the queue and mark nothing."""

from __future__ import annotations

from collections.abc import Mapping

MESSAGE_TYPE = "message.type"
TYPES = ("NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED")
_DELAY_KEYS = ("DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "__STARTDELIVERTIME")
_ACCEPTS = {
    "NORMAL": {"NORMAL"},
    "FIFO": {"FIFO", "NORMAL"},
    "DELAY": {"DELAY"},
    "TRANSACTION": {"TRANSACTION"},
}
SUPPORTED_ATTRIBUTES = {MESSAGE_TYPE: TYPES}


class AttributeRefused(ValueError):
    """A topic attribute string or value this broker cannot use; the message says which."""


def message_type(properties: Mapping[str, str]) -> str:
    if properties.get("TRAN_MSG") == "true":
        return "TRANSACTION"
    if any(properties.get(k) not in (None, "", "0") for k in _DELAY_KEYS):
        return "DELAY"
    if properties.get("__SHARDINGKEY"):
        return "FIFO"
    return "NORMAL"


def type_problem(topic: str, topic_type: str | None, properties: Mapping[str, str]) -> str | None:
    """Why a message with ``properties`` may not go to ``topic`` of ``topic_type``, or None."""
    accepted = _ACCEPTS.get(topic_type or "MIXED")
    if accepted is None:
        return None
    kind = message_type(properties)
    if kind in accepted:
        return None
    return (
        f"the topic[{topic}] takes {topic_type} messages, not {kind} ones; send {topic_type} messages to it "
        "or use a topic of the right message type"
    )


def parse_attributes(text: str, current: Mapping[str, str]) -> dict[str, str]:
    """``current`` changed by ``"+message.type=FIFO,-other"`` (RocketMQ 5's attribute syntax)."""
    out = dict(current)
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        op, body = item[0], item[1:]
        key, sep, value = body.partition("=")
        if op not in "+-" or not key or (op == "+" and not sep) or (op == "-" and sep):
            raise AttributeRefused(f"topic attribute {item[:80]!r}: use +key=value to set or -key to remove")
        allowed = SUPPORTED_ATTRIBUTES.get(key)
        if allowed is None:
            raise AttributeRefused(
                f"topic attribute {key[:80]!r} is not supported "
                f"(supported: {', '.join(SUPPORTED_ATTRIBUTES)})"
            )
        if op == "-":
            out.pop(key, None)
        elif value not in allowed:
            raise AttributeRefused(f"topic attribute {key}={value[:40]!r}: use one of {', '.join(allowed)}")
        else:
            out[key] = value
    return out


def format_attributes(attributes: Mapping[str, str]) -> str:
    return ",".join(f"+{k}={v}" for k, v in sorted(attributes.items()))
