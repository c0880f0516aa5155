"""ConsumerGroup spec.autoscale: the lag → replicas decision and its stabilization window."""

import pytest

from pyrocketmq.operator.autoscale import Autoscale, history_of, recommend, stabilize
from pyrocketmq.operator.model import ConsumerGroupModel, SpecError


def spec(**over):
    base = {"scaleTargetRef": {"kind": "Deployment", "name": "workers"}, "lagPerReplica": 100,
            "minReplicas": 1, "maxReplicas": 6, "scaleDownStabilizationSeconds": 60}
    base.update(over)
    return Autoscale.from_spec(base)


@pytest.mark.parametrize(
    ("lag", "queues", "replicas", "reason"),
    [
        (0, 8, 1, "MinReplicas"),
        (1, 8, 1, "LagBound"),
        (100, 8, 1, "LagBound"),
        (101, 8, 2, "LagBound"),
        (550, 8, 6, "LagBound"),
        (10_000, 8, 6, "MaxReplicas"),
        (10_000, 4, 4, "QueueBound"),
        (450, 4, 4, "QueueBound"),
        (350, 0, 4, "LagBound"),  # no queue facts yet: the lag alone decides
    ],
)
def test_recommendation_follows_lag_within_bounds_and_queues(lag, queues, replicas, reason):
    rec = recommend(lag, queues, spec())
    assert (rec.replicas, rec.reason) == (replicas, reason)


def test_min_replicas_above_the_queue_count_wins():
    assert recommend(10_000, 2, spec(minReplicas=3)).replicas == 3


def test_scale_to_zero_when_allowed():
    assert recommend(0, 4, spec(minReplicas=0)).replicas == 0


def test_scale_up_is_immediate_and_scale_down_waits_for_the_window():
    up = stabilize(1, 5, [], 1_000, 60)
    assert (up.replicas, up.held) == (5, False)
    # lag drained 10 s later: the window still holds the 5
    down = stabilize(5, 1, up.history, 11_000, 60)
    assert (down.replicas, down.held) == (5, True)
    # a middle recommendation inside the window: down to the highest one still in it
    mid = stabilize(5, 3, [(1_000, 5)], 30_000, 60)
    assert mid.replicas == 5
    later = stabilize(5, 1, [(1_000, 5), (30_000, 3)], 62_000, 60)
    assert (later.replicas, later.held) == (3, True)
    assert [t for t, _ in later.history] == [30_000, 62_000]
    done = stabilize(3, 1, later.history, 95_000, 60)
    assert (done.replicas, done.held) == (1, False)


def test_zero_window_scales_down_at_once():
    assert stabilize(6, 2, [(0, 6)], 1, 0).replicas == 2


def test_history_survives_a_round_trip_through_the_status_and_drops_junk():
    status = {
        "recommendations": [
            {"time": 5, "replicas": 2},
            {"time": "x"},
            {"replicas": 1},
            {"time": 9, "replicas": "3"},
        ]
    }
    assert history_of(status) == [(5, 2), (9, 3)]
    assert history_of(None) == []


@pytest.mark.parametrize(
    ("over", "fix"),
    [
        (
            {"scaleTargetRef": {"kind": "CronJob", "name": "x"}},
            "use one of Deployment, StatefulSet, ReplicaSet",
        ),
        ({"scaleTargetRef": {"kind": "Deployment"}}, "name the workload"),
        ({"lagPerReplica": 0}, "at least 1"),
        ({"minReplicas": 7}, "must be between 0 and maxReplicas"),
        ({"scaleDownStabilizationSeconds": -1}, "must not be negative"),
    ],
)
def test_an_invalid_autoscale_says_what_to_fix(over, fix):
    body = {
        "apiVersion": "pyrocketmq.io/v1alpha1",
        "kind": "ConsumerGroup",
        "metadata": {"name": "g", "namespace": "ns", "generation": 1},
        "spec": {
            "clusterRef": {"name": "c"},
            "autoscale": {
                "scaleTargetRef": {"kind": "Deployment", "name": "w"},
                "lagPerReplica": 10,
                "maxReplicas": 6,
                **over,
            },
        },
    }
    with pytest.raises(SpecError, match=fix):
        ConsumerGroupModel.from_body(body)


def test_the_model_carries_the_autoscale_spec():
    body = {"apiVersion": "pyrocketmq.io/v1alpha1", "kind": "ConsumerGroup",
            "metadata": {"name": "g", "namespace": "ns", "generation": 1},
            "spec": {"clusterRef": {"name": "c"}, "autoscale": {
                "scaleTargetRef": {"kind": "StatefulSet", "name": "w"}, "lagPerReplica": 10}}}
    a = ConsumerGroupModel.from_body(body).autoscale
    assert a == Autoscale("StatefulSet", "w", 10, 1, 10, 300)
    assert a.target == "StatefulSet/w"
