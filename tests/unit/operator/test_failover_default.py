"""Failover on by default: a Broker with groups of 2 or more replicas gets automatic failover when
its NameServer runs a controller (on by default except with 2 name servers), whose instances keep
their state on claims of their own."""

from __future__ import annotations

import pytest

from pyrocketmq.operator.model import BrokerModel, NameServerModel, SpecError
from pyrocketmq.operator.render import render_nameserver
from pyrocketmq.operator.status import failover_condition

from .conftest import SETTINGS, body, one


def broker(**spec) -> BrokerModel:
    spec.setdefault("nameServer", {"name": "names"})
    return BrokerModel.from_body(body("Broker", **spec))


@pytest.mark.parametrize(("spec", "controller", "on", "reason"), [
    ({"replicasPerGroup": 2}, True, True, "ControllerElects"),
    ({"replicasPerGroup": 3}, True, True, "ControllerElects"),
    ({"replicasPerGroup": 2}, False, False, "NoController"),
    ({"replicasPerGroup": 1}, True, False, "SingleReplica"),
    ({"replicasPerGroup": 2, "failover": {"enabled": False}}, True, False, "Disabled"),
    ({"replicasPerGroup": 2, "failover": {"enabled": True}}, True, True, "ControllerElects"),
])  # fmt: skip
def test_failover_is_on_by_default_where_a_controller_can_elect(spec, controller, on, reason):
    model = broker(**spec).with_controller(controller)
    assert model.failover is on
    cond = failover_condition(model, controller)
    assert (cond.status, cond.reason) == (on, reason) and cond.message


def test_failover_asked_for_stays_asked_for():
    assert broker(replicasPerGroup=2, failover={"enabled": True}).with_controller(False).failover is True
    with pytest.raises(SpecError, match="replicasPerGroup"):
        broker(replicasPerGroup=1, failover={"enabled": True})


@pytest.mark.parametrize(("replicas", "controller"), [(1, True), (2, False), (3, True), (5, True)])
def test_name_servers_run_a_controller_by_default_unless_two(replicas, controller):
    assert NameServerModel.from_body(body("NameServer", replicas=replicas)).controller is controller


def test_the_controllers_state_is_on_a_claim_per_pod():
    model = NameServerModel.from_body(body("NameServer", replicas=3))
    sts = one(render_nameserver(model, SETTINGS), "StatefulSet", "orders")
    [claim] = sts["spec"]["volumeClaimTemplates"]
    assert (
        claim["metadata"]["name"] == "controller"
        and claim["spec"]["resources"]["requests"]["storage"] == "1Gi"
    )
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    container = sts["spec"]["template"]["spec"]["containers"][0]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "controller")
    assert f"--set=controllerStorePath={mount['mountPath']}/state.json" in container["args"]


def test_an_ephemeral_controller_store_and_no_controller_need_no_claim():
    eph = NameServerModel.from_body(
        body("NameServer", replicas=3, controller={"storage": {"type": "ephemeral"}})
    )
    sts = one(render_nameserver(eph, SETTINGS), "StatefulSet", "orders")
    assert "volumeClaimTemplates" not in sts["spec"]
    assert {"name": "controller", "emptyDir": {"sizeLimit": "1Gi"}} in sts["spec"]["template"]["spec"][
        "volumes"
    ]
    two = NameServerModel.from_body(body("NameServer", replicas=2))
    sts = one(render_nameserver(two, SETTINGS), "StatefulSet", "orders")
    assert "volumeClaimTemplates" not in sts["spec"]
    assert not [a for a in sts["spec"]["template"]["spec"]["containers"][0]["args"] if "controller" in a]
    with pytest.raises(SpecError, match="spec.controller.storage.type"):
        NameServerModel.from_body(body("NameServer", replicas=3, controller={"storage": {"type": "tmpfs"}}))
