"""A replica lost with its node is recreated elsewhere after spec.nodeLoss.replaceAfter, never a
master and never without a Ready master to catch up from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pyrocketmq.operator.model import BrokerModel, SpecError
from pyrocketmq.operator.nodeloss import (
    group_masters,
    lost_replicas,
    master_pods,
    parse_duration,
    stuck_without_claim,
)
from pyrocketmq.operator.replace_lost import node_loss_condition

from .conftest import body

NOW = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)
LABEL = "pyrocketmq.io/group"


def node(name: str, ready: bool, since: timedelta = timedelta(minutes=10)) -> dict:
    stamp = (NOW - since).strftime("%Y-%m-%dT%H:%M:%SZ")
    cond = {"type": "Ready", "status": "True" if ready else "Unknown", "lastTransitionTime": stamp}
    return {"metadata": {"name": name}, "status": {"conditions": [cond]}}


def pod(name: str, on: str, ready: bool = True, group: str = "orders-0") -> dict:
    return {
        "metadata": {"name": name, "labels": {LABEL: group}},
        "spec": {
            "nodeName": on,
            "volumes": [{"name": "store", "persistentVolumeClaim": {"claimName": f"store-{name}"}}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def decide(pods, nodes, master="orders-0-0", after=300.0):
    masters, healthy = group_masters(pods, nodes, {"orders-0": master}, LABEL)
    return {r.pod: r for r in lost_replicas(pods, nodes, NOW, after, masters, healthy)}


def test_a_slave_on_a_node_down_long_enough_is_replaced_with_its_claim():
    nodes = [node("a", True), node("b", False, timedelta(minutes=6))]
    lost = decide([pod("orders-0-0", "a"), pod("orders-0-1", "b", ready=False)], nodes)
    assert list(lost) == ["orders-0-1"]
    assert lost["orders-0-1"].replace and lost["orders-0-1"].claims == ("store-orders-0-1",)
    assert "orders-0-0" in lost["orders-0-1"].reason and lost["orders-0-1"].down_for == 360


def test_not_before_replace_after_and_never_on_a_ready_node():
    nodes = [node("a", True), node("b", False, timedelta(minutes=2))]
    assert decide([pod("orders-0-0", "a"), pod("orders-0-1", "b")], nodes) == {}
    assert decide([pod("orders-0-0", "a"), pod("orders-0-1", "b")], nodes, after=60)["orders-0-1"].replace


def test_the_master_waits_for_an_election():
    nodes = [node("a", False), node("b", True)]
    lost = decide([pod("orders-0-0", "a", ready=False), pod("orders-0-1", "b")], nodes)
    assert not lost["orders-0-0"].replace and "master" in lost["orders-0-0"].reason


def test_no_replacement_without_a_ready_master_on_a_ready_node():
    nodes = [node("a", True), node("b", False)]
    lost = decide([pod("orders-0-0", "a", ready=False), pod("orders-0-1", "b")], nodes)
    assert not lost["orders-0-1"].replace and "no Ready master" in lost["orders-0-1"].reason
    lost = decide([pod("orders-0-0", "a"), pod("orders-0-1", "b")], nodes, master="")  # none elected
    assert not lost["orders-0-1"].replace


def test_a_node_gone_from_the_api_counts_as_down_and_unscheduled_pods_are_skipped():
    lost = decide(
        [pod("orders-0-0", "a"), pod("orders-0-1", "gone"), pod("orders-0-2", "")], [node("a", True)]
    )
    assert list(lost) == ["orders-0-1"] and lost["orders-0-1"].replace


def test_master_pods_follow_the_controller_with_failover():
    views = {"orders-0": {"masterId": 2}, "orders-1": {"masterId": -1}}
    assert master_pods(["orders-0", "orders-1"], True, views) == {"orders-0": "orders-0-1", "orders-1": ""}
    assert master_pods(["orders-0"], False, views) == {"orders-0": "orders-0-0"}


def test_a_pending_pod_whose_claim_is_gone_is_found():
    stuck = pod("orders-0-1", "")
    stuck["status"] = {"phase": "Pending"}
    assert stuck_without_claim([stuck, pod("orders-0-0", "a")], ["store-orders-0-0"]) == ["orders-0-1"]
    assert stuck_without_claim([stuck], ["store-orders-0-1"]) == []


@pytest.mark.parametrize(("text", "seconds"), [("5m", 300), ("45s", 45), ("1h30m", 5400), ("0s", 0)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "m", "5 m", "-5m", "5d", "1m1x"])
def test_bad_durations_say_what_is_expected(text):
    with pytest.raises(ValueError, match="30s, 5m or 1h30m"):
        parse_duration(text)
    with pytest.raises(SpecError, match="spec.nodeLoss.replaceAfter"):
        BrokerModel.from_body(
            body("Broker", nameServer={"name": "n"}, nodeLoss={"replaceAfter": text or "x"})
        )


def test_the_default_is_five_minutes_and_the_condition_says_what_happened():
    assert BrokerModel.from_body(body("Broker", nameServer={"name": "n"})).replace_after == 300
    nodes = [node("a", True), node("b", False)]
    lost = list(decide([pod("orders-0-0", "a"), pod("orders-0-1", "b")], nodes).values())
    cond = node_loss_condition(lost)
    assert (cond.status, cond.reason) == (True, "ReplicasReplaced") and "orders-0-1" in cond.message
    assert node_loss_condition([]).status is False
