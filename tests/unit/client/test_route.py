"""Route → publish/subscribe queues, queue selection and sharding (pure rules)."""

from __future__ import annotations

import pytest

from pyrocketmq.client.route import (
    TopicPublishInfo,
    broker_addr_table,
    choose_broker_addr,
    limit_default_route,
    perm_to_string,
    publish_info_from_route,
    select_by_key,
    select_queue,
    subscribe_queues_from_route,
)
from pyrocketmq.remoting.body import BrokerData, MessageQueue, QueueData, TopicRouteData


def route(
    *queue_datas: QueueData, masters: dict[str, dict[int, str]] | None = None, order: str | None = None
) -> TopicRouteData:
    names = {q.broker_name for q in queue_datas}
    addrs = masters if masters is not None else {n: {0: f"{n}:10911"} for n in names}
    return TopicRouteData(
        queue_datas=list(queue_datas),
        broker_datas=[BrokerData("C", n, a) for n, a in addrs.items()],
        order_topic_conf=order,
    )


def mqs(info_or_list) -> list[tuple[str, int]]:
    items = info_or_list.queues if isinstance(info_or_list, TopicPublishInfo) else info_or_list
    return [(q.broker_name, q.queue_id) for q in items]


def test_publish_uses_write_queues_of_brokers_sorted_by_name() -> None:
    r = route(QueueData("b", read_queue_nums=4, write_queue_nums=2, perm=6), QueueData("a", 8, 1, 6))
    info = publish_info_from_route("T", r)
    assert mqs(info) == [("a", 0), ("b", 0), ("b", 1)]
    assert not info.order_topic
    assert all(q.topic == "T" for q in info.queues)


def test_publish_needs_a_master() -> None:
    r = route(
        QueueData("a", 4, 4, 6),
        QueueData("b", 4, 4, 6),
        masters={"a": {1: "slave:10911"}, "b": {0: "m:10911"}},
    )
    assert {b for b, _ in mqs(publish_info_from_route("T", r))} == {"b"}


def test_publish_skips_broker_without_broker_data() -> None:
    r = route(QueueData("a", 4, 4, 6), masters={})
    assert not publish_info_from_route("T", r).ok


@pytest.mark.parametrize(
    ("perm", "writes", "reads"),
    [(6, True, True), (7, True, True), (2, True, False), (4, False, True), (0, False, False)],
)
def test_perm_bits_decide_publish_and_subscribe(perm: int, writes: bool, reads: bool) -> None:
    r = route(QueueData("a", 3, 2, perm))
    assert bool(publish_info_from_route("T", r).queues) is writes
    assert bool(subscribe_queues_from_route("T", r)) is reads


def test_subscribe_uses_read_queue_count() -> None:
    r = route(QueueData("a", read_queue_nums=3, write_queue_nums=1, perm=6))
    assert mqs(subscribe_queues_from_route("T", r)) == [("a", 0), ("a", 1), ("a", 2)]


def test_order_topic_conf_overrides_queue_datas() -> None:
    r = route(QueueData("a", 8, 8, 6), order="b:2;a:1")
    info = publish_info_from_route("T", r)
    assert info.order_topic
    assert mqs(info) == [("b", 0), ("b", 1), ("a", 0)]


def test_order_topic_conf_ignores_malformed_items() -> None:
    info = publish_info_from_route("T", route(QueueData("a", 8, 8, 6), order="a:2;junk;b:x;"))
    assert mqs(info) == [("a", 0), ("a", 1)]


def test_default_route_is_trimmed_to_the_default_queue_count() -> None:
    tbw = route(QueueData("a", 8, 8, 7), QueueData("b", 2, 2, 7))
    trimmed = limit_default_route(tbw, 4)
    assert [(q.read_queue_nums, q.write_queue_nums) for q in trimmed.queue_datas] == [(4, 4), (2, 2)]
    assert tbw.queue_datas[0].write_queue_nums == 8  # the cached original is untouched
    assert len(publish_info_from_route("NewTopic", trimmed).queues) == 6


QS = [MessageQueue("T", b, i) for b in "abc" for i in range(2)]


def test_round_robin_visits_every_queue_in_turn() -> None:
    info = TopicPublishInfo("T", list(QS))
    picked = [info.select_queue() for _ in range(len(QS) * 2)]
    assert sorted(set(picked)) == sorted(QS)
    assert picked[: len(QS)] == picked[len(QS):]


@pytest.mark.parametrize("start", range(6))
def test_retry_avoids_the_broker_that_just_failed(start: int) -> None:
    assert select_queue(QS, start, last_broker="a").broker_name != "a"


@pytest.mark.parametrize("start", range(6))
def test_unavailable_brokers_are_skipped(start: int) -> None:
    q = select_queue(QS, start, is_available=lambda b: b == "c")
    assert q.broker_name == "c"


def test_when_only_the_last_broker_is_available_it_is_used() -> None:
    assert select_queue(QS, 0, last_broker="b", is_available=lambda b: b == "b").broker_name == "b"


def test_when_nothing_is_available_still_avoid_the_last_broker() -> None:
    picks = {select_queue(QS, s, last_broker="a", is_available=lambda b: False).broker_name for s in range(6)}
    assert "a" not in picks


def test_single_broker_retry_uses_it_again() -> None:
    qs = [MessageQueue("T", "a", i) for i in range(4)]
    assert select_queue(qs, 5, last_broker="a").broker_name == "a"


def test_select_from_nothing_raises() -> None:
    with pytest.raises(ValueError):
        select_queue([], 0)


# -- sharding -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "java_hash"),
    [("hello", 99162322), ("TagA", 2598919), ("order-42", "order-42"), ("polygenelubricants", -2147483648)],
)
def test_sharding_matches_javas_hash_selector(key: str, java_hash) -> None:
    from pyrocketmq.remoting.message import tags_code

    h = tags_code(key) if isinstance(java_hash, str) else java_hash
    assert tags_code(key) == h
    for n in (1, 3, 4, 7, 16):
        qs = [MessageQueue("T", "a", i) for i in range(n)]
        java_value = abs(int(h - n * int(h / n)))  # Java: (h % n) truncates toward zero, then abs
        assert select_by_key(qs, key).queue_id == java_value


def test_sharding_is_stable_and_spreads() -> None:
    qs = [MessageQueue("T", b, i) for b in "ab" for i in range(4)]
    assert select_by_key(qs, "k1") == select_by_key(qs, "k1")
    used = {select_by_key(qs, f"order-{i}") for i in range(200)}
    assert len(used) == len(qs)


def test_sharding_accepts_ints_and_bytes() -> None:
    qs = [MessageQueue("T", "a", i) for i in range(4)]
    assert select_by_key(qs, 6).queue_id == 2
    assert select_by_key(qs, -6).queue_id == 2
    assert select_by_key(qs, b"hello") == select_by_key(qs, "hello")


# -- broker addresses ---------------------------------------------------------------------------


def test_broker_addr_table_and_choice() -> None:
    r = route(QueueData("a", 1, 1, 6), masters={"a": {0: "m:1", 1: "s:1"}})
    table = broker_addr_table([r])
    assert table == {"a": {0: "m:1", 1: "s:1"}}
    assert choose_broker_addr(table["a"]) == ("m:1", 0)
    assert choose_broker_addr(table["a"], 1) == ("s:1", 1)
    assert choose_broker_addr({1: "s:1", 2: "s:2"}, 0) == ("s:1", 1)
    assert choose_broker_addr({1: "s:1"}, 0, only_this=True) is None
    assert choose_broker_addr(None) is None


@pytest.mark.parametrize(("perm", "text"), [(6, "RW-"), (7, "RWX"), (4, "R--"), (2, "-W-")])
def test_perm_to_string(perm: int, text: str) -> None:
    assert perm_to_string(perm) == text


def test_counter_is_shared_across_route_refreshes() -> None:
    # The instance copies the counter into a refreshed publish info; the sequence continues.
    info = TopicPublishInfo("T", list(QS))
    first = [info.select_queue() for _ in range(3)]
    refreshed = TopicPublishInfo("T", list(QS), counter=info.counter)
    nxt = refreshed.select_queue()
    assert nxt == QS[(QS.index(first[-1]) + 1) % len(QS)]
