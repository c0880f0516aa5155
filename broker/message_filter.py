"""What a subscription lets through, beyond tags: SQL92 selectors evaluated on each stored record's
properties (RocketMQ's ``isMatchedByCommitLog``). Pure: records in, booleans out."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from pyrocketmq.remoting.message import MessageDecodeError, record_properties

from .sql_filter import SqlParseError, compile_selector

TAG = "TAG"
SQL92 = "SQL92"

__all__ = ["SQL92", "TAG", "SqlParseError", "not_supported", "sql_record_filter"]


def not_supported(expression_type: str) -> str:
    """Apache's words for a subscription type the broker will not filter by."""
    return f"The broker does not support consumer to filter message by {expression_type}"


@lru_cache(maxsize=1024)
def sql_record_filter(expression: str) -> Callable[[memoryview], bool]:
    """``record → matches`` for a SQL92 selector (SqlParseError when it is not one); cached by text.
    A record whose properties cannot be read does not match."""
    selector = compile_selector(expression)

    def matches(record: memoryview) -> bool:
        try:
            props = record_properties(record)
        except MessageDecodeError:
            return False
        return selector(props)

    return matches
