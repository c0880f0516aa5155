"""The broker's collector: pure pieces on grids, then a whole scrape of a broker whose store lives
on tmp_path (no socket is opened: the remoting server is never started)."""

from __future__ import annotations

import time

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pyrocketmq.broker import metric_rows
from pyrocketmq.broker.app import Broker
from pyrocketmq.broker.delay_service import ScheduleService
from pyrocketmq.broker.metrics import BrokerMetrics
from pyrocketmq.broker.settings import BrokerSettings
from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.values import MessageInner
from pyrocketmq.broker.timer_service import TimerService
from pyrocketmq.metrics import LatencyRecorder
from pyrocketmq.remoting.body import SubscriptionGroupConfig


@pytest.mark.parametrize(
    ("committed", "max_offset", "lag"),
    [(0, 0, 0), (0, 10, 10), (7, 10, 3), (10, 10, 0), (12, 10, 0), (-1, 5, 5)],
)
def test_lag_is_max_minus_committed_never_negative(committed, max_offset, lag):
    assert list(metric_rows.lag_rows({"T@g": {3: committed}}, lambda t, q: max_offset)) == [
        ("g", "T", 3, committed, lag)
    ]


def test_lag_rows_skip_keys_without_a_group():
    assert list(metric_rows.lag_rows({"broken": {0: 1}, "T@g": {}}, lambda t, q: 5)) == []


def test_special_topic_totals_cover_every_known_group():
    queues = [("%RETRY%a", 0, 4), ("%RETRY%a", 1, 2), ("%RETRY%z", 0, 1), ("%DLQ%a", 0, 9), ("T", 0, 100)]
    assert metric_rows.special_topic_totals(["a", "b"], queues, "%RETRY%") == {"a": 6, "b": 0, "z": 1}
    assert metric_rows.special_topic_totals(["a", "b"], queues, "%DLQ%") == {"a": 9, "b": 0}


def test_scheduled_waiting_per_level():
    maxes = {0: 10, 1: 3}
    assert metric_rows.scheduled_waiting(3, lambda q: maxes.get(q, 0), {1: 10, 2: 1}) == {1: 0, 2: 2, 3: 0}


@pytest.mark.parametrize(
    ("serving", "configured", "registered", "ready"),
    [(False, 1, 1, False), (True, 1, 0, False), (True, 1, 1, True), (True, 3, 1, True), (True, 0, 0, True)],
)
def test_readiness(serving, configured, registered, ready):
    assert (metric_rows.readiness(serving, configured, registered) is None) is ready


def test_timed_records_even_when_the_call_raises():
    rec = LatencyRecorder((1.0,))

    def fail():
        raise ValueError

    with pytest.raises(ValueError):
        metric_rows.timed(fail, rec)()
    assert rec.count == 1


def make_broker(tmp_path, **conf: str) -> Broker:
    settings = BrokerSettings.from_conf(
        {
            "storePathRootDir": str(tmp_path),
            "brokerName": "b1",
            "brokerClusterName": "C1",
            "namesrvAddr": "127.0.0.1:1",
            "metricsPort": "5557",
            "mappedFileSizeCommitLog": str(1024 * 1024),
            **conf,
        }
    )
    b = Broker(settings)
    store = MessageStore(settings.store, ("127.0.0.1", 10911))
    store.load()
    b.metrics.instrument(store)
    b.store = store
    b.schedule = ScheduleService(store, str(tmp_path / "delayOffset.json"), settings.store.delay_levels_ms)
    return b


@pytest.fixture
def broker(tmp_path):
    b = make_broker(tmp_path)
    yield b
    b.store.shutdown()


def samples(b: Broker) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(b.metrics.registry).decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = {
                k: v for k, v in s.labels.items() if k not in ("cluster", "broker", "node_type", "node_id")
            }
            out[(s.name, tuple(sorted(labels.items())))] = s.value
    return out


def put(b: Broker, topic: str, queue: int, n: int, **props: str) -> None:
    for i in range(n):
        result = b.store.put_message(MessageInner.build(topic, f"m{i}".encode(), dict(props), queue_id=queue))
        b.stats.on_put(topic, 1, result.wrote_bytes)


def test_a_scrape_reads_traffic_offsets_lag_dlq_and_schedule(broker):
    assert isinstance(broker.metrics, BrokerMetrics)
    broker.groups.update(SubscriptionGroupConfig(group_name="g"))
    put(broker, "Orders", 0, 5)
    put(broker, "Orders", 1, 3)
    put(broker, "%DLQ%g", 0, 2)
    put(broker, "Orders", 0, 1, DELAY="3")  # goes to the schedule queue of level 3
    broker.offsets.commit("g", "Orders", 0, 2)
    broker.offsets.commit("g", "Orders", 1, 3)
    broker.stats.on_get("Orders", 4, 400, "g")
    broker.stats.on_put("Orders", 2, 200, "transaction")
    broker.stats.on_put("Big", 2, 2 * 600 * 1024)  # a batch of two 600 KiB messages
    s = samples(broker)
    assert s[("rocketmq_messages_in_total", (("message_type", "normal"), ("topic", "Orders")))] == 9
    assert s[("rocketmq_messages_in_total", (("message_type", "transaction"), ("topic", "Orders")))] == 2
    assert s[("rocketmq_throughput_in_total", (("message_type", "transaction"), ("topic", "Orders")))] == 200
    big = (("message_type", "normal"), ("topic", "Big"))
    assert (
        s[("rocketmq_message_size_count", big)] == 2
        and s[("rocketmq_message_size_sum", big)] == 2 * 600 * 1024
    )
    assert s[("rocketmq_message_size_bucket", (("le", "524288.0"), *big))] == 0  # over 512 KiB
    assert s[("rocketmq_message_size_bucket", (("le", "1048576.0"), *big))] == 2
    assert s[("rocketmq_messages_out_total", (("consumer_group", "g"), ("topic", "Orders")))] == 4
    assert s[("rocketmq_throughput_out_total", (("consumer_group", "g"), ("topic", "Orders")))] == 400
    lag = (("consumer_group", "g"), ("is_retry", "false"), ("is_system", "false"), ("topic", "Orders"))
    assert s[("rocketmq_consumer_lag_messages", lag)] == 3  # (5 - 2) + (3 - 3), Apache's per-topic sum
    assert s[("rocketmq_consumer_ready_messages", lag)] == 3  # nothing pulled: all of the lag is ready
    assert s[("rocketmq_consumer_inflight_messages", lag)] == 0
    assert (
        s[("rocketmq_consumer_lag_latency", lag)] >= 0 and s[("rocketmq_consumer_queueing_latency", lag)] >= 0
    )
    broker.stats.on_send_back("g", True, "Orders")
    for commit in (True, True, False):
        broker.stats.on_end_transaction("Orders", commit)
    broker.offsets.note_pull("g", "Orders", 0, 4)  # queue 0: 2 of its 3 pulled, not committed
    s = samples(broker)
    assert (
        s[("rocketmq_consumer_ready_messages", lag)],
        s[("rocketmq_consumer_inflight_messages", lag)],
    ) == (1, 2)
    assert s[("rocketmq_commit_messages_total", (("topic", "Orders"),))] == 2
    assert s[("rocketmq_storage_size", ())] > 0 and s[("rocketmq_storage_flush_behind_bytes", ())] >= 0
    assert 0 <= s[("rocketmq_storage_message_reserve_time", ())] < 60_000  # the first message, just stored
    assert s[("rocketmq_rollback_messages_total", (("topic", "Orders"),))] == 1
    dlq = (("consumer_group", "g"), ("is_system", "false"), ("topic", "Orders"))
    assert s[("rocketmq_send_to_dlq_messages_total", dlq)] == 1
    assert s[("rocketmq_topic_number", ())] == len(broker.topics.table)
    assert s[("rocketmq_consumer_group_number", ())] == len(broker.groups.table)
    assert s[("pyrocketmq_broker_queue_max_offset", (("queue", "0"), ("topic", "Orders")))] == 5
    assert (
        s[("pyrocketmq_broker_consumer_lag_messages", (("group", "g"), ("queue", "0"), ("topic", "Orders")))]
        == 3
    )
    assert (
        s[("pyrocketmq_broker_consumer_lag_messages", (("group", "g"), ("queue", "1"), ("topic", "Orders")))]
        == 0
    )
    assert (
        s[("pyrocketmq_broker_consumer_offset", (("group", "g"), ("queue", "0"), ("topic", "Orders")))] == 2
    )
    assert s[("pyrocketmq_broker_dlq_messages_total", (("group", "g"),))] == 2
    assert s[("pyrocketmq_broker_retry_messages_total", (("group", "g"),))] == 0
    assert (
        "pyrocketmq_broker_dlq_messages_total",
        (("group", "CLIENT_INNER_PRODUCER"),),
    ) not in s  # system groups
    assert s[("pyrocketmq_broker_scheduled_messages", (("level", "3"),))] == 1
    assert not any(
        name == "pyrocketmq_broker_queue_max_offset" and dict(labels)["topic"] == "SCHEDULE_TOPIC_XXXX"
        for name, labels in s
    )
    assert s[("pyrocketmq_broker_store_put_duration_seconds_count", ())] == 11
    assert s[("pyrocketmq_broker_commitlog_size_bytes", ())] > 0
    assert 0 <= s[("pyrocketmq_broker_disk_usage_ratio", ())] <= 1
    assert s[("pyrocketmq_broker_ready", ())] == 0  # not serving: never started
    assert (
        s[("pyrocketmq_broker_info", (("broker_id", "0"), ("role", "ASYNC_MASTER"), ("version", "0.1.0")))]
        == 1
    )


def test_timer_messages_waiting_and_delivered(broker, tmp_path):
    broker.timer = TimerService(broker.store, str(tmp_path / "timerCheckpoint.json"))
    broker.timer.load()
    put(broker, "Orders", 0, 2, TIMER_DELAY_SEC="600")
    put(broker, "Orders", 0, 1, TIMER_DELAY_MS="1")
    time.sleep(0.01)
    broker.timer.turn()
    s = samples(broker)
    assert s[("pyrocketmq_broker_timer_messages", ())] == 2
    assert s[("pyrocketmq_broker_timer_delivered_total", ())] == 1
    assert not any(dict(labels).get("topic") == "rmq_sys_wheel_timer" for _, labels in s)


def test_a_slave_leaves_the_groups_data_to_its_master(tmp_path):
    # Its queues and offsets are copies of the master's: summed over pods, they would count twice.
    slave = make_broker(tmp_path, brokerId="1", brokerRole="SLAVE")
    try:
        slave.groups.update(SubscriptionGroupConfig(group_name="g"))
        put(slave, "Orders", 0, 5)
        put(slave, "%DLQ%g", 0, 2)
        put(slave, "Orders", 0, 1, DELAY="3")
        slave.offsets.commit("g", "Orders", 0, 2)
        names = {name for name, _ in samples(slave)}
        for family in ("queue_max_offset", "queue_min_offset", "consumer_offset", "consumer_lag_messages",
                       "dlq_messages_total", "retry_messages_total", "scheduled_messages"):
            assert f"pyrocketmq_broker_{family}" not in names, family
        assert {
            "pyrocketmq_broker_commitlog_size_bytes",
            "pyrocketmq_broker_ready",
            "pyrocketmq_broker_info",
        } <= names
    finally:
        slave.store.shutdown()


def test_every_broker_series_names_its_cluster_and_broker(broker):
    put(broker, "Orders", 0, 1)
    text = generate_latest(broker.metrics.registry).decode()
    for family in text_string_to_metric_families(text):
        if family.name.startswith("pyrocketmq_broker"):
            for s in family.samples:
                assert s.labels["cluster"] == "C1" and s.labels["broker"] == "b1", s


def test_no_metrics_object_without_a_metrics_port(tmp_path):
    assert (
        Broker(BrokerSettings.from_conf({"storePathRootDir": str(tmp_path), "metricsPort": "0"})).metrics
        is None
    )


def test_replication_lag_is_master_offset_minus_the_best_slave_ack(broker):
    from pyrocketmq.broker.ha.service import HAServer

    put(broker, "Orders", 0, 3)
    assert ("pyrocketmq_broker_replication_lag_bytes", ()) not in samples(broker)  # not a master with HA
    broker.ha_server = HAServer(broker.store)
    assert ("pyrocketmq_broker_replication_lag_bytes", ()) not in samples(broker)  # no slave connected
    broker.ha_server.table.connect("slave")
    broker.ha_server.table.ack("slave", 10)
    assert (
        samples(broker)[("pyrocketmq_broker_replication_lag_bytes", ())]
        == broker.store.get_max_phy_offset() - 10
    )


def test_connections_under_apache_names_by_language_version_and_mode(broker):
    from pyrocketmq.remoting.body import ConsumerData

    broker.producers.register("p1", object(), 0, 407, "pg")  # Java 4.9.7
    broker.producers.register("p2", object(), 3, 407, "pg")
    broker.producers.register("p3", object(), 3, 407, "pg2")
    broker.consumers.register("c1", object(), 0, 407, ConsumerData(group_name="cg"))
    broker.consumers.register(
        "c2", object(), 3, 407, ConsumerData(group_name="lite", consume_type="CONSUME_ACTIVELY")
    )
    s = samples(broker)
    assert (
        s[
            (
                "rocketmq_producer_connections",
                (("language", "java"), ("protocol_type", "remoting"), ("version", "v4_9_7")),
            )
        ]
        == 1
    )
    assert (
        s[
            (
                "rocketmq_producer_connections",
                (("language", "python"), ("protocol_type", "remoting"), ("version", "v4_9_7")),
            )
        ]
        == 2
    )
    push = (("consume_mode", "push"), ("consumer_group", "cg"), ("is_system", "false"), ("language", "java"),
            ("protocol_type", "remoting"), ("version", "v4_9_7"))
    assert s[("rocketmq_consumer_connections", push)] == 1
    assert (
        "rocketmq_consumer_connections",
        (
            ("consume_mode", "pull"),
            ("consumer_group", "lite"),
            ("is_system", "false"),
            ("language", "python"),
            ("protocol_type", "remoting"),
            ("version", "v4_9_7"),
        ),
    ) in s


def test_consumer_states_sum_queues_as_apache_does():
    """Queue 0: 10 stored, 3 committed, pulled to 5; queue 1: never pulled, 9 committed; stored at
    1000 + offset."""
    states = metric_rows.consumer_states(
        {"T@g": {0: 3, 1: 9}, "bad-key": {0: 1}},
        {"T@g": {0: 5}},
        lambda t, q: 10,
        lambda t, q, o: 1000 + o,
        now_ms=2000,
    )
    assert states == {
        ("g", "T"): metric_rows.ConsumerState(lag=8, ready=6, inflight=2, queueing_ms=995, lag_ms=997)
    }
    caught_up = metric_rows.consumer_states(
        {"T@g": {0: 10}}, {"T@g": {0: 12}}, lambda t, q: 10, lambda t, q, o: -1, 2000
    )
    assert (
        caught_up[("g", "T")] == metric_rows.ConsumerState()
    )  # a pull offset past the top counts as the top
