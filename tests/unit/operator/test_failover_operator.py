"""Automatic failover on Kubernetes: the specs, what is rendered for it, the pods' identities and
the status built from the controller's view (pure)."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.settings import BrokerRole, BrokerSettings
from pyrocketmq.namesrv.settings import NamesrvSettings
from pyrocketmq.operator.model import BrokerModel, NameServerModel, SpecError
from pyrocketmq.operator.names import namesrv_addresses
from pyrocketmq.operator.podconf import pod_conf
from pyrocketmq.operator.render import broker_conf, render_nameserver
from pyrocketmq.operator.status import broker_group_status

from .conftest import SETTINGS, body, by_kind

NS = namesrv_addresses("names", "prod", 3)


def broker(**spec) -> BrokerModel:
    spec.setdefault("nameServer", {"name": "names"})
    return BrokerModel.from_body(body("Broker", **spec))


@pytest.mark.parametrize(("spec", "message"), [
    ({"failover": {"enabled": True}}, "replicasPerGroup of 2 or more"),
])
def test_failover_needs_a_slave(spec, message) -> None:
    with pytest.raises(SpecError, match=message):
        broker(**spec)


def test_two_controllers_are_refused() -> None:
    with pytest.raises(SpecError, match="give spec.replicas 1 or 3"):
        NameServerModel.from_body(body("NameServer", name="names", replicas=2, controller={"enabled": True}))


def test_the_pods_of_a_failover_group_are_replicas_named_by_ordinal_plus_one() -> None:
    model = broker(replicasPerGroup=3, replicationMode="SYNC", failover={"enabled": True})
    template = broker_conf(model, 0, NS)
    for ordinal in (0, 2):
        conf = pod_conf(template, {"POD_NAME": f"orders-0-{ordinal}", "POD_IP": "10.0.0.9"})
        s = BrokerSettings.from_conf(dict(line.split("=", 1) for line in conf.splitlines()
                                          if line and not line.startswith("#")))
        assert s.controller.enabled and s.controller.addrs == tuple(NS)
        assert (s.identity.replica_id, s.identity.role, s.identity.master_role) == (
            ordinal + 1, BrokerRole.SLAVE, BrokerRole.SYNC_MASTER)


def test_name_servers_with_the_controller_name_their_peers_and_themselves() -> None:
    model = NameServerModel.from_body(
        body("NameServer", name="names", replicas=3, controller={"enabled": True})
    )
    sts = by_kind(render_nameserver(model, SETTINGS), "StatefulSet")[0]
    args = sts["spec"]["template"]["spec"]["containers"][0]["args"]
    sets = dict(a[len("--set="):].split("=", 1) for a in args if a.startswith("--set="))
    assert sets["enableControllerInNamesrv"] == "true"
    assert sets["controllerPeers"] == ";".join(f"n{i}-{a}" for i, a in enumerate(NS))
    # the kubelet expands $(POD_NAME); each pod then finds itself among the peers by its address
    own = sets["controllerSelfId"].replace("$(POD_NAME)", "names-2")
    s = NamesrvSettings.from_conf({**sets, "controllerSelfId": own})
    assert s.controller and s.controller_self_id == "n2"


def test_status_follows_the_controllers_choice() -> None:
    model = broker(replicasPerGroup=3, failover={"enabled": True})
    pods = [{"metadata": {"name": f"orders-0-{i}"}, "status": {"podIP": f"10.0.0.{i}",
             "conditions": [{"type": "Ready", "status": "True"}]}} for i in range(3)]
    sts = {"spec": {"replicas": 3}, "status": {"readyReplicas": 3}}
    view = {"masterId": 2, "epoch": 4, "syncStateSet": [2, 3]}
    g = broker_group_status(model, 0, sts, pods, None, False, controller=view)
    assert (
        g["master"]["pod"] == "orders-0-1" and g["epoch"] == 4 and g["inSync"] == ["orders-0-1", "orders-0-2"]
    )
    assert [(s["pod"], s["brokerId"]) for s in g["slaves"]] == [("orders-0-0", 1), ("orders-0-2", 3)]
    # the controller silent: the last known master and epoch stay
    again = broker_group_status(model, 0, sts, pods, g, False, controller=None)
    assert again["master"]["pod"] == "orders-0-1" and again["epoch"] == 4
