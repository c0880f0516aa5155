"""Recall handles read and written as Apache's ``RecallMessageHandle.HandleV1``: golden text, Java's
URL-safe base64 (padding written, optional when read), and every handle Apache's test finds invalid."""

from __future__ import annotations

import base64

import pytest

from pyrocketmq.remoting.recall_handle import INVALID, RecallHandle, RecallHandleError, decode_recall_handle

GOLDEN = RecallHandle("topic", "broker-0", "1700000000001", "7F0000011F9C18B4AAC27B3C4A120000")
GOLDEN_TEXT = "v1 topic broker-0 1700000000001 7F0000011F9C18B4AAC27B3C4A120000"


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


def test_a_handle_is_the_url_safe_base64_of_its_five_fields():
    assert GOLDEN.encode() == _b64(GOLDEN_TEXT)
    assert base64.urlsafe_b64decode(GOLDEN.encode()).decode() == GOLDEN_TEXT
    assert decode_recall_handle(GOLDEN.encode()) == GOLDEN


def test_of_names_the_due_time_plus_one_and_due_ms_reads_it_back():
    handle = RecallHandle.of("T", "broker-a", 1_700_000_000_000, "ID")
    assert handle.timestamp == "1700000000001" and handle.due_ms == 1_700_000_000_000


@pytest.mark.parametrize("text", ["v1 a b 5 d", "v1 a b 5 d extra", "v1 a b 5 d "])
def test_reading_ignores_what_follows_the_fifth_field_and_trailing_blanks(text):
    assert decode_recall_handle(_b64(text)) == RecallHandle("a", "b", "5", "d")


def test_padding_is_optional_when_read():
    unpadded = _b64("v1 a b 12 d").rstrip("=")
    assert unpadded != _b64("v1 a b 12 d")
    assert decode_recall_handle(unpadded).message_id == "d"


@pytest.mark.parametrize(
    "handle",
    [
        "",  # Apache: empty
        _b64("v1 a b c"),  # four fields
        _b64("v2 a b c d"),  # another version
        "v1 a b c d",  # not base64 (blanks)
        _b64("v1 a b 5 d").replace("-", "+") + "+/",  # the standard alphabet, not the URL one
        "a",  # one base64 character is no byte
        "====",
    ],
)
def test_what_does_not_read_is_invalid_in_apaches_words(handle):
    with pytest.raises(RecallHandleError) as e:
        decode_recall_handle(handle)
    assert str(e.value) == INVALID == "recall handle is invalid"


@pytest.mark.parametrize(
    ("stamp", "due"),
    [
        ("5", 4),
        ("+5", 4),
        ("-1", -2),
        ("abc", None),
        ("", None),
        (" 5", None),
        ("5_0", None),
        (str(2**63), None),
        (str(2**63 - 1), 2**63 - 2),
    ],
)
def test_the_timestamp_is_read_as_javas_number_utils_reads_a_long(stamp, due):
    assert RecallHandle("a", "b", stamp, "d").due_ms == due
