"""How the 5.x endpoint picks a send's queue: round-robin per topic, a message group by the hash
Apache's proxy uses (Java's String.hashCode through Guava's consistentHash)."""

from __future__ import annotations

import random

import pytest

from pyrocketmq.broker.proxy.queue_select import QueueChooser, consistent_hash, group_queue, java_string_hash


def test_java_string_hash_by_hand():
    assert java_string_hash("") == 0
    assert java_string_hash("g1") == ord("g") * 31 + ord("1") == 3242
    h = 0
    for c in "order-42":
        h = (h * 31 + ord(c)) % 2**32
    assert java_string_hash("order-42") == h == 1234255197


def test_java_string_hash_wraps_signed_and_counts_utf16_units():
    # values printed by Java's String.hashCode
    assert java_string_hash("group-0") == 293427298
    assert java_string_hash("é☃𝄞") == 18065188  # the clef is a surrogate pair
    assert java_string_hash("polygenelubricants") == -2147483648
    assert java_string_hash("a-rather-long-message-group-name-0123456789") == 2095640083


@pytest.mark.parametrize(("key", "expected"), [
    # Guava 32's Hashing.consistentHash(key, n) for n = 1, 2, 4, 7, 100, 1000
    (0, [0, 0, 0, 0, 0, 0]),
    (1, [0, 0, 0, 6, 55, 549]),
    (-1, [0, 1, 2, 2, 92, 313]),
    (-(2**31), [0, 1, 2, 2, 58, 185]),
    (2**31 - 1, [0, 0, 0, 0, 56, 231]),
])
def test_consistent_hash_matches_guava(key, expected):
    assert [consistent_hash(key, n) for n in (1, 2, 4, 7, 100, 1000)] == expected


def test_group_queue_matches_apaches_proxy():
    # Hashing.consistentHash("...".hashCode(), n) for n = 4, 8, 16
    assert [group_queue("g1", n) for n in (4, 8, 16)] == [0, 6, 9]
    assert [group_queue("order-42", n) for n in (4, 8, 16)] == [3, 3, 10]
    assert [group_queue("group-1", n) for n in (4, 8, 16)] == [1, 7, 15]
    with pytest.raises(ValueError):
        consistent_hash(1, 0)


def test_round_robin_wraps_over_the_write_queues_per_topic():
    chooser = QueueChooser(random.Random(7))
    first = chooser.choose("A", 4)
    picks = [first] + [chooser.choose("A", 4) for _ in range(9)]
    assert picks == [(first + i) % 4 for i in range(10)]
    other = [chooser.choose("B", 3) for _ in range(6)]
    assert sorted(other) == [0, 0, 1, 1, 2, 2]
    assert chooser.choose("A", 4) == (first + 10) % 4  # B's sends did not move A's counter
    assert chooser.choose("A", 2) in (0, 1)  # fewer write queues now: still in range


def test_a_group_keeps_its_queue_and_leaves_the_counter_alone():
    chooser = QueueChooser(random.Random(1))
    start = chooser.choose("T", 5)
    assert {chooser.choose("T", 5, "order-42") for _ in range(10)} == {group_queue("order-42", 5)}
    assert chooser.choose("T", 5) == (start + 1) % 5


def test_no_write_queue_leaves_the_pick_to_the_broker():
    assert QueueChooser().choose("T", 0) == -1
    assert QueueChooser().choose("T", 0, "g1") == -1
