"""Broker renderer: the objects, their counts and names, broker.conf, storage, owner references."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.settings import BrokerRole, BrokerSettings
from pyrocketmq.operator.model import BrokerModel, SpecError
from pyrocketmq.operator.names import namesrv_addresses
from pyrocketmq.operator.podconf import pod_conf
from pyrocketmq.operator.render import broker_conf, render_broker
from pyrocketmq.operator.render.broker import master_endpoints
from pyrocketmq.operator.render.common import ANNOTATION_CONFIG_HASH, LABEL_GROUP, LABEL_MANAGED_BY

from .conftest import SETTINGS, body, broker, by_kind, conf_dict, one

NS = namesrv_addresses("names", "prod", 2)


@pytest.mark.parametrize("groups", [1, 2, 3])
@pytest.mark.parametrize("replicas", [1, 2, 3])
def test_one_statefulset_per_group_with_the_group_size(groups, replicas):
    objects = render_broker(broker(groups=groups, replicasPerGroup=replicas), NS, SETTINGS)
    sts = by_kind(objects, "StatefulSet")
    assert [s["metadata"]["name"] for s in sts] == [f"orders-{i}" for i in range(groups)]
    assert all(s["spec"]["replicas"] == replicas for s in sts)
    assert [c["metadata"]["name"] for c in by_kind(objects, "ConfigMap")] == [
        f"orders-{i}-config" for i in range(groups)
    ]
    assert [p["metadata"]["name"] for p in by_kind(objects, "PodDisruptionBudget")] == [
        f"orders-{i}" for i in range(groups)
    ]
    services = sorted(s["metadata"]["name"] for s in by_kind(objects, "Service"))
    assert services == sorted(["orders-broker", *(f"orders-{i}-headless" for i in range(groups))])
    assert [s["metadata"]["name"] for s in by_kind(objects, "ServiceAccount")] == ["orders-broker"]
    assert len(objects) == 2 + 4 * groups


def test_every_object_is_owned_labelled_and_namespaced():
    objects = render_broker(broker(groups=2), NS, SETTINGS)
    for o in objects:
        meta = o["metadata"]
        assert meta["namespace"] == "prod"
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "pyrocketmq.io/v1alpha1",
                "kind": "Broker",
                "name": "orders",
                "uid": "uid-orders",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert meta["labels"][LABEL_MANAGED_BY] == "pyrocketmq-operator"
        assert meta["labels"]["app.kubernetes.io/instance"] == "orders"
        assert meta["labels"]["app.kubernetes.io/component"] == "broker"


def test_group_objects_select_only_their_group():
    objects = render_broker(broker(groups=2, replicasPerGroup=2), NS, SETTINGS)
    sts = one(objects, "StatefulSet", "orders-1")
    selector = sts["spec"]["selector"]["matchLabels"]
    assert selector[LABEL_GROUP] == "orders-1"
    assert sts["spec"]["template"]["metadata"]["labels"] == selector
    assert one(objects, "Service", "orders-1-headless")["spec"]["selector"] == selector
    assert one(objects, "PodDisruptionBudget", "orders-1")["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": selector},
    }
    assert sts["spec"]["serviceName"] == "orders-1-headless"
    cluster_selector = one(objects, "Service", "orders-broker")["spec"]["selector"]
    assert LABEL_GROUP not in cluster_selector and set(cluster_selector.items()) <= set(selector.items())
    affinity = sts["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    term = affinity["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert (
        term["labelSelector"]["matchLabels"] == selector and term["topologyKey"] == "kubernetes.io/hostname"
    )


def test_headless_service_publishes_pods_before_they_are_ready():
    svc = one(render_broker(broker(), NS, SETTINGS), "Service", "orders-0-headless")
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    assert {p["name"]: p["port"] for p in svc["spec"]["ports"]} == {
        "remoting": 10911,
        "fast": 10909,
        "ha": 10912,
        "metrics": 5557,
        "grpc": 8081,
    }


def test_the_grpc_endpoint_is_served_and_exposed_unless_turned_off():
    objects = render_broker(broker(), NS, SETTINGS)
    conf = one(objects, "ConfigMap", "orders-0-config")["data"]["broker.conf"]
    assert "grpcListenPort=8081" in conf.splitlines()
    container = one(objects, "StatefulSet", "orders-0")["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "grpc", "containerPort": 8081, "protocol": "TCP"} in container["ports"]
    assert any(p["name"] == "grpc" for p in one(objects, "Service", "orders-broker")["spec"]["ports"])
    off = render_broker(broker(grpc={"enabled": False}), NS, SETTINGS)
    assert "grpcListenPort" not in one(off, "ConfigMap", "orders-0-config")["data"]["broker.conf"]
    assert not any(p["name"] == "grpc" for p in one(off, "Service", "orders-broker")["spec"]["ports"])


def test_grpc_and_metrics_need_different_ports():
    from pyrocketmq.operator.model import BrokerModel, SpecError

    body = {
        "apiVersion": "pyrocketmq.io/v1alpha1",
        "kind": "Broker",
        "metadata": {"name": "b", "namespace": "ns"},
        "spec": {"nameServer": {"name": "ns"}, "grpc": {"port": 5557}},
    }
    with pytest.raises(SpecError, match="spec.grpc.port 5557"):
        BrokerModel.from_body(body)


@pytest.mark.parametrize(
    ("mode", "role"), [("ASYNC", "ASYNC_MASTER"), ("SYNC", "SYNC_MASTER")]
)
@pytest.mark.parametrize(("flush", "flush_type"), [("ASYNC", "ASYNC_FLUSH"), ("SYNC", "SYNC_FLUSH")])
def test_broker_conf_names_the_name_servers_by_dns(mode, role, flush, flush_type):
    model = broker(groups=2, replicasPerGroup=2, replicationMode=mode, flushMode=flush, clusterName="Orders")
    conf = conf_dict(broker_conf(model, 1, NS))
    assert conf["namesrvAddr"] == "names-0.names-headless.prod.svc:9876;names-1.names-headless.prod.svc:9876"
    assert conf["brokerClusterName"] == "Orders"
    assert conf["brokerName"] == "orders-1"
    assert conf["brokerId"] == "0" and conf["brokerRole"] == role
    assert conf["flushDiskType"] == flush_type
    assert conf["listenPort"] == "10911" and conf["haListenPort"] == "10912"
    assert conf["storePathRootDir"] == "/var/lib/pyrocketmq/store"


def test_cluster_name_defaults_to_the_resource_name():
    assert conf_dict(broker_conf(broker(), 0, NS))["brokerClusterName"] == "orders"


def test_config_overrides_are_appended_and_rendered_as_properties():
    model = broker(config={"fileReservedTime": 48, "autoCreateTopicEnable": "false", "brokerPermission": 6})
    text = broker_conf(model, 0, NS)
    conf = conf_dict(text)
    assert conf["fileReservedTime"] == "48" and conf["autoCreateTopicEnable"] == "false"
    assert text.index("# spec.config") < text.index("autoCreateTopicEnable")


@pytest.mark.parametrize(
    "key", ["brokerName", "namesrvAddr", "brokerRole", "brokerIP1", "storePathRootDir", "haListenPort"]
)
def test_operator_owned_keys_cannot_be_overridden(key):
    with pytest.raises(SpecError, match=key):
        broker(config={key: "x"})


@pytest.mark.parametrize(
    ("ordinal", "broker_id", "role"),
    [(0, 0, BrokerRole.SYNC_MASTER), (1, 1, BrokerRole.SLAVE), (2, 2, BrokerRole.SLAVE)],
)
def test_rendered_conf_through_the_entrypoint_is_a_valid_broker_conf_per_ordinal(ordinal, broker_id, role):
    model = broker(replicasPerGroup=3, replicationMode="SYNC")
    template = broker_conf(model, 0, NS)
    text = pod_conf(template, {"POD_NAME": f"orders-0-{ordinal}", "POD_IP": "10.1.2.3"})
    settings = BrokerSettings.from_conf(conf_dict(text))
    assert settings.identity.broker_id == broker_id and settings.identity.role == role
    assert settings.identity.broker_name == "orders-0" and settings.network.broker_ip == "10.1.2.3"
    assert settings.network.namesrv_addrs == tuple(NS)


def test_pods_learn_their_identity_from_the_downward_api():
    sts = one(render_broker(broker(), NS, SETTINGS), "StatefulSet", "orders-0")
    container = sts["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["broker"]
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["POD_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert env["BROKER_CONF_TEMPLATE"]["value"] == "/etc/pyrocketmq/broker.conf"
    volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    assert volumes["config"] == {"name": "config", "configMap": {"name": "orders-0-config"}}


def test_updates_roll_from_the_highest_ordinal_so_the_master_goes_last():
    sts = one(render_broker(broker(replicasPerGroup=3), NS, SETTINGS), "StatefulSet", "orders-0")
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}


@pytest.mark.parametrize(
    ("storage", "claim_class", "retention"),
    [
        ({}, None, "Retain"),
        ({"size": "50Gi", "storageClassName": "fast"}, "fast", "Retain"),
        ({"deleteClaim": True}, None, "Delete"),
    ],
)
def test_persistent_storage_is_a_claim_template(storage, claim_class, retention):
    sts = one(render_broker(broker(storage=storage), NS, SETTINGS), "StatefulSet", "orders-0")
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "store"
    assert claim["spec"]["resources"]["requests"]["storage"] == storage.get("size", "10Gi")
    assert claim["spec"].get("storageClassName") == claim_class
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": retention,
        "whenScaled": retention,
    }
    assert "store" not in {v["name"] for v in sts["spec"]["template"]["spec"]["volumes"]}
    mounts = {
        m["name"]: m["mountPath"] for m in sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    }
    assert mounts["store"] == "/var/lib/pyrocketmq"


def test_ephemeral_storage_is_an_empty_dir():
    sts = one(
        render_broker(broker(storage={"type": "ephemeral", "size": "2Gi"}), NS, SETTINGS),
        "StatefulSet",
        "orders-0",
    )
    assert (
        "volumeClaimTemplates" not in sts["spec"]
        and "persistentVolumeClaimRetentionPolicy" not in sts["spec"]
    )
    volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    assert volumes["store"] == {"name": "store", "emptyDir": {"sizeLimit": "2Gi"}}


def test_image_resources_and_scheduling_propagate():
    resources = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": 2147483648}}
    scheduling = {
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "mq", "operator": "Exists"}],
        "affinity": {"nodeAffinity": {"x": 1}},
        "priorityClassName": "high",
    }
    model = broker(
        image="repo/pyrocketmq:9", imagePullPolicy="Always", resources=resources, scheduling=scheduling
    )
    sts = one(render_broker(model, NS, SETTINGS), "StatefulSet", "orders-0")
    pod = sts["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == "repo/pyrocketmq:9" and container["imagePullPolicy"] == "Always"
    assert container["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"memory": "2147483648"},
    }
    assert pod["nodeSelector"] == {"disk": "ssd"} and pod["tolerations"] == [
        {"key": "mq", "operator": "Exists"}
    ]
    assert pod["affinity"] == {"nodeAffinity": {"x": 1}} and pod["priorityClassName"] == "high"


def test_default_image_and_no_resources_when_absent():
    container = one(render_broker(broker(), NS, SETTINGS), "StatefulSet", "orders-0")["spec"]["template"][
        "spec"
    ]["containers"][0]
    assert container["image"] == "registry.example/pyrocketmq:default"
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert "resources" not in container


def test_metrics_can_be_switched_off():
    objects = render_broker(broker(metrics={"enabled": False}), NS, SETTINGS)
    sts = one(objects, "StatefulSet", "orders-0")
    assert "metrics" not in {p["name"] for p in sts["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert "prometheus.io/scrape" not in sts["spec"]["template"]["metadata"]["annotations"]
    assert "metrics" not in {p["name"] for p in one(objects, "Service", "orders-broker")["spec"]["ports"]}


def test_a_config_change_changes_the_pod_template_so_pods_roll():
    def template_hash(model, ns):
        sts = one(render_broker(model, ns, SETTINGS), "StatefulSet", "orders-0")
        return sts["spec"]["template"]["metadata"]["annotations"][ANNOTATION_CONFIG_HASH]

    base = template_hash(broker(), NS)
    assert template_hash(broker(), NS) == base
    assert template_hash(broker(config={"fileReservedTime": 12}), NS) != base
    assert template_hash(broker(), namesrv_addresses("names", "prod", 3)) != base


def test_draining_groups_are_kept_when_asked():
    objects = render_broker(broker(groups=2), NS, SETTINGS, groups=[0, 1, 2])
    assert [s["metadata"]["name"] for s in by_kind(objects, "StatefulSet")] == [
        "orders-0",
        "orders-1",
        "orders-2",
    ]


def test_pods_run_unprivileged_without_an_api_token():
    pod = one(render_broker(broker(), NS, SETTINGS), "StatefulSet", "orders-0")["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False and pod["serviceAccountName"] == "orders-broker"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"nameServer": {}}, "nameServer"),
        ({"nameServer": {"name": "a", "addresses": ["b:9876"]}}, "nameServer"),
        ({"nameServer": {"name": "a"}, "replicasPerGroup": 0}, "replicasPerGroup"),
        ({"nameServer": {"name": "a"}, "groups": 0}, "groups"),
        ({"nameServer": {"name": "a"}, "replicationMode": "SYNC", "replicasPerGroup": 1}, "replicasPerGroup"),
        ({"nameServer": {"name": "a"}, "storage": {"type": "tmpfs"}}, "storage.type"),
    ],
)
def test_unusable_specs_are_refused(spec, match):
    with pytest.raises(SpecError, match=match):
        BrokerModel.from_body(body("Broker", **spec))


def test_external_name_server_addresses_are_taken_as_given():
    model = broker(nameServer={"addresses": ["ns1.example:9876", "ns2.example:9876"]})
    assert model.namesrv_name is None and model.namesrv_addresses == ("ns1.example:9876", "ns2.example:9876")


def test_the_force_scale_down_annotation_is_read():
    b = body("Broker", nameServer={"name": "n"})
    b["metadata"]["annotations"] = {"pyrocketmq.io/force-scale-down": "true"}
    assert BrokerModel.from_body(b).force_scale_down


def test_a_master_service_per_group_when_asked_and_the_master_registers_it():
    model = broker(groups=2, replicasPerGroup=2, failover={"enabled": True, "masterService": True})
    objects = render_broker(model, NS, SETTINGS)
    assert model.master_service
    masters = [s for s in by_kind(objects, "Service") if s["metadata"]["name"].endswith("-master")]
    assert [s["metadata"]["name"] for s in masters] == ["orders-0-master", "orders-1-master"]
    # no selector: the operator writes its EndpointSlice as the controller elects
    assert all("selector" not in s["spec"] and s["spec"]["type"] == "ClusterIP" for s in masters)
    assert {p["name"]: p["port"] for p in masters[0]["spec"]["ports"]} == {
        "remoting": 10911, "fast": 10909, "grpc": 8081}
    conf = conf_dict(one(objects, "ConfigMap", "orders-1-config")["data"]["broker.conf"])
    assert conf["masterServiceAddr"] == "orders-1-master.prod.svc:10911"
    plain = render_broker(broker(groups=1, replicasPerGroup=2, failover={"enabled": True}), NS, SETTINGS)
    assert not [s for s in by_kind(plain, "Service") if s["metadata"]["name"].endswith("-master")]
    assert "masterServiceAddr=" not in one(plain, "ConfigMap", "orders-0-config")["data"]["broker.conf"]


def test_the_master_endpoints_lead_to_the_elected_master_or_nowhere():
    model = broker(replicasPerGroup=2, failover={"enabled": True, "masterService": True})
    service = one(render_broker(model, NS, SETTINGS), "Service", "orders-0-master")
    service["metadata"]["uid"] = "svc-uid"
    elected = master_endpoints(service, model, "orders-0", "10.1.0.7:10911", "orders-0-1")
    assert elected["metadata"]["labels"]["kubernetes.io/service-name"] == "orders-0-master"
    assert elected["metadata"]["ownerReferences"][0]["uid"] == "svc-uid"  # removed with its Service
    assert [e["addresses"] for e in elected["endpoints"]] == [["10.1.0.7"]]
    assert elected["endpoints"][0]["targetRef"]["name"] == "orders-0-1"
    assert [p["name"] for p in elected["ports"]] == [p["name"] for p in service["spec"]["ports"]]
    assert master_endpoints(service, model, "orders-0", "", "")["endpoints"] == []


def test_a_master_service_needs_failover():
    with pytest.raises(SpecError, match="masterService"):
        broker(replicasPerGroup=2, failover={"enabled": False, "masterService": True})
    with pytest.raises(SpecError, match="masterService"):
        broker(replicasPerGroup=1, failover={"masterService": True})
