"""A real Prometheus scrapes a live name server and broker while a producer and a consumer run.

Every PromQL expression of the chart's dashboards and alert rules is run through Prometheus's HTTP
API and must return data; the alerts are made true by what the test does (a poison message for the
dead-letter alert, a stopped consumer for the lag alert, stopped processes for the down alerts;
the disk alert's threshold is lowered in a copy since the test cannot fill a disk). Metric values
are checked against the traffic sent (100 messages in: the topic's counter rose by exactly 100);
nothing asserts a time.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from pyrocketmq.client import Message
from tests.conformance import pyclient5
from tests.helpers.cluster import (
    ManagedProcess,
    free_broker_port,
    free_port,
    start_server_process,
    write_properties,
)
from tests.observability.prometheus import (
    APACHE_QUERIES,
    Prometheus,
    dashboard_exprs,
    fast_rules_copy,
    find_tool,
    grafana_to_promql,
    metric_names_in,
    rule_exprs,
)
from tests.observability.workload import traffic

TOPIC = "ObsOrders"
BACKGROUND = "ObsBackground"
GROUP = "obs-consumers"
BROKER_JOB, NAMESRV_JOB = "pyrocketmq-broker", "pyrocketmq-namesrv"


def start_servers(tmp: Path) -> tuple[ManagedProcess, ManagedProcess, str, str, str, str]:
    ns_port, ns_metrics, broker_port, broker_metrics = (
        free_port(),
        free_port(),
        free_broker_port(),
        free_port(),
    )
    grpc_port = free_port()
    namesrv = start_server_process(
        "namesrv", ["--listen-port", ns_port, "--metrics-port", ns_metrics], tmp, ns_port
    )
    conf = write_properties(
        tmp / "broker.conf",
        {
            "brokerClusterName": "ObsCluster",
            "brokerName": "obs-broker",
            "namesrvAddr": f"127.0.0.1:{ns_port}",
            "listenPort": broker_port,
            "brokerIP1": "127.0.0.1",
            "storePathRootDir": tmp / "store",
            "mappedFileSizeCommitLog": 16 * 1024 * 1024,
            "metricsPort": broker_metrics,
            "grpcListenPort": grpc_port,
        },
    )
    broker = start_server_process("broker", ["-c", conf], tmp, broker_port)
    return (namesrv, broker, f"127.0.0.1:{ns_port}", f"127.0.0.1:{ns_metrics}", f"127.0.0.1:{broker_metrics}",
            f"127.0.0.1:{grpc_port}")


def strip_threshold(expr: str, threshold: str) -> str:
    assert threshold in expr, expr
    return expr.replace(f"> {threshold}", "> 0")


@pytest.fixture
def world(tmp_path: Path):
    find_tool("prometheus")
    namesrv, broker, ns_addr, ns_metrics, broker_metrics, grpc_addr = start_servers(tmp_path)
    rules = fast_rules_copy(tmp_path / "rules-fast.yaml")
    prom = Prometheus(
        tmp_path / "prometheus", {BROKER_JOB: [broker_metrics], NAMESRV_JOB: [ns_metrics]}, [rules]
    )
    try:
        prom.start()
        yield prom, namesrv, broker, ns_addr, grpc_addr, tmp_path
    finally:
        prom.stop()
        broker.stop()
        namesrv.stop()


def test_dashboards_and_alerts_against_a_real_prometheus(world) -> None:  # long: every dashboard query
    prom, namesrv, broker, ns_addr, grpc_addr, tmp = world
    prom.wait("both targets up", lambda: prom.value(f'sum(up{{job=~"{BROKER_JOB}|{NAMESRV_JOB}"}})') == 2)

    with traffic(ns_addr, TOPIC, BACKGROUND, GROUP) as t:
        producer, consumed, client_registry = t.producer, t.consumed, t.client_registry
        # -- values move as the traffic implies -----------------------------------------------------
        in_topic = f'sum(rocketmq_messages_in_total{{topic="{TOPIC}", message_type="normal"}})'
        before = prom.wait("the topic's counter", lambda: prom.value(in_topic))
        assert before == 1
        for i in range(100):
            producer.send(Message(TOPIC, f"order {i}".encode(), tags="order"))
        prom.wait("101 messages in", lambda: prom.value(in_topic) == before + 100)
        assert prom.value(f'sum(pyrocketmq_broker_queue_max_offset{{topic="{TOPIC}"}})') == 101
        assert (
            prom.value(
                'sum(rocketmq_rpc_latency_count{request_code="send_message_v2", response_code="success"})'
            )
            >= 102
        )
        # The consumer gets all 101 and commits them: no lag left on the topic.
        prom.wait(
            "the group caught up",
            lambda: (
                prom.value(
                    f'sum(pyrocketmq_broker_consumer_lag_messages{{group="{GROUP}", topic="{TOPIC}"}})'
                )
                == 0
                and prom.value(f'sum(pyrocketmq_broker_consumer_offset{{group="{GROUP}", topic="{TOPIC}"}})')
                == 101
            ),
        )
        assert (
            prom.value(f'sum(rocketmq_messages_out_total{{topic="{TOPIC}", consumer_group="{GROUP}"}})')
            >= 101
        )
        assert consumed.count(TOPIC) >= 101
        assert (
            client_registry.get_sample_value(
                "pyrocketmq_client_sent_messages_total",
                {"group": "obs-producer", "topic": TOPIC, "outcome": "SEND_OK"},
            )
            == 101
        )
        assert (
            client_registry.get_sample_value(
                "pyrocketmq_client_consumed_messages_total", {"group": GROUP, "topic": TOPIC, "result": "ok"}
            )
            >= 101
        )

        # A poison message fails once and, with max_reconsume_times=0, goes to the dead-letter queue.
        dlq = f'sum(pyrocketmq_broker_dlq_messages_total{{group="{GROUP}"}})'
        assert prom.wait(
            "the DLQ counter of the group", lambda: prom.value(dlq) is not None and [prom.value(dlq)]
        ) == [0]
        producer.send(Message(TOPIC, b"poison", tags="poison"))
        prom.wait("one message in the DLQ", lambda: prom.value(dlq) == 1)
        # A delayed message waits in its level until due (level 6 = 2 minutes: still waiting at the end).
        producer.send(Message(TOPIC, b"later", delay_level=6))
        prom.wait(
            "one delayed message",
            lambda: prom.value('sum(pyrocketmq_broker_scheduled_messages{level="6"})') == 1,
        )

        # The official 5.x Python client sends and receives on the gRPC port: the gRPC row has data.
        sent5 = pyclient5.run([grpc_addr, TOPIC, "produce", "normal", 3], home=tmp / "py5")
        assert sent5["errors"] == [] and len(sent5["sent"]) == 3, sent5
        got5 = pyclient5.run([grpc_addr, TOPIC, "simple", "obs-g5", 3, 60], home=tmp / "py5")
        assert len(got5["deliveries"]) >= 3, got5
        prom.wait("5.x sends counted", lambda: prom.value(
            'sum(pyrocketmq_broker_grpc_requests_total{rpc="SendMessage", code="OK"})') == 3)
        prom.wait(
            "5.x receives timed",
            lambda: prom.value("sum(pyrocketmq_broker_grpc_receive_duration_seconds_count)"),
        )

        # -- Apache RocketMQ 5's metric names and labels, as its users query them -------------------
        for query in APACHE_QUERIES:
            rows = prom.wait(f"data for Apache's {query}", lambda q=query: prom.query(q))
            assert all(r["metric"].get("node_type", "broker") == "broker" for r in rows), rows
        assert (
            prom.value(
                f'sum(rocketmq_send_to_dlq_messages_total{{consumer_group="{GROUP}", topic="{TOPIC}"}})'
            )
            == 1
        )
        # Apache's lag per group and topic is the per-queue series summed (one query: one scrape)
        assert (
            prom.value(
                f'sum(rocketmq_consumer_lag_messages{{consumer_group="{GROUP}", topic="{BACKGROUND}"}})'
                f' - sum(pyrocketmq_broker_consumer_lag_messages{{group="{GROUP}", topic="{BACKGROUND}"}})'
            )
            == 0
        )

        # -- every expression returns data, and reads only metrics that exist -------------------------
        names = prom.metric_names()
        for dashboard, title, expr in dashboard_exprs():
            missing = metric_names_in(expr) - names
            assert not missing, f"{dashboard} / {title} reads metrics nobody exports: {missing}"
            promql = grafana_to_promql(expr)
            prom.wait(f"data for {dashboard} / {title}: {promql}", lambda q=promql: prom.query(q))
        alerts = rule_exprs()
        for alert, expr in alerts.items():
            missing = metric_names_in(expr) - names
            assert not missing, f"{alert} reads metrics nobody exports: {missing}"
            prom.query(expr)  # parses and evaluates
        prom.wait("PyRocketMQDeadLetters true", lambda: prom.query(alerts["PyRocketMQDeadLetters"]))
        disk = strip_threshold(alerts["PyRocketMQBrokerDiskFull"], "0.85")
        assert prom.query(disk), "the disk usage ratio is exported"
        # the consumer keeps up: a moment's lag behind the producer can make one evaluation true on a
        # loaded machine, so the alert must be false within a while (a consumer that does not keep up
        # makes it true throughout, and this times out)
        prom.wait("the lag alert false while the consumer keeps up",
                  lambda: not prom.query(alerts["PyRocketMQConsumerLagGrowing"]), timeout=30)

        # -- the consumer stops: its lag grows while the producer goes on -------------------------------
        t.stop_consumer()
        lag_alert = alerts["PyRocketMQConsumerLagGrowing"]
        rows = prom.wait("the lag alert's expression true", lambda: prom.query(lag_alert))
        assert {(r["metric"]["group"], r["metric"]["topic"]) for r in rows} >= {(GROUP, BACKGROUND)}
        firing = prom.wait("PyRocketMQConsumerLagGrowing firing (rules loaded with a 1 s 'for')", lambda: [
            a for a in prom.api("alerts")["alerts"]
            if a["labels"]["alertname"] == "PyRocketMQConsumerLagGrowing" and a["state"] == "firing"])
        assert firing[0]["labels"]["group"] == GROUP

    # -- the processes go away: the down alerts' expressions become true ----------------------------------
    broker.stop()
    rows = prom.wait("PyRocketMQBrokerDown true", lambda: prom.query(alerts["PyRocketMQBrokerDown"]))
    assert rows[0]["metric"]["job"] == BROKER_JOB
    namesrv.stop()
    prom.wait("PyRocketMQNoNameServer true", lambda: prom.query(alerts["PyRocketMQNoNameServer"]))


def test_promtool_accepts_the_rules(tmp_path: Path) -> None:
    from tests.observability.prometheus import RULES, run_promtool

    result = run_promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"SUCCESS: \d+ rules found", result.stdout + result.stderr)


def test_promtool_unit_tests_fire_every_alert_and_hold_it_back_where_they_should() -> None:
    """tests/observability/alert_rules_test.yaml: each alert of the chart fires on some series and
    stays silent on others (pending, under its threshold, or on a healthy series)."""
    from tests.observability.prometheus import RULES, run_promtool

    cases = Path(__file__).with_name("alert_rules_test.yaml")
    alerts = {
        r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"] if "alert" in r
    }
    fired, silent = set(), set()
    for test in yaml.safe_load(cases.read_text())["tests"]:
        for case in test["alert_rule_test"]:
            (fired if case["exp_alerts"] else silent).add(case["alertname"])
    assert alerts and fired == alerts and silent == alerts, (alerts, fired, silent)
    result = run_promtool("test", "rules", str(cases))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
