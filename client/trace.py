"""Message traces in Apache RocketMQ 4.x's format (``RMQ_SYS_TRACE_TOPIC``): what a producer writes
after each send (``Pub``), and reading any client's trace records back (``queryMsgTraceById``). Pure.

A trace message's body is records separated by ``\\x02``, fields by ``\\x01``; its keys are the traced
message ids (and keys), so the brokers' index finds them::

    Pub  timestamp region group topic msgId tags keys storeHost bodyLength costTime msgType
         offsetMsgId success
    SubBefore  timestamp region group requestId msgId retryTimes keys
    SubAfter   requestId msgId costTime success keys [contextCode [timestamp group]]
    EndTransaction  timestamp region group topic msgId tags keys storeHost msgType transactionId
                    state fromCheck
"""

from __future__ import annotations

from dataclasses import dataclass

CONTENT = "\x01"
FIELD = "\x02"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
TRACE_PRODUCER_GROUP = "_INNER_TRACE_PRODUCER-DEFAULT"
REGION = "DefaultRegion"
MSG_TYPE_NORMAL, MSG_TYPE_HALF, MSG_TYPE_COMMIT, MSG_TYPE_DELAY = 0, 1, 2, 3
"""Java ``MessageType`` ordinals."""


@dataclass(frozen=True, slots=True)
class _MessageTrace:
    """What every trace of one sent message starts with; a trace message is indexed by its id and keys."""

    timestamp: int
    group: str
    topic: str
    msg_id: str
    tags: str
    keys: str
    store_host: str

    def trace_keys(self) -> list[str]:
        """What the trace message is indexed by: the message id and its keys."""
        return [self.msg_id, *(k for k in (self.keys or "").split(" ") if k)]


@dataclass(frozen=True, slots=True)
class PubTrace(_MessageTrace):
    body_length: int
    cost_ms: int
    msg_type: int
    offset_msg_id: str
    success: bool
    region: str = REGION

    def encode(self) -> str:
        fields = ("Pub", self.timestamp, self.region, self.group, self.topic, self.msg_id, self.tags or "",
                  self.keys or "", self.store_host, self.body_length, self.cost_ms, self.msg_type,
                  self.offset_msg_id, "true" if self.success else "false")  # fmt: skip
        return CONTENT.join(str(f) for f in fields) + FIELD


@dataclass(frozen=True, slots=True)
class EndTransactionTrace(_MessageTrace):
    """How a transaction ended (Java's ``EndTransactionTraceHookImpl``); ``state`` in Java's names."""

    transaction_id: str
    state: str  # COMMIT_MESSAGE, ROLLBACK_MESSAGE, UNKNOW
    from_check: bool
    region: str = REGION

    def encode(self) -> str:
        fields = ("EndTransaction", self.timestamp, self.region, self.group, self.topic, self.msg_id,
                  self.tags, self.keys, self.store_host, MSG_TYPE_COMMIT, self.transaction_id, self.state,
                  "true" if self.from_check else "false")  # fmt: skip
        return CONTENT.join(str(f) for f in fields) + FIELD


@dataclass(frozen=True, slots=True)
class ConsumeTrace:
    """A listener call's records: one ``SubBefore`` per message when it starts and, with ``after``,
    one ``SubAfter`` per message when it ended (Java's ``ConsumeMessageTraceHookImpl``)."""

    group: str
    request_id: str
    messages: tuple[tuple[str, int, str], ...]  # (msg id, reconsume times, keys)
    timestamp: int
    after: tuple[int, bool, int] | None = None  # (cost ms, success, end timestamp)
    region: str = REGION

    def encode(self) -> str:
        if self.after is None:
            return "".join(CONTENT.join(("SubBefore", str(self.timestamp), self.region, self.group,
                                         self.request_id, mid, str(times), keys)) + FIELD
                           for mid, times, keys in self.messages)  # fmt: skip
        cost, ok, ended = self.after
        return "".join(CONTENT.join(("SubAfter", self.request_id, mid, str(cost), "true" if ok else "false",
                                     keys, "0" if ok else "4", str(ended), self.group)) + FIELD
                       for mid, _, keys in self.messages)  # fmt: skip

    def trace_keys(self) -> list[str]:
        return [k for mid, _, keys in self.messages for k in (mid, *(x for x in keys.split(" ") if x))]


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One record read back: enough for ``queryMsgTraceById``."""

    kind: str  # Pub, SubBefore, SubAfter, EndTransaction
    msg_id: str
    group: str = ""
    timestamp: int = 0
    cost_ms: int = 0
    success: bool = True
    topic: str = ""
    request_id: str = ""


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def decode_traces(data: str) -> list[TraceRecord]:
    """Every record of a trace message's body (unknown or short ones skipped)."""
    out: list[TraceRecord] = []
    for record in data.split(FIELD):
        f = record.split(CONTENT)
        kind = f[0]
        if kind == "Pub" and len(f) >= 13:
            success = f[13] if len(f) >= 14 else f[12]
            out.append(
                TraceRecord("Pub", f[5], f[3], _int(f[1]), _int(f[10]), success.lower() == "true", f[4])
            )
        elif kind == "SubBefore" and len(f) >= 8:
            out.append(TraceRecord("SubBefore", f[5], f[3], _int(f[1]), request_id=f[4]))
        elif kind == "SubAfter" and len(f) >= 6:
            ts, group = (_int(f[7]), f[8]) if len(f) >= 9 else (0, "")
            out.append(
                TraceRecord("SubAfter", f[2], group, ts, _int(f[3]), f[4].lower() == "true", request_id=f[1])
            )
        elif kind == "EndTransaction" and len(f) >= 13:
            out.append(TraceRecord("EndTransaction", f[5], f[3], _int(f[1]), topic=f[4]))
    return out
