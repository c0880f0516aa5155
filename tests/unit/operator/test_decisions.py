"""Pure decisions: scale-down gate, pruning, conditions, status of broker groups, settings, backoff."""

from __future__ import annotations

import pytest

from pyrocketmq.operator.apply import plan_prune
from pyrocketmq.operator.model import BrokerModel
from pyrocketmq.operator.plan import Action, DrainFacts, is_user_topic, removable_groups, scale_down_decision
from pyrocketmq.operator.settings import OperatorSettings, ReconcileSettings
from pyrocketmq.operator.status import (
    Condition,
    broker_conditions,
    broker_group_status,
    merge_conditions,
    statefulset_rolled_out,
)

from .conftest import body

# -- scale-down gate --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "force", "action", "reason"),
    [
        (
            DrainFacts("b-2", served_traffic=True, registered=True, reachable=True),
            True,
            Action.REMOVE,
            "Forced",
        ),
        (DrainFacts("b-2"), False, Action.REMOVE, "NeverServed"),
        (DrainFacts("b-2", served_traffic=True, error="timeout"), False, Action.WAIT, "MasterUnreachable"),
        (DrainFacts("b-2", registered=True, reachable=False), False, Action.WAIT, "MasterUnreachable"),
        (
            DrainFacts("b-2", served_traffic=True, registered=True, reachable=True, writable_topics=("T",)),
            False,
            Action.STOP_WRITES,
            "StoppingWrites",
        ),
        (
            DrainFacts("b-2", served_traffic=True, registered=True, reachable=True, lag=(("g", 3),)),
            False,
            Action.WAIT,
            "QueuesNotDrained",
        ),
        (
            DrainFacts(
                "b-2",
                served_traffic=True,
                registered=True,
                reachable=True,
                writable_topics=("T",),
                lag=(("g", 3),),
            ),
            False,
            Action.STOP_WRITES,
            "StoppingWrites",
        ),
        (
            DrainFacts(
                "b-2", served_traffic=True, registered=True, reachable=True, unread_topics=(("T", 5),)
            ),
            False,
            Action.WAIT,
            "TopicsNotConsumed",
        ),
        (
            DrainFacts(
                "b-2",
                served_traffic=True,
                registered=True,
                reachable=True,
                lag=(("g", 3),),
                unread_topics=(("T", 5),),
            ),
            False,
            Action.WAIT,
            "QueuesNotDrained",
        ),
        (
            DrainFacts("b-2", served_traffic=True, registered=True, reachable=True),
            False,
            Action.REMOVE,
            "Drained",
        ),
    ],
)
def test_scale_down_decision(facts, force, action, reason):
    decision = scale_down_decision(facts, force)
    assert (decision.action, decision.reason) == (action, reason)
    assert "b-2" in decision.message


def test_waiting_messages_say_what_to_do():
    unreachable = scale_down_decision(DrainFacts("b-1", served_traffic=True, error="refused"))
    assert "force-scale-down" in unreachable.message and "refused" in unreachable.message
    lag = scale_down_decision(
        DrainFacts("b-1", served_traffic=True, registered=True, reachable=True, lag=(("billing", 42),))
    )
    assert "billing (42 messages)" in lag.message
    unread = scale_down_decision(DrainFacts("b-1", served_traffic=True, registered=True, reachable=True,
                                            unread_topics=(("Orders", 7),)))
    assert "Orders (7 messages)" in unread.message and "force-scale-down" in unread.message


@pytest.mark.parametrize(
    ("existing", "desired", "expected"), [({0, 1, 2}, 2, [2]), ({0, 1, 2, 3}, 1, [3, 2, 1]), ({0, 1}, 3, [])]
)
def test_removable_groups(existing, desired, expected):
    assert removable_groups(existing, desired) == expected


@pytest.mark.parametrize(
    ("topic", "user"),
    [
        ("Orders", True),
        ("TBW102", False),
        ("%RETRY%g", False),
        ("%DLQ%g", False),
        ("RMQ_SYS_TRANS_HALF_TOPIC", False),
        ("Cluster", False),
        ("b-0", False),
        ("SCHEDULE_TOPIC_XXXX", False),
    ],
)
def test_user_topics(topic, user):
    assert is_user_topic(topic, "Cluster", frozenset({"b-0"})) is user


# -- pruning ----------------------------------------------------------------------------------------


def obj(kind, name, uid="u"):
    return {"kind": kind, "metadata": {"name": name, "ownerReferences": [{"uid": uid}]}}


def test_prune_deletes_only_owned_undesired_objects_workloads_first():
    desired = [obj("StatefulSet", "b-0"), obj("ConfigMap", "b-0-config")]
    existing = [
        obj("ConfigMap", "b-1-config"),
        obj("StatefulSet", "b-1"),
        obj("StatefulSet", "b-0"),
        obj("Service", "b-1-headless"),
        obj("StatefulSet", "other", uid="someone-else"),
        {"kind": "ConfigMap", "metadata": {"name": "unowned"}},
    ]
    assert plan_prune(desired, existing, "u") == [
        ("StatefulSet", "b-1"),
        ("Service", "b-1-headless"),
        ("ConfigMap", "b-1-config"),
    ]


def test_nothing_to_prune_when_all_desired():
    objs = [obj("StatefulSet", "a"), obj("Service", "a")]
    assert plan_prune(objs, objs, "u") == []


# -- conditions -------------------------------------------------------------------------------------


def test_merge_conditions_keeps_transition_time_unless_status_flips():
    first = merge_conditions(None, [Condition("Ready", False, "PodsNotReady", "0/1")], 1, "T1")
    assert first == [{"type": "Ready", "status": "False", "reason": "PodsNotReady", "message": "0/1",
                      "lastTransitionTime": "T1", "observedGeneration": 1}]
    same = merge_conditions(first, [Condition("Ready", False, "PodsNotReady", "0/2")], 2, "T2")
    assert (
        same[0]["lastTransitionTime"] == "T1"
        and same[0]["observedGeneration"] == 2
        and same[0]["message"] == "0/2"
    )
    flipped = merge_conditions(same, [Condition("Ready", True, "ClusterReady")], 2, "T3")
    assert flipped[0]["lastTransitionTime"] == "T3" and flipped[0]["status"] == "True"


def test_merge_conditions_orders_and_keeps_other_types():
    merged = merge_conditions(
        [{"type": "Custom", "status": "True"}],
        [
            Condition("Degraded", None, "Unknown"),
            Condition("Ready", True, "Ok"),
            Condition("Reconciling", False, "Done"),
        ],
        1,
        "T",
    )
    assert [c["type"] for c in merged] == ["Ready", "Reconciling", "Degraded", "Custom"]
    assert merged[2]["status"] == "Unknown"


def model(**spec):
    spec.setdefault("nameServer", {"name": "n"})
    return BrokerModel.from_body(body("Broker", name="b", **spec))


def pod(name, ip=None, ready=False):
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if ip:
        status["podIP"] = ip
    return {"metadata": {"name": name}, "status": status}


def test_group_status_lists_master_and_slaves_with_addresses():
    sts = {"spec": {"replicas": 3}, "status": {"readyReplicas": 2}}
    pods = [
        pod("b-0-0", "10.0.0.1", True),
        pod("b-0-1", "10.0.0.2", True),
        pod("b-0-2"),
        pod("b-1-0", "10.9.9.9", True),
    ]
    g = broker_group_status(model(replicasPerGroup=3), 0, sts, pods, None, draining=False)
    assert g["name"] == "b-0" and g["phase"] == "Active" and g["replicas"] == 3 and g["readyReplicas"] == 2
    assert g["master"] == {"pod": "b-0-0", "address": "10.0.0.1:10911", "ready": True}
    assert g["slaves"] == [
        {"pod": "b-0-1", "address": "10.0.0.2:10911", "ready": True, "brokerId": 1},
        {"pod": "b-0-2", "address": "", "ready": False, "brokerId": 2},
    ]
    assert g["servedTraffic"] is True


def test_a_draining_group_without_pods_is_reported_not_ready():
    g = broker_group_status(model(), 0, {"spec": {"replicas": 1}, "status": {}}, [], None, draining=True)
    assert g["master"] == {"pod": "b-0-0", "address": "", "ready": False}
    assert g["readyReplicas"] == 0 and g["phase"] == "Draining" and not g["servedTraffic"]


def test_served_traffic_is_remembered():
    g = broker_group_status(model(), 0, None, [pod("b-0-0")], {"servedTraffic": True}, draining=False)
    assert g["servedTraffic"] is True and g["master"]["ready"] is False


def group(name, ready, replicas=2, phase="Active", served=False, master_ready=None):
    return {
        "name": name,
        "readyReplicas": ready,
        "replicas": replicas,
        "phase": phase,
        "servedTraffic": served,
        "master": {"ready": ready > 0 if master_ready is None else master_ready},
    }


def conds(*args):
    return {c.type: c for c in broker_conditions(*args)}


def test_broker_ready_when_every_pod_is():
    c = conds([group("b-0", 2), group("b-1", 2)], 2, True, [])
    assert c["Ready"].status is True and c["Reconciling"].status is False and c["Degraded"].status is False
    assert c["ScaleDownPending"].status is False


def test_broker_not_ready_names_the_groups():
    c = conds([group("b-0", 2), group("b-1", 1)], 2, False, [])
    assert (
        c["Ready"].status is False and c["Ready"].reason == "PodsNotReady" and "b-1 1/2" in c["Ready"].message
    )
    assert c["Reconciling"].status is True and c["Reconciling"].reason == "RollingUpdate"


def test_a_waiting_scale_down_is_a_condition_with_its_reason():
    c = conds(
        [group("b-0", 2), group("b-1", 2, phase="Draining")], 1, True, [("b-1", "QueuesNotDrained", "lag")]
    )
    assert c["ScaleDownPending"].status is True and c["ScaleDownPending"].reason == "QueuesNotDrained"
    assert c["Reconciling"].reason == "ScalingDown" and c["Ready"].status is True


def test_degraded_when_a_master_that_served_is_down():
    c = conds([group("b-0", 1, served=True, master_ready=False)], 1, True, [])
    assert c["Degraded"].status is True and "b-0" in c["Degraded"].message


def test_missing_groups():
    assert conds([group("b-0", 2)], 2, True, [])["Ready"].reason == "GroupsMissing"


def _sts(generation: int = 2, updated_replicas: int = 2, update_revision: str = "a") -> dict:
    """Two replicas at revision ``a``, generation 2 observed."""
    return {
        "metadata": {"generation": generation},
        "spec": {"replicas": 2},
        "status": {
            "observedGeneration": 2,
            "updatedReplicas": updated_replicas,
            "currentRevision": "a",
            "updateRevision": update_revision,
        },
    }


@pytest.mark.parametrize(
    ("sts", "rolled"),
    [
        (_sts(), True),
        (_sts(generation=3), False),
        (_sts(updated_replicas=1, update_revision="b"), False),
    ],
)
def test_rollout_detection(sts, rolled):
    assert statefulset_rolled_out(sts) is rolled


# -- settings ---------------------------------------------------------------------------------------


def test_settings_from_env():
    s = OperatorSettings.from_env({
        "PYROCKETMQ_OPERATOR_IMAGE": "r/p:1",
        "PYROCKETMQ_OPERATOR_RESYNC_INTERVAL": "3",
        "PYROCKETMQ_OPERATOR_NAMESPACES": "a,b",
        "PYROCKETMQ_OPERATOR_METRICS_PORT": "off",
        "PYROCKETMQ_OPERATOR_LIVENESS_ENDPOINT": "off",
    })
    assert s.render.default_image == "r/p:1" and s.reconcile.resync_interval == 3.0
    assert (
        s.watch.namespaces == ("a", "b")
        and s.watch.metrics_port is None
        and s.watch.liveness_endpoint is None
    )
    assert OperatorSettings.from_env({}) == OperatorSettings()


@pytest.mark.parametrize(("retry", "delay"), [(0, 2.0), (1, 4.0), (3, 16.0), (5, 60.0), (100, 60.0)])
def test_backoff_doubles_and_is_capped(retry, delay):
    assert ReconcileSettings().backoff(retry) == delay
