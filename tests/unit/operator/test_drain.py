"""Draining a node that holds a master: the master's own budget holds the eviction, the operator
moves mastership to an in-sync replica on a schedulable node, and relabels the pods."""

from __future__ import annotations

import dataclasses

from pyrocketmq.operator.drain import (
    ROLE_LABEL,
    cordoned,
    drain_moves,
    handovers,
    in_sync_pods,
    role_labels,
    routed,
)
from pyrocketmq.operator.model import BrokerModel
from pyrocketmq.operator.names import namesrv_addresses
from pyrocketmq.operator.render import render_broker
from pyrocketmq.operator.settings import RenderSettings
from pyrocketmq.operator.status import short_groups

from .conftest import body, by_kind

LABEL = "pyrocketmq.io/group"
READY = {"conditions": [{"type": "Ready", "status": "True"}]}


def node(name: str, *, cordon: bool = False, ready: bool = True) -> dict:
    return {"metadata": {"name": name}, "spec": {"unschedulable": True} if cordon else {},
            "status": READY if ready else {}}  # fmt: skip


def pod(name: str, on: str, ready: bool = True, role: str | None = None) -> dict:
    labels = {LABEL: name.rsplit("-", 1)[0], **({ROLE_LABEL: role} if role else {})}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"nodeName": on},
        "status": READY if ready else {},
    }


VIEWS = {"orders-0": {"masterId": 1, "syncStateSet": [1, 2, 3]}}
MASTERS = {"orders-0": "orders-0-0"}


def test_a_master_on_a_cordoned_node_moves_to_an_in_sync_replica_on_a_schedulable_ready_node():
    pods = [pod("orders-0-0", "a"), pod("orders-0-1", "b"), pod("orders-0-2", "c")]
    nodes = [node("a", cordon=True), node("b", cordon=True), node("c")]
    assert drain_moves(MASTERS, VIEWS, pods, nodes) == {"orders-0": "orders-0-2"}
    assert drain_moves(MASTERS, VIEWS, pods, [node("a"), node("b"), node("c")]) == {}  # nothing cordoned


def test_no_move_without_a_ready_in_sync_replica_elsewhere():
    pods = [pod("orders-0-0", "a"), pod("orders-0-1", "b", ready=False), pod("orders-0-2", "c")]
    nodes = [node("a", cordon=True), node("b"), node("c", ready=False)]
    assert drain_moves(MASTERS, VIEWS, pods, nodes) == {}
    not_in_sync = {"orders-0": {"masterId": 1, "syncStateSet": [1]}}
    assert drain_moves(MASTERS, not_in_sync, [pod("orders-0-0", "a"), pod("orders-0-1", "b")],
                       [node("a", cordon=True), node("b")]) == {}  # fmt: skip


def test_the_unschedulable_taint_counts_as_cordoned_and_in_sync_pods_are_by_replica_id():
    assert cordoned(
        {"spec": {"taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}}
    )
    assert not cordoned({"spec": {}})
    assert in_sync_pods("orders-0", {"syncStateSet": [2, 1]}) == ["orders-0-1", "orders-0-0"]


def test_roles_are_relabelled_only_where_they_differ():
    pods = [
        pod("orders-0-0", "a", role="master"),
        pod("orders-0-1", "b", role="master"),
        pod("orders-0-2", "c"),
    ]
    assert role_labels({"orders-0": "orders-0-0"}, pods, LABEL) == {
        "orders-0-1": "slave",
        "orders-0-2": "slave",
    }
    assert role_labels({"orders-0": ""}, pods, LABEL) == {"orders-0-0": "slave", "orders-0-1": "slave",
                                                           "orders-0-2": "slave"}  # fmt: skip
    assert role_labels({}, pods, LABEL) == {}  # a group without a controller view keeps its labels


def _selects(spec: dict, labels: dict) -> bool:
    """What the API server's label selector does, for matchLabels and NotIn expressions."""
    sel = spec["selector"]
    if any(labels.get(k) != v for k, v in sel["matchLabels"].items()):
        return False
    return all(labels.get(e["key"]) not in e["values"] for e in sel.get("matchExpressions", ()))


def test_with_failover_each_pod_has_exactly_one_budget_by_its_role():
    model = BrokerModel.from_body(body("Broker", nameServer={"name": "n"}, groups=2, replicasPerGroup=2))
    ns = namesrv_addresses("n", "prod", 3)
    settings = RenderSettings(default_image="x")
    plain = {
        o["metadata"]["name"] for o in by_kind(render_broker(model, ns, settings), "PodDisruptionBudget")
    }
    assert plain == {"orders-0", "orders-1"}
    pdbs = {
        o["metadata"]["name"]: o["spec"]
        for o in by_kind(
            render_broker(dataclasses.replace(model, failover=True), ns, settings), "PodDisruptionBudget"
        )
    }
    assert set(pdbs) == {f"orders-{g}{s}" for g in (0, 1) for s in ("", "-master", "-slaves")}
    assert pdbs["orders-0-master"]["minAvailable"] == 1  # a master is never evicted: it hands over first
    assert pdbs["orders-0-slaves"]["minAvailable"] == 0  # of 2 replicas, the slave may go (the master stays)
    assert pdbs["orders-0"]["maxUnavailable"] == 1  # before an election: one pod at a time
    base = dict(pdbs["orders-0"]["selector"]["matchLabels"])
    for role in (None, "master", "slave"):  # the eviction API refuses a pod that two budgets select
        labels = base if role is None else {**base, ROLE_LABEL: role}
        chosen = [name for name, spec in pdbs.items() if _selects(spec, labels)]
        assert chosen == [
            {None: "orders-0", "master": "orders-0-master", "slave": "orders-0-slaves"}[role]
        ], chosen
    three = dataclasses.replace(model, failover=True, replicas_per_group=3)
    spec = {
        o["metadata"]["name"]: o["spec"]
        for o in by_kind(render_broker(three, ns, settings), "PodDisruptionBudget")
    }
    assert spec["orders-0-slaves"]["minAvailable"] == 1  # of 3: one slave at a time


def test_a_group_short_of_ready_pods_lets_no_slave_go():
    """The slaves' budget cannot see the master's pod: while the group has a pod not Ready (a master
    restarting, a slave just elected and not yet relabelled) no slave may be evicted."""
    ns = namesrv_addresses("n", "prod", 3)
    settings = RenderSettings(default_image="x")
    sts = [{"metadata": {"name": f"orders-{g}"}, "spec": {"replicas": r},
            "status": {"readyReplicas": ready}} for g, r, ready in ((0, 2, 1), (1, 3, 3))]  # fmt: skip
    assert short_groups(sts) == {"orders-0"}
    for replicas, whole, short in ((2, 0, 1), (3, 1, 2)):
        model = BrokerModel.from_body(
            body("Broker", nameServer={"name": "n"}, groups=2, replicasPerGroup=replicas)
        )
        model = dataclasses.replace(model, failover=True, short=short_groups(sts))
        spec = {
            o["metadata"]["name"]: o["spec"]
            for o in by_kind(render_broker(model, ns, settings), "PodDisruptionBudget")
        }
        assert spec["orders-0-slaves"]["minAvailable"] == short  # every slave kept
        assert spec["orders-1-slaves"]["minAvailable"] == whole  # as usual: one pod of the group at a time
        assert spec["orders-0-master"]["minAvailable"] == 1


def with_ip(p: dict, ip: str) -> dict:
    return {**p, "status": {**p["status"], "podIP": ip}}


def test_a_handover_is_relabelled_only_once_the_name_servers_route_the_new_master():
    # the controller elected orders-0-1; orders-0-0 still carries the master label (its budget holds a drain)
    pods = [with_ip(pod("orders-0-0", "a", role="master"), "10.0.0.1"),
            with_ip(pod("orders-0-1", "b", role="slave"), "10.0.0.2"),
            with_ip(pod("orders-1-0", "b", role="master"), "10.0.0.3")]
    elected = {"orders-0": "orders-0-1", "orders-1": "orders-1-0"}
    assert handovers(elected, pods, LABEL) == {"orders-0"}  # orders-1's labels follow its election
    # the name servers still route the old master, or nothing: wait; the new one's address: relabel
    assert (
        routed({"orders-0"}, elected, {"orders-0": {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}}, pods, 10911)
        == set()
    )
    assert routed({"orders-0"}, elected, {}, pods, 10911) == set()
    assert routed({"orders-0"}, elected, {"orders-0": {0: "10.0.0.2:10911"}}, pods, 10911) == {"orders-0"}
    assert (
        routed({"orders-0"}, elected, {"orders-0": {0: "10.0.0.2:10912"}}, pods, 10911) == set()
    )  # another port
    # a group without an elected master, or whose pod has no IP yet, is not routed
    assert routed({"orders-0"}, {"orders-0": ""}, {"orders-0": {0: "10.0.0.2:10911"}}, pods, 10911) == set()
    assert handovers({"orders-0": ""}, pods, LABEL) == {"orders-0"}
