"""Placement: the pods of a broker group (or a NameServer) must run on different nodes when the
cluster has a node for each, should otherwise, spread over zones either way; the Spread condition
says which, and each group's status names the node and zone of its master and slaves."""

from __future__ import annotations

import dataclasses

import pytest

from pyrocketmq.operator.model import BrokerModel, NameServerModel
from pyrocketmq.operator.names import namesrv_addresses
from pyrocketmq.operator.render import render_broker, render_nameserver
from pyrocketmq.operator.render.common import LABEL_GROUP
from pyrocketmq.operator.status import broker_group_status, master_columns, node_zones, spread_condition

from .conftest import SETTINGS, body, one

NS = namesrv_addresses("names", "prod", 2)


def broker(nodes: int | None, **spec) -> BrokerModel:
    spec.setdefault("nameServer", {"name": "names"})
    return dataclasses.replace(BrokerModel.from_body(body("Broker", **spec)), nodes=nodes)


def pod_spec(model: BrokerModel, group: str = "orders-0") -> dict:
    return one(render_broker(model, NS, SETTINGS), "StatefulSet", group)["spec"]["template"]["spec"]


@pytest.mark.parametrize(("replicas", "nodes", "required"), [
    (2, 3, True), (2, 2, True), (3, 3, True), (3, 2, False), (2, 1, False), (2, None, False), (1, 3, False),
])  # fmt: skip
def test_a_groups_replicas_must_be_on_different_nodes_when_there_is_a_node_for_each(
    replicas, nodes, required
):
    spec = pod_spec(broker(nodes, replicasPerGroup=replicas))
    anti = spec["affinity"]["podAntiAffinity"]
    selector = {"matchLabels": one(render_broker(broker(nodes, replicasPerGroup=replicas), NS, SETTINGS),
                                   "StatefulSet", "orders-0")["spec"]["selector"]["matchLabels"]}  # fmt: skip
    if required:
        assert anti == {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}]}  # fmt: skip
    else:
        [term] = anti["preferredDuringSchedulingIgnoredDuringExecution"]
        assert term["podAffinityTerm"] == {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
    [zones] = spec["topologySpreadConstraints"]
    assert zones["topologyKey"] == "topology.kubernetes.io/zone" and zones["labelSelector"] == selector
    assert zones["whenUnsatisfiable"] == "ScheduleAnyway" and zones["maxSkew"] == 1
    assert selector["matchLabels"][LABEL_GROUP] == "orders-0"  # one group's pods, not the cluster's


def test_the_users_affinity_and_spread_replace_the_defaults():
    own = {"affinity": {"nodeAffinity": {"x": 1}}, "topologySpreadConstraints": [{"maxSkew": 2}]}
    spec = pod_spec(broker(3, replicasPerGroup=2, scheduling=own))
    assert spec["affinity"] == {"nodeAffinity": {"x": 1}} and spec["topologySpreadConstraints"] == [
        {"maxSkew": 2}
    ]


def test_name_servers_spread_the_same_way():
    model = dataclasses.replace(NameServerModel.from_body(body("NameServer", replicas=3)), nodes=3)
    spec = one(render_nameserver(model, SETTINGS), "StatefulSet", "orders")["spec"]["template"]["spec"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" in spec["affinity"]["podAntiAffinity"]
    assert spec["topologySpreadConstraints"][0]["topologyKey"] == "topology.kubernetes.io/zone"
    fewer = dataclasses.replace(model, nodes=2)
    spec = one(render_nameserver(fewer, SETTINGS), "StatefulSet", "orders")["spec"]["template"]["spec"]
    assert "preferredDuringSchedulingIgnoredDuringExecution" in spec["affinity"]["podAntiAffinity"]


def test_a_lost_node_does_not_change_the_template():
    """Nodes are counted whatever their state: NotReady or cordoned nodes still count."""
    assert pod_spec(broker(3, replicasPerGroup=2)) == pod_spec(broker(3, replicasPerGroup=2))
    assert pod_spec(broker(3, replicasPerGroup=2)) != pod_spec(broker(1, replicasPerGroup=2))


@pytest.mark.parametrize(("replicas", "nodes", "status", "reason"), [
    (2, 3, True, "OnePerNode"), (3, 2, False, "TooFewNodes"), (2, None, False, "NodesUnknown"),
    (1, 1, True, "SingleReplica"),
])  # fmt: skip
def test_the_spread_condition_says_which(replicas, nodes, status, reason):
    cond = spread_condition(replicas, nodes, "group")
    assert (cond.type, cond.status, cond.reason) == ("Spread", status, reason)
    assert cond.message


def test_group_status_names_each_members_node_and_zone():
    model = broker(3, replicasPerGroup=2)
    pods = [
        {"metadata": {"name": f"orders-0-{i}"}, "spec": {"nodeName": f"n{i + 1}"},
         "status": {"podIP": f"10.0.0.{i}", "conditions": [{"type": "Ready", "status": "True"}]}}
        for i in range(2)
    ]  # fmt: skip
    nodes = [{"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "zone-a"}}},
             {"metadata": {"name": "n2"}}]  # fmt: skip
    status = broker_group_status(model, 0, None, pods, None, draining=False, zones=node_zones(nodes))
    assert status["master"]["node"] == "n1" and status["master"]["zone"] == "zone-a"
    assert status["slaves"][0]["node"] == "n2" and status["slaves"][0]["zone"] == ""
    unscheduled = broker_group_status(model, 0, None, [], None, draining=False)
    assert "node" not in unscheduled["master"]


def test_the_master_columns_list_every_active_group():
    groups = [
        {
            "name": "orders-0",
            "phase": "Active",
            "epoch": 3,
            "master": {"pod": "orders-0-1", "node": "n2", "zone": "zone-b"},
        },
        {"name": "orders-1", "phase": "Active", "epoch": 1, "master": {"pod": "", "address": ""}},
        {"name": "orders-2", "phase": "Draining", "master": {"pod": "orders-2-0", "node": "n1"}},
    ]
    assert master_columns(groups) == {
        "masters": "orders-0-1,-",
        "masterNodes": "n2,-",
        "masterZones": "zone-b,-",
        "epochs": "3,1",
    }
    assert "epochs" not in master_columns([{"master": {"pod": "orders-0-0"}}])
