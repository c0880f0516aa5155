"""A pull as both consumers make it: the request header, the broker's answer turned into a
:class:`PullResult`, tag expressions, and the client-side tag check of what a pull returns.
Pure: no connections, no state."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import StrEnum

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import PullMessageRequestHeader
from pyrocketmq.remoting.message import (
    MessageDecodeError,
    MessageExt,
    Prop,
    SysFlag,
    decode_messages,
    tags_code,
    uncompressed_body,
)
from pyrocketmq.remoting.names import RETRY_GROUP_TOPIC_PREFIX

from .errors import MQBrokerError
from .route import MASTER_ID

log = logging.getLogger("pyrocketmq.client")


class PullSysFlag:
    """Bits of the pull request's ``sysFlag``."""

    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8
    LITE_PULL = 0x10


class PullStatus(StrEnum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_STATUS_BY_CODE: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(slots=True)
class PullResult:
    """One pull's answer. ``next_begin_offset`` is where the next pull of the queue starts."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)
    suggest_which_broker_id: int = MASTER_ID


@dataclass(slots=True, frozen=True)
class MessageSelector:
    """What a subscription selects, as Java's ``MessageSelector``: tags (``*`` or ``TagA || TagB``)
    or a SQL92 selector over message properties, evaluated by the broker (``enablePropertyFilter=true``).

    >>> MessageSelector.by_sql("price > 10 AND region = 'eu'").expression_type
    'SQL92'
    """

    expression: str
    expression_type: str = "TAG"

    @classmethod
    def by_tag(cls, expression: str = "*") -> MessageSelector:
        return cls(expression, "TAG")

    @classmethod
    def by_sql(cls, expression: str) -> MessageSelector:
        if not expression or not expression.strip():
            raise ValueError("a SQL92 selector cannot be empty")
        return cls(expression.strip(), "SQL92")


Selector = str | MessageSelector
"""A tag expression, or a :class:`MessageSelector`."""


@dataclass(slots=True, frozen=True)
class Subscription:
    """A parsed subscription: tags (``*`` for everything, or tags joined by ``||``), matched here
    too, or a SQL92 selector (``expression_type`` ``SQL92``), which only the broker evaluates."""

    expression: str
    tags: frozenset[str]
    expression_type: str = "TAG"

    @property
    def all(self) -> bool:
        return not self.tags

    def codes(self) -> list[int]:
        return sorted({tags_code(t) for t in self.tags})

    def matches(self, tags: str | None) -> bool:
        return not self.tags or (tags is not None and tags in self.tags)


def parse_expression(expression: Selector | None) -> Subscription:
    """``"TagA || TagB"`` → tags {TagA, TagB}; ``"*"``, ``""`` or None → everything; a SQL92
    :class:`MessageSelector` → a subscription the broker filters.

    >>> sorted(parse_expression(" TagA||TagB ").tags), parse_expression("*").all
    (['TagA', 'TagB'], True)
    """
    if isinstance(expression, MessageSelector):
        if expression.expression_type == "SQL92":
            return Subscription(expression.expression, frozenset(), "SQL92")
        if expression.expression_type != "TAG":
            raise ValueError(f"selector type {expression.expression_type!r}: use TAG or SQL92")
        expression = expression.expression
    expr = (expression or "").strip()
    if not expr or expr == "*":
        return Subscription("*", frozenset())
    tags = frozenset(t.strip() for t in expr.split("||") if t.strip())
    if not tags:
        return Subscription("*", frozenset())
    return Subscription(expr, tags)


def build_pull_header(
    *,
    group: str,
    mq: MessageQueue,
    offset: int,
    max_nums: int,
    subscription: Subscription,
    suspend_ms: int,
    sub_version: int,
    commit_offset: int = 0,
    commit: bool = False,
    lite: bool = True,
) -> dict[str, str]:
    """PULL_MESSAGE ext fields, as both consumers send them.

    A lite pull (``lite``) carries its subscription (SUBSCRIPTION | LITE_PULL), so the broker needs
    no heartbeat's; a push consumer's does not (the broker uses the heartbeat's) and carries the
    group's offset of the queue, which the broker stores with ``commit`` (COMMIT_OFFSET). SUSPEND
    when the broker may hold the pull ``suspend_ms`` for new messages.

    >>> from pyrocketmq.remoting.body import MessageQueue
    >>> h = build_pull_header(group="g", mq=MessageQueue(topic="T", broker_name="b", queue_id=2), offset=5,
    ...                       max_nums=32, subscription=parse_expression("*"), suspend_ms=0, sub_version=1)
    >>> h["sysFlag"], h["queueId"], h["subscription"]
    ('20', '2', '*')
    """
    sys_flag = PullSysFlag.SUBSCRIPTION | PullSysFlag.LITE_PULL if lite else 0
    if suspend_ms > 0:
        sys_flag |= PullSysFlag.SUSPEND
    if commit:
        sys_flag |= PullSysFlag.COMMIT_OFFSET
    return PullMessageRequestHeader(
        consumer_group=group,
        topic=mq.topic,
        queue_id=mq.queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=sys_flag,
        commit_offset=max(0, commit_offset),
        suspend_timeout_millis=max(0, suspend_ms),
        sub_version=sub_version,
        subscription=subscription.expression if lite else None,
        expression_type=subscription.expression_type,
    ).to_ext()


def process_messages(
    messages: list[MessageExt], subscription: Subscription, group: str, min_offset: int, max_offset: int
) -> list[MessageExt]:
    """What a user receives from decoded pull messages (see the module docstring)."""
    out: list[MessageExt] = []
    retry_topic = RETRY_GROUP_TOPIC_PREFIX + group
    for msg in messages:
        if not subscription.matches(msg.properties.get(Prop.TAGS)):
            continue
        original = msg.properties.get(Prop.RETRY_TOPIC)
        if original and msg.topic == retry_topic:
            msg.topic = original
        if msg.sys_flag & SysFlag.COMPRESSED:
            msg.body = uncompressed_body(msg)
            msg.sys_flag &= ~(SysFlag.COMPRESSED | SysFlag.COMPRESSION_MASK)
        msg.properties[Prop.MIN_OFFSET] = str(min_offset)
        msg.properties[Prop.MAX_OFFSET] = str(max_offset)
        out.append(msg)
    return out


def pull_result_from_response(
    resp: RemotingCommand, subscription: Subscription, group: str, addr: str
) -> PullResult:
    """A :class:`PullResult` from a pull's answer, or the :class:`MQBrokerError` it stands for."""
    status = _STATUS_BY_CODE.get(resp.code)
    if status is None:
        raise MQBrokerError.for_code(resp.code, resp.remark, addr)
    min_off = resp.get_int("minOffset", 0) or 0
    max_off = resp.get_int("maxOffset", 0) or 0
    result = PullResult(
        status=status,
        next_begin_offset=resp.get_int("nextBeginOffset", 0) or 0,
        min_offset=min_off,
        max_offset=max_off,
        suggest_which_broker_id=resp.get_int("suggestWhichBrokerId", MASTER_ID) or MASTER_ID,
    )
    if status is PullStatus.FOUND and resp.body:
        try:
            decoded = decode_messages(resp.payload)
        except MessageDecodeError as e:
            raise MQBrokerError(ResponseCode.SYSTEM_ERROR, f"undecodable pull body: {e}", addr) from None
        result.messages = process_messages(decoded, subscription, group, min_off, max_off)
    return result

