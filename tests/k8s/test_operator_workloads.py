"""NameServer and Broker on a real API server with the operator running: the objects, status
conditions, drift repair, image updates, group scaling, two clusters at once, operator restarts.

There is no kubelet: Pods are created by the StatefulSet controller and stay Pending, so the brokers
never run here (tests/e2e/ runs the same resources on real pods)."""

from __future__ import annotations

import yaml

from pyrocketmq.operator.podconf import pod_conf
from tests.k8s.cluster import KubeCluster
from tests.k8s.operator_env import (  # noqa: F401 (fixtures)
    EXAMPLES,
    RESYNC,
    TEST_IMAGE,
    OperatorProcess,
    conditions,
    crds,
    events,
    get,
    names,
    ns,
    operator,
    wait_condition,
    wait_for,
)


def apply_example(kube: KubeCluster, namespace: str, *files: str) -> None:
    for f in files:
        kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / f))


def broker_conf(kube: KubeCluster, namespace: str, cm: str) -> dict[str, str]:
    text = kube.get("configmap", cm, "-n", namespace)["data"]["broker.conf"]
    # A hand-edited ConfigMap may hold anything: lines without "=" are not properties.
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def observed(kube, kind, name, namespace, generation, op, timeout=30):
    def check():
        obj = get(kube, kind, name, namespace)
        status = (obj or {}).get("status") or {}
        return obj if status.get("observedGeneration") == generation and conditions(obj) else None

    return wait_for(kube, check, timeout, f"{kind}/{name} observedGeneration {generation}", op)


def test_examples_become_statefulsets_services_configmaps_and_status(  # long: every example, in turn
    operator, ns  # noqa: F811
):
    kube = operator.kube
    apply_example(kube, ns, "nameserver.yaml", "broker.yaml")
    broker = observed(kube, "broker", "orders", ns, 1, operator)
    nameserver = observed(kube, "nameserver", "names", ns, 1, operator)

    # One StatefulSet per broker group with replicasPerGroup replicas, one for the name servers.
    sts = {s["metadata"]["name"]: s for s in kube.get("statefulsets", "-n", ns)["items"]}
    assert sorted(sts) == ["names", "orders-0", "orders-1"]
    assert sts["names"]["spec"]["replicas"] == 3
    assert [sts[g]["spec"]["replicas"] for g in ("orders-0", "orders-1")] == [2, 2]
    assert names(kube, "services", ns) == [
        "names",
        "names-headless",
        "orders-0-headless",
        "orders-1-headless",
        "orders-broker",
    ]
    # the name servers' budget; per group (failover) one for each role and one for pods not yet elected
    assert names(kube, "poddisruptionbudgets", ns) == [
        "names",
        "orders-0",
        "orders-0-master",
        "orders-0-slaves",
        "orders-1",
        "orders-1-master",
        "orders-1-slaves",
    ]
    master_budget = kube.get("pdb", "orders-0-master", "-n", ns)["spec"]
    assert (
        master_budget["minAvailable"] == 1
        and master_budget["selector"]["matchLabels"]["pyrocketmq.io/role"] == "master"
    )
    assert "orders-broker" in names(kube, "serviceaccounts", ns)
    for s in sts.values():
        (owner,) = s["metadata"]["ownerReferences"]
        assert owner["controller"] and owner["kind"] in ("Broker", "NameServer")
        assert s["spec"]["template"]["spec"]["containers"][0]["image"] == TEST_IMAGE

    # broker.conf names the name servers by their stable DNS names; three name servers run the
    # controller (by default), so the groups of two get automatic failover (by default).
    conf = broker_conf(kube, ns, "orders-1-config")
    dns = [f"names-{i}.names-headless.{ns}.svc:9876" for i in range(3)]
    assert conf["namesrvAddr"] == ";".join(dns)
    assert (conf["brokerName"], conf["brokerClusterName"], conf["brokerRole"]) == (
        "orders-1",
        "OrdersCluster",
        "SYNC_MASTER",
    )
    assert conf["enableControllerMode"] == "true" and conf["controllerAddr"] == conf["namesrvAddr"]
    assert conf["fileReservedTime"] == "48"
    assert nameserver["status"]["addresses"] == dns and broker["status"]["nameServers"] == dns

    # Claims from the template; the Pods (Pending: no kubelet) get their role from their ordinal.
    (claim,) = sts["orders-0"]["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "20Gi"
    assert sts["orders-0"]["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    wait_for(
        kube,
        lambda: len(names(kube, "pods", ns, "app.kubernetes.io/component=broker")) == 4,
        30,
        "broker pods",
    )
    wait_for(kube, lambda: len(names(kube, "pvc", ns)) == 7, 30, "claims")
    assert names(kube, "pvc", ns) == [f"controller-names-{i}" for i in range(3)] + [
        f"store-orders-{g}-{o}" for g in (0, 1) for o in (0, 1)
    ]  # the controllers' state, the brokers' stores
    template = kube.get("configmap", "orders-0-config", "-n", ns)["data"]["broker.conf"]
    for pod in kube.get("pods", "-n", ns, "-l", "pyrocketmq.io/group=orders-0")["items"]:
        env = {
            e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            for e in pod["spec"]["containers"][0]["env"]
        }
        assert env["POD_NAME"] == "metadata.name" and env["POD_IP"] == "status.podIP"
        ordinal = int(pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"])
        lines = pod_conf(template, {"POD_NAME": pod["metadata"]["name"], "POD_IP": "10.0.0.9"}).splitlines()
        assert (
            f"brokerId={ordinal + 1}" in lines and "brokerRole=SYNC_MASTER" in lines
        )  # the controller elects

    # Status: conditions that carry the generation; not Ready since no pod runs.
    cond = conditions(broker)
    assert cond["Ready"]["status"] == "False" and cond["Ready"]["reason"] == "PodsNotReady"
    assert all(c["observedGeneration"] == 1 for c in cond.values())
    assert {"Ready", "Reconciling", "Degraded", "ScaleDownPending", "Spread", "Failover"} <= set(cond)
    assert (cond["Failover"]["status"], cond["Failover"]["reason"]) == ("True", "ControllerElects")
    assert (cond["Spread"]["status"], cond["Spread"]["reason"]) == (
        "False",
        "TooFewNodes",
    )  # no node at all here
    groups = broker["status"]["groups"]
    assert [g["name"] for g in groups] == ["orders-0", "orders-1"]
    assert groups[0]["master"]["pod"] == "" and [s["pod"] for s in groups[0]["slaves"]] == [
        "orders-0-0",
        "orders-0-1",
    ]
    assert broker["status"]["clusterName"] == "OrdersCluster"
    # Deleting a NameServer or Broker never waits for the operator: no finalizer, owner references do it.
    assert not broker["metadata"].get("finalizers") and not nameserver["metadata"].get("finalizers")
    assert 'pyrocketmq_operator_reconcile_total{kind="Broker"' in operator.metrics()


def test_drift_is_repaired_within_a_resync(operator, ns):  # noqa: F811
    kube = operator.kube
    apply_example(kube, ns, "nameserver.yaml", "broker.yaml")
    observed(kube, "broker", "orders", ns, 1, operator)
    kube.kubectl("delete", "statefulset", "orders-1", "-n", ns, "--wait=false")
    kube.kubectl("delete", "service", "orders-0-headless", "names-headless", "-n", ns, "--wait=false")
    kube.merge_patch("configmap", "orders-0-config", ns, {"data": {"broker.conf": "hand edited"}})
    wait_for(
        kube, lambda: "orders-1" in names(kube, "statefulsets", ns), RESYNC * 4, "StatefulSet back", operator
    )
    wait_for(
        kube,
        lambda: {"orders-0-headless", "names-headless"} <= set(names(kube, "services", ns)),
        RESYNC * 4,
        "Services back",
        operator,
    )
    wait_for(
        kube,
        lambda: "namesrvAddr" in broker_conf(kube, ns, "orders-0-config"),
        RESYNC * 4,
        "broker.conf back",
        operator,
    )
    reasons = {e["reason"] for e in events(kube, ns, "orders")}
    assert "Recreated" in reasons


def test_a_new_image_updates_every_statefulset_and_groups_scale_up_and_down(operator, ns):  # noqa: F811
    kube = operator.kube
    apply_example(kube, ns, "nameserver.yaml", "broker.yaml")
    observed(kube, "broker", "orders", ns, 1, operator)

    kube.merge_patch("broker", "orders", ns, {"spec": {"image": "repo/pyrocketmq:2"}})
    def images():
        return {
            s["metadata"]["name"]: s["spec"]["template"]["spec"]["containers"][0]["image"]
            for s in kube.get("statefulsets", "-n", ns, "-l", "app.kubernetes.io/component=broker")["items"]
        }
    wait_for(kube, lambda: set(images().values()) == {"repo/pyrocketmq:2"}, 20, "new image", operator)
    # Groups roll one after another: orders-0 may replace its pods, orders-1 waits (partition =
    # replicas) until orders-0 has rolled out, which never happens here (no kubelet).
    partitions = {
        s["metadata"]["name"]: s["spec"]["updateStrategy"]
        for s in kube.get("statefulsets", "-n", ns, "-l", "app.kubernetes.io/component=broker")["items"]
    }
    assert partitions == {"orders-0": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                          "orders-1": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}}
    def waiting_named():
        c = conditions(kube.get("broker", "orders", "-n", ns)).get("Reconciling") or {}
        return c if "waiting for their turn: orders-1" in c.get("message", "") else None

    reconciling = wait_for(kube, waiting_named, 30, "Reconciling naming the waiting group", operator)
    assert reconciling["status"] == "True" and reconciling["reason"] == "RollingUpdate", reconciling
    assert "RollingGroup" in {e["reason"] for e in events(kube, ns, "orders")}

    # The StatefulSet controller rolls from the highest ordinal and waits for each pod to be Ready:
    # the slave (ordinal 1) is replaced first; the master (ordinal 0) keeps the old image while the
    # new slave is not Ready (never, here: no kubelet).
    def pod_images():
        pods = kube.get("pods", "-n", ns, "-l", "pyrocketmq.io/group=orders-0")["items"]
        return {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in pods}

    wait_for(
        kube,
        lambda: pod_images().get("orders-0-1") == "repo/pyrocketmq:2",
        30,
        "slave replaced first",
        operator,
    )
    assert pod_images()["orders-0-0"] == TEST_IMAGE
    held = {p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
            for p in kube.get("pods", "-n", ns, "-l", "pyrocketmq.io/group=orders-1")["items"]}
    assert held == {"orders-1-0": TEST_IMAGE, "orders-1-1": TEST_IMAGE}  # waits for its turn
    observed(kube, "broker", "orders", ns, 2, operator)

    kube.merge_patch("broker", "orders", ns, {"spec": {"groups": 3}})
    wait_for(kube, lambda: "orders-2" in names(kube, "statefulsets", ns), 20, "group 3 created", operator)
    assert "orders-2-config" in names(kube, "configmaps", ns) and "orders-2" in names(kube, "pdb", ns)
    assert images()["orders-2"] == "repo/pyrocketmq:2"
    broker = observed(kube, "broker", "orders", ns, 3, operator)
    assert [g["name"] for g in broker["status"]["groups"]] == ["orders-0", "orders-1", "orders-2"]

    # Down again: group 2 never served traffic (its pods never ran), so nothing waits for a drain.
    kube.merge_patch("broker", "orders", ns, {"spec": {"groups": 2}})
    wait_for(
        kube,
        lambda: names(kube, "statefulsets", ns) == ["names", "orders-0", "orders-1"],
        20,
        "group 3 removed",
        operator,
    )
    wait_for(
        kube,
        lambda: "orders-2-config" not in names(kube, "configmaps", ns),
        10,
        "its ConfigMap removed",
        operator,
    )
    assert "orders-2-headless" not in names(kube, "services", ns)
    assert any(
        p.startswith("store-orders-2-") for p in names(kube, "pvc", ns)
    )  # deleteClaim: false keeps claims
    broker = observed(kube, "broker", "orders", ns, 4, operator)
    assert conditions(broker)["ScaleDownPending"]["status"] == "False"
    assert "GroupRemoved" in {e["reason"] for e in events(kube, ns, "orders")}


def test_ephemeral_storage_and_slave_scaling(operator, ns):  # noqa: F811
    kube = operator.kube
    apply_example(kube, ns, "dev-cluster.yaml")
    observed(kube, "broker", "dev", ns, 1, operator)
    sts = kube.get("statefulset", "dev-0", "-n", ns)
    assert "volumeClaimTemplates" not in sts["spec"]
    volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    assert volumes["store"]["emptyDir"] == {"sizeLimit": "2Gi"}
    kube.merge_patch("broker", "dev", ns, {"spec": {"replicasPerGroup": 3}})
    wait_for(
        kube,
        lambda: kube.get("statefulset", "dev-0", "-n", ns)["spec"]["replicas"] == 3,
        20,
        "3 replicas",
        operator,
    )
    kube.merge_patch("broker", "dev", ns, {"spec": {"replicasPerGroup": 2}})
    wait_for(
        kube,
        lambda: kube.get("statefulset", "dev-0", "-n", ns)["spec"]["replicas"] == 2,
        20,
        "2 replicas",
        operator,
    )


def test_a_missing_name_server_is_a_reason_then_converges(operator, ns):  # noqa: F811
    kube = operator.kube
    apply_example(kube, ns, "broker.yaml")
    broker = wait_condition(kube, "broker", "orders", ns, "Ready", "False", "NameServerNotFound", op=operator)
    assert "names" in conditions(broker)["Ready"]["message"]
    assert conditions(broker)["Reconciling"]["status"] == "True"
    apply_example(kube, ns, "nameserver.yaml")
    wait_condition(kube, "broker", "orders", ns, "Ready", "False", "PodsNotReady", timeout=30, op=operator)
    assert names(kube, "statefulsets", ns) == ["names", "orders-0", "orders-1"]
    assert operator.alive()


def test_two_clusters_in_two_namespaces_do_not_interfere(operator, ns):  # noqa: F811
    kube = operator.kube
    other = kube.create_namespace("op")
    try:
        for n in (ns, other):
            apply_example(kube, n, "nameserver.yaml", "broker.yaml")
        for n in (ns, other):
            observed(kube, "broker", "orders", n, 1, operator)
            assert broker_conf(kube, n, "orders-0-config")["namesrvAddr"].startswith(
                f"names-0.names-headless.{n}.svc:9876"
            )
        kube.merge_patch("broker", "orders", other, {"spec": {"groups": 1}})
        kube.kubectl("delete", "nameserver", "names", "-n", ns)
        wait_for(
            kube,
            lambda: names(kube, "statefulsets", other) == ["names", "orders-0"],
            20,
            "other scaled",
            operator,
        )
        wait_for(
            kube,
            lambda: names(kube, "statefulsets", ns) == ["orders-0", "orders-1"],
            20,
            "names GC'd",
            operator,
        )
        broker = wait_condition(
            kube, "broker", "orders", ns, "Ready", "False", "NameServerNotFound", op=operator
        )
        assert [g["name"] for g in broker["status"]["groups"]] == ["orders-0", "orders-1"]
        assert conditions(get(kube, "broker", "orders", other))["Ready"]["reason"] == "PodsNotReady"
    finally:
        kube.kubectl("delete", "namespace", other, "--wait=false", check=False)


def test_an_operator_killed_mid_reconcile_converges_after_restart(operator, ns):  # noqa: F811
    kube = operator.kube
    big = yaml.safe_load((EXAMPLES / "broker.yaml").read_text())
    big["spec"]["groups"] = 6
    apply_example(kube, ns, "nameserver.yaml")
    kube.apply(big, "-n", ns)
    wait_for(
        kube,
        lambda: any(n.startswith("orders-") for n in names(kube, "configmaps", ns)),
        20,
        "a first object",
        operator,
    )
    operator.kill()  # SIGKILL half way through: no cleanup, kopf's annotations as they were
    kube.merge_patch("broker", "orders", ns, {"spec": {"groups": 5}})
    operator.start()
    broker = observed(kube, "broker", "orders", ns, 2, operator, timeout=40)
    wait_for(
        kube,
        lambda: names(kube, "statefulsets", ns) == ["names", *(f"orders-{i}" for i in range(5))],
        20,
        "5 groups",
        operator,
    )
    assert [g["name"] for g in broker["status"]["groups"]] == [f"orders-{i}" for i in range(5)]


def test_turning_the_controller_on_replaces_the_statefulset_and_keeps_its_pods(operator, ns):  # noqa: F811
    """A claim template cannot be added to a StatefulSet in place: the operator deletes it leaving
    its pods (orphans) and creates it again; the new one adopts the pods."""
    kube = operator.kube
    two = yaml.safe_load((EXAMPLES / "nameserver.yaml").read_text())
    two["spec"]["replicas"] = 2  # two name servers run no controller
    kube.apply(two, "-n", ns)
    observed(kube, "nameserver", "names", ns, 1, operator)
    before = kube.get("statefulset", "names", "-n", ns)
    assert "volumeClaimTemplates" not in before["spec"]
    wait_for(
        kube, lambda: len(names(kube, "pods", ns, "app.kubernetes.io/component=namesrv")) == 2, 30, "pods"
    )
    pods_before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in kube.get("pods", "-n", ns)["items"]}
    kube.merge_patch("nameserver", "names", ns, {"spec": {"replicas": 3}})
    nameserver = observed(kube, "nameserver", "names", ns, 2, operator)
    after = kube.get("statefulset", "names", "-n", ns)
    assert after["metadata"]["uid"] != before["metadata"]["uid"]
    assert [c["metadata"]["name"] for c in after["spec"]["volumeClaimTemplates"]] == ["controller"]
    assert "StatefulSetReplaced" in {e["reason"] for e in events(kube, ns, "names")}
    assert conditions(nameserver)["Ready"]["status"] == "False"  # no kubelet here: pods never run
    # the old pods were left to the new StatefulSet (not deleted with the old one)
    def adopted():
        pods = {p["metadata"]["name"]: p for p in kube.get("pods", "-n", ns)["items"]}
        return all(n in pods and pods[n]["metadata"]["ownerReferences"][0]["uid"] == after["metadata"]["uid"]
                   for n in pods_before)  # fmt: skip
    wait_for(kube, adopted, 30, "old pods adopted by the new StatefulSet", operator)
