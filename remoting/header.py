"""Typed request/response headers: a command's ``extFields`` as frozen dataclasses.

Pure codec, no I/O. Each header is declared once as a dataclass; its fields *are* the table:

- the wire key is the Java field name, derived from the attribute (``consumer_group`` →
  ``consumerGroup``) unless a field says otherwise (``jf("clientID")``);
- the type comes from the annotation: ``int`` (Java ``Integer``, 32 bits), ``Long`` (Java ``Long``,
  64 bits), ``str`` or ``bool`` (``X | None`` is optional); a number outside its Java type's range
  is malformed, as Java's ``Integer.parseInt``/``Long.parseLong`` find it;
- a field without a default is required (Java's ``@CFNotNull``): ``from_command`` raises
  :class:`HeaderError` naming it when it is missing, not a number or out of range.

Values go on the wire as Java writes them (``stringify``): decimal numbers, ``true``/``false``; a
``None`` is left out. From 4.9.5 many requests carry an optional ``bname``; it is ignored.

SEND_MESSAGE comes in two spellings: V1 (code 10) with the long names and V2 (codes 310, 320)
with the one-letter keys ``a``..``n``; :meth:`SendMessageRequestHeader.from_command` reads both.

>>> from pyrocketmq.remoting.command import RemotingCommand
>>> cmd = RemotingCommand.request(14, {"consumerGroup": "cg", "topic": "T", "queueId": 3})
>>> QueryConsumerOffsetRequestHeader.from_command(cmd).queue_id
3
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeAlias, TypeVar

from .command import RemotingCommand, compiled_frames, stringify

H = TypeVar("H", bound="Header")

Long: TypeAlias = int
"""A header field Java declares ``Long`` (64 bits); a plain ``int`` field is Java's ``Integer``."""

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
_RANGES = {"int": INT_RANGE, "Long": LONG_RANGE}


class HeaderError(ValueError):
    """A request header field is missing or malformed; the message names the field."""

    def __init__(self, message: str, field_name: str) -> None:
        super().__init__(message)
        self.field_name = field_name


def jf(java_name: str, default: Any = MISSING) -> Any:
    """A header field whose wire key is not the camelCase of its attribute name."""
    return field(default=default, metadata={"java": java_name})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


_KIND = re.compile(r"^(int|Long|str|bool)\b")

# per field: (attr, wire key, kind, required, label used in errors)
_Spec = tuple[tuple[str, str, str, bool, str], ...]


def _spec_of(cls: type) -> _Spec:
    out = []
    for f in fields(cls):
        m = _KIND.match(str(f.type))
        if m is None:
            raise TypeError(f"{cls.__name__}.{f.name}: header fields are int, Long, str or bool")
        java = f.metadata.get("java") or _camel(f.name)
        required = f.default is MISSING and f.default_factory is MISSING
        out.append((f.name, java, m.group(1), required, repr(java)))
    return tuple(out)


def _cut(raw: str, limit: int = 40) -> str:
    """A value quoted in an error, cut short (a remark is not an echo of whatever was sent)."""
    return raw if len(raw) <= limit else raw[:limit] + "…"


def _read(cls: type[H], ext: dict[str, str], spec: _Spec) -> H:
    kw: dict[str, Any] = {}
    for attr, key, kind, required, label in spec:
        raw = ext.get(key)
        if raw is None or (kind != "str" and (raw == "" or raw == "null")):
            if required:
                raise HeaderError(f"the request header field {label} is missing", key)
            continue
        if kind == "int" or kind == "Long":
            try:
                value = int(raw)
            except ValueError:
                raise HeaderError(
                    f"the request header field {label} is not an integer: {_cut(raw)!r}", key
                ) from None
            low, high = _RANGES[kind]
            if not low <= value <= high:
                java = "an Integer" if kind == "int" else "a Long"
                raise HeaderError(
                    f"the request header field {label} is out of range for {java}: {_cut(raw)}", key
                )
            kw[attr] = value
        elif kind == "bool":
            kw[attr] = raw.strip().lower() == "true"  # Java Boolean.parseBoolean: anything else is false
        else:
            kw[attr] = raw
    return cls(**kw)


def _keys_of(cls: type[Header]) -> frozenset[str]:
    keys = cls.__dict__.get("_keys_cache")
    if keys is None:
        keys = frozenset(key for _, key, *_ in cls.spec())
        type.__setattr__(cls, "_keys_cache", keys)
    return keys


class Header:
    """Base of every header: generic parse/emit driven by the dataclass fields."""

    __slots__ = ()

    @classmethod
    def spec(cls) -> _Spec:
        spec = cls.__dict__.get("_spec_cache")
        if spec is None:
            spec = _spec_of(cls)
            type.__setattr__(cls, "_spec_cache", spec)
        return spec

    @classmethod
    def from_ext(cls: type[H], ext: dict[str, str]) -> H:
        return _read(cls, ext, cls.spec())

    @classmethod
    def from_command(cls: type[H], cmd: RemotingCommand) -> H:
        """The header of ``cmd``; :class:`HeaderError` names a missing or malformed field."""
        return _read(cls, cmd.ext_fields, cls.spec())

    @classmethod
    def wire_keys(cls, cmd: RemotingCommand | None = None) -> frozenset[str]:
        """The ext field names :meth:`from_command` reads (from ``cmd``: a send's V1 or V2 spelling)."""
        return _keys_of(cls)

    def to_ext(self) -> dict[str, str]:
        """Ext fields as Java writes them (``None`` left out)."""
        return stringify({key: getattr(self, attr) for attr, key, *_ in self.spec()})


# -- send ---------------------------------------------------------------------------------------

# V2's one-letter keys, in the order of the V1 fields they stand for
_SEND_V2 = (
    ("producer_group", "a"), ("topic", "b"), ("default_topic", "c"), ("default_topic_queue_nums", "d"),
    ("queue_id", "e"), ("sys_flag", "f"), ("born_timestamp", "g"), ("flag", "h"), ("properties", "i"),
    ("reconsume_times", "j"), ("unit_mode", "k"), ("max_reconsume_times", "l"), ("batch", "m"),
)  # fmt: skip
_SEND_V2_CODES = (310, 320)
_SEND_V2_KEYS = frozenset(short for _, short in _SEND_V2)


def _reads_v2(cmd: RemotingCommand) -> bool:
    """Whether a send is read in the V2 spelling: codes 310/320, or code 10 with ``b`` and no ``topic``."""
    ext = cmd.ext_fields
    return cmd.code in _SEND_V2_CODES or ("b" in ext and "topic" not in ext)


@dataclass(slots=True)  # not frozen: a frozen init costs ~10x a plain one, and every send makes one
class SendMessageRequestHeader(Header):
    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: Long
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: int | None = None

    @classmethod
    def from_command(cls, cmd: RemotingCommand) -> SendMessageRequestHeader:
        """V2 (codes 310/320, keys ``a``..``m``) or V1 (code 10, long names)."""
        ext = cmd.ext_fields
        if _reads_v2(cmd):
            if _send_v2_compiled is not None:  # every send goes through here
                h = _send_v2_compiled(ext)
                if h is not None:
                    return h
            try:  # no generic field loop when the header is well formed
                return _send_v2_fast(ext)
            except (KeyError, ValueError):
                return _read(cls, ext, _send_v2_spec())  # raises the HeaderError naming the field
        return _read(cls, ext, cls.spec())

    @classmethod
    def wire_keys(cls, cmd: RemotingCommand | None = None) -> frozenset[str]:
        return _SEND_V2_KEYS if cmd is not None and _reads_v2(cmd) else _keys_of(cls)

    def to_ext_v2(self) -> dict[str, str]:
        """The one-letter form a 4.x producer sends with SEND_MESSAGE_V2."""
        return stringify({short: getattr(self, attr) for attr, short in _SEND_V2})


_send_v2_compiled: Callable[[dict[str, str]], SendMessageRequestHeader | None] | None = None
"""``_frames.send_v2_header``: the header when every field has the plain form, else None (and
``_send_v2_fast`` or ``_read`` reads it); None when the compiled module is not there."""
if compiled_frames is not None:
    compiled_frames.configure_send_header(SendMessageRequestHeader)
    _send_v2_compiled = compiled_frames.send_v2_header


def _opt_int(raw: str | None) -> int | None:
    return None if raw is None or raw == "" or raw == "null" else int(raw)


def _send_v2_fast(ext: dict[str, str]) -> SendMessageRequestHeader:
    """What ``_read(…, _send_v2_spec())`` gives for a well-formed V2 header (KeyError or ValueError
    otherwise, and the caller falls back to ``_read`` for the error)."""
    get = ext.get
    k, m = get("k"), get("m")
    h = SendMessageRequestHeader(
        ext["a"],
        ext["b"],
        ext["c"],
        int(ext["d"]),
        int(ext["e"]),
        int(ext["f"]),
        int(ext["g"]),
        int(ext["h"]),
        get("i"),
        _opt_int(get("j")),
        k is not None and k.strip().lower() == "true",
        m is not None and m.strip().lower() == "true",
        _opt_int(get("l")),
    )
    low, high = INT_RANGE
    if not (
        low <= h.default_topic_queue_nums <= high
        and low <= h.queue_id <= high
        and low <= h.sys_flag <= high
        and low <= h.flag <= high
        and LONG_RANGE[0] <= h.born_timestamp <= LONG_RANGE[1]
        and (h.reconsume_times is None or low <= h.reconsume_times <= high)
        and (h.max_reconsume_times is None or low <= h.max_reconsume_times <= high)
    ):
        raise ValueError("a field out of its Java type's range")
    return h


@functools.cache
def _send_v2_spec() -> _Spec:
    """SendMessageRequestHeader's spec keyed by the V2 letters; errors name both spellings."""
    short = dict(_SEND_V2)
    return tuple(
        (attr, short[attr], kind, required, f"{short[attr]!r} ({key})")
        for attr, key, kind, required, _ in SendMessageRequestHeader.spec()
    )


@dataclass(frozen=True, slots=True)
class SendMessageResponseHeader(Header):
    msg_id: str
    queue_id: int
    queue_offset: Long
    transaction_id: str | None = None
    recall_handle: str | None = None
    """A timer message's recall handle (Apache 5.3.2+, :mod:`.recall_handle`)."""

    def to_ext(self) -> dict[str, str]:
        ext = Header.to_ext(self)
        # the Java broker adds these to every send answer; clients copy them onto the message
        ext["MSG_REGION"] = "DefaultRegion"
        ext["TRACE_ON"] = "true"
        return ext


@dataclass(frozen=True, slots=True)
class RecallMessageRequestHeader(Header):
    """RECALL_MESSAGE (370): the topic the recalled message is bound for and its recall handle."""

    topic: str
    recall_handle: str
    producer_group: str | None = None


@dataclass(frozen=True, slots=True)
class RecallMessageResponseHeader(Header):
    msg_id: str
    """The recalled message's id (its ``UNIQ_KEY``, as the handle names it)."""


# -- pull and offsets ---------------------------------------------------------------------------


@dataclass(slots=True)  # not frozen, like the send header: every pull makes one
class PullMessageRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: Long
    max_msg_nums: int
    sys_flag: int
    commit_offset: Long
    suspend_timeout_millis: Long
    sub_version: Long
    subscription: str | None = None
    expression_type: str | None = None


@dataclass(frozen=True, slots=True)
class PullMessageResponseHeader(Header):
    """Always all four fields, even on errors: a Java client unboxes them unconditionally."""

    suggest_which_broker_id: Long
    next_begin_offset: Long
    min_offset: Long
    max_offset: Long


@dataclass(frozen=True, slots=True)
class QueryConsumerOffsetRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class QueryConsumerOffsetResponseHeader(Header):
    offset: Long


@dataclass(frozen=True, slots=True)
class UpdateConsumerOffsetRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: Long


@dataclass(frozen=True, slots=True)
class GetMaxOffsetRequestHeader(Header):
    topic: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class GetMinOffsetRequestHeader(Header):
    topic: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class GetEarliestMsgStoretimeRequestHeader(Header):
    topic: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class SearchOffsetRequestHeader(Header):
    topic: str
    queue_id: int
    timestamp: Long


@dataclass(frozen=True, slots=True)
class OffsetResponseHeader(Header):
    """GET_MAX_OFFSET, GET_MIN_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP answer ``offset``."""

    offset: Long


@dataclass(frozen=True, slots=True)
class GetEarliestMsgStoretimeResponseHeader(Header):
    timestamp: Long


# -- clients ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UnregisterClientRequestHeader(Header):
    client_id: str = jf("clientID")
    producer_group: str | None = None
    consumer_group: str | None = None


@dataclass(frozen=True, slots=True)
class GetConsumerListByGroupRequestHeader(Header):
    consumer_group: str


@dataclass(frozen=True, slots=True)
class NotifyConsumerIdsChangedRequestHeader(Header):
    consumer_group: str


@dataclass(frozen=True, slots=True)
class ConsumerSendMsgBackRequestHeader(Header):
    offset: Long
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None


@dataclass(frozen=True, slots=True)
class EndTransactionRequestHeader(Header):
    producer_group: str
    tran_state_table_offset: Long
    commit_log_offset: Long
    commit_or_rollback: int  # 0 unknown, 8 commit, 12 rollback
    msg_id: str
    from_transaction_check: bool = False
    transaction_id: str | None = None


@dataclass(frozen=True, slots=True)
class CheckTransactionStateRequestHeader(Header):
    tran_state_table_offset: Long
    commit_log_offset: Long
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None


@dataclass(frozen=True, slots=True)
class ResetOffsetRequestHeader(Header):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str
    group: str
    timestamp: Long  # -1: the max offset
    is_force: bool = False


@dataclass(frozen=True, slots=True)
class GetConsumerStatusRequestHeader(Header):
    topic: str
    group: str
    client_addr: str | None = None


@dataclass(frozen=True, slots=True)
class GetConsumerRunningInfoRequestHeader(Header):
    consumer_group: str
    client_id: str
    jstack_enable: bool = False


@dataclass(frozen=True, slots=True)
class GetConsumerConnectionListRequestHeader(Header):
    consumer_group: str


@dataclass(frozen=True, slots=True)
class GetProducerConnectionListRequestHeader(Header):
    producer_group: str


@dataclass(frozen=True, slots=True)
class CloneGroupOffsetRequestHeader(Header):
    """CLONE_GROUP_OFFSET (314): ``src_group``'s offsets (on ``topic``, or on every topic it has
    offsets for) copied to ``dest_group``."""

    src_group: str
    dest_group: str
    topic: str | None = None
    offline: bool = False


@dataclass(frozen=True, slots=True)
class QueryTopicConsumeByWhoRequestHeader(Header):
    topic: str


@dataclass(frozen=True, slots=True)
class ViewBrokerStatsDataRequestHeader(Header):
    """VIEW_BROKER_STATS_DATA (315): ``stats_key`` is a topic, or ``topic@group`` for a group's stats."""

    stats_name: str
    stats_key: str


# -- administration -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateTopicRequestHeader(Header):
    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str  # SINGLE_TAG or MULTI_TAG
    topic_sys_flag: int | None = None
    order: bool = False
    attributes: str | None = None
    """RocketMQ 5: ``+message.type=FIFO`` (``,`` between several; ``-key`` removes one)."""


@dataclass(frozen=True, slots=True)
class DeleteTopicRequestHeader(Header):
    """DELETE_TOPIC_IN_BROKER (215); DELETE_TOPIC_IN_NAMESRV (216) may add ``clusterName``."""

    topic: str
    cluster_name: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteSubscriptionGroupRequestHeader(Header):
    group_name: str


@dataclass(frozen=True, slots=True)
class ViewMessageRequestHeader(Header):
    offset: Long


@dataclass(frozen=True, slots=True)
class QueryMessageRequestHeader(Header):
    topic: str
    key: str
    max_num: int
    begin_timestamp: Long
    end_timestamp: Long


@dataclass(frozen=True, slots=True)
class QueryMessageResponseHeader(Header):
    index_last_update_timestamp: Long
    index_last_update_phyoffset: Long


@dataclass(frozen=True, slots=True)
class GetTopicStatsInfoRequestHeader(Header):
    topic: str


@dataclass(frozen=True, slots=True)
class GetConsumeStatsRequestHeader(Header):
    consumer_group: str
    topic: str | None = None


@dataclass(frozen=True, slots=True)
class ConsumeMessageDirectlyResultRequestHeader(Header):
    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None
