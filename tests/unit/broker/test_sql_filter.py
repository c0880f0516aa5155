"""SQL92 selectors without a broker: the grammar, three-valued logic, strings read as numbers, the
refusals, and the limits that keep a hostile selector cheap."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.message_filter import sql_record_filter
from pyrocketmq.broker.sql_filter import MAX_EXPRESSION_LENGTH, SqlParseError, compile_selector
from pyrocketmq.remoting.message import MessageDecodeError, MessageExt, encode_message, record_properties

ROWS = [{"a": "10", "b": "3"}, {"a": "x"}, {}, {"a": "2", "region": "eu"}, {"a": "5.5"}, {"flag": "TRUE"}]


@pytest.mark.parametrize(("selector", "expected"), [
    ("a > 5", [True, False, False, False, False, False]),  # '5.5' is no long: no match, as in Apache
    ("NOT (a > 5)", [False, False, False, True, False, False]),  # unknown stays unknown
    ("a <> 5", [True, False, False, True, False, False]),
    ("a IS NULL", [False, False, True, False, False, True]),
    ("a > b", [True, False, False, False, False, False]),  # both read as numbers
    ("a = 'x' OR region = 'eu'", [False, True, False, True, False, False]),
    ("a BETWEEN 2 AND 5.5", [False, False, False, True, False, False]),
    ("a BETWEEN 2.0 AND 5.5", [False, False, False, True, True, False]),
    ("a NOT BETWEEN 2 AND 5.5", [True, False, False, False, False, False]),
    ("region IN ('eu', 'us')", [False, False, False, True, False, False]),
    ("region NOT IN ('eu')", [False, False, False, False, False, False]),
    ("flag = TRUE", [False, False, False, False, False, True]),
    ("a IS NOT NULL AND (a = 10 or a = 2)", [True, False, False, True, False, False]),
    ("tRuE", [True] * 6), ("a", [False] * 6), ("-a < 0", [False] * 6),
    ("a >= 1e1 -- comment", [True, False, False, False, False, False]),
])  # fmt: skip
def test_selections(selector, expected):
    s = compile_selector(selector)
    assert [s(row) for row in ROWS] == expected


@pytest.mark.parametrize(("selector", "words"), [
    ("a >", "found the end"), ("a > 'x'", "cannot be compared"), ("a = NULL", "IS NULL"),
    ("a IN (1)", "string literal"), ("a ~ 1", "unexpected character"), ("", "empty"),
    ("(a > 1", r"expected '\)'"),
    ("a > 99999999999999999999", "range of a long"), ("a NOT 1", "found 'NOT'"),
])  # fmt: skip
def test_refusals_say_where(selector, words):
    with pytest.raises(SqlParseError, match=words):
        compile_selector(selector)


def test_hostile_selectors_are_refused_cheaply():
    with pytest.raises(SqlParseError, match="longer than"):
        compile_selector("a > 1 OR " * (MAX_EXPRESSION_LENGTH // 9) + "a > 1")
    with pytest.raises(SqlParseError, match="nests deeper"):
        compile_selector("(" * 500 + "a > 1" + ")" * 500)
    with pytest.raises(SqlParseError, match="nests deeper"):
        compile_selector("NOT " * 500 + "a")
    assert compile_selector("a > 1 OR " * 300 + "a > 1")({"a": "2"})  # long but flat is fine


def test_records_are_filtered_by_their_properties():
    msg = MessageExt(topic="T", body=b"hello", properties={"price": "12", "TAGS": "red"})
    rec = memoryview(encode_message(msg))
    assert record_properties(rec) == {"price": "12", "TAGS": "red"}
    assert sql_record_filter("price > 10 AND TAGS = 'red'")(rec)
    assert not sql_record_filter("price > 20")(rec)
    assert not sql_record_filter("price > 10")(rec[:60])  # torn: no match, no exception
    with pytest.raises(MessageDecodeError):
        record_properties(rec[:60])
