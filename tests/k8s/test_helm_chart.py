"""The Helm chart against the real API server: lint, template, install/upgrade/uninstall, and the
operator run with exactly the chart's RBAC (its ServiceAccount's token), cluster-wide and namespaced."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from tests.k8s.cluster import KubeCluster
from tests.k8s.operator_env import (  # noqa: F401 (fixtures)
    CHART,
    CRDS_DIR,
    EXAMPLES,
    OperatorProcess,
    conditions,
    crds,
    get,
    names,
    wait_condition,
    wait_for,
)


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


@pytest.mark.parametrize(
    "values", [[], ["--set", "rbac.scope=namespaced", "--set", "rbac.watchNamespaces={a,b}"]]
)
def test_lint_and_template(kube: KubeCluster, values: list[str]) -> None:
    kube.helm("lint", str(CHART), "--strict", *values)
    rendered = docs(kube.helm("template", "rel", str(CHART), "-n", "ops", "--include-crds", *values).stdout)
    kinds = sorted(d["kind"] for d in rendered)
    crds_in_chart = sorted(
        (d for d in rendered if d["kind"] == "CustomResourceDefinition"), key=lambda d: d["metadata"]["name"]
    )
    top = sorted(
        (yaml.safe_load(p.read_text()) for p in CRDS_DIR.glob("*.yaml")), key=lambda d: d["metadata"]["name"]
    )
    assert crds_in_chart == top
    deployment = next(d for d in rendered if d["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"] == {"type": "Recreate"}
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    cluster_roles = {d["metadata"]["name"]: d for d in rendered if d["kind"] == "ClusterRole"}
    # in either scope, one cluster-wide read-only role for Nodes (placement), and nothing else on it
    assert cluster_roles["rel-pyrocketmq-nodes"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]  # fmt: skip
    if values:
        assert (
            kinds.count("Role") == 2
            and kinds.count("RoleBinding") == 2
            and list(cluster_roles) == ["rel-pyrocketmq-nodes"]
        )
        assert env["PYROCKETMQ_OPERATOR_NAMESPACES"] == "a,b" and "--all-namespaces" not in container["args"]
    else:
        assert len(cluster_roles) == 2 and kinds.count("ClusterRoleBinding") == 2 and "Role" not in kinds
        assert "--all-namespaces" in container["args"]
    rules = next(
        d
        for d in rendered
        if d["kind"] in ("ClusterRole", "Role") and not d["metadata"]["name"].endswith("-nodes")
    )["rules"]
    for rule in rules:  # least privilege: no wildcards, no secrets
        assert (
            "*" not in rule["verbs"] and "*" not in rule["resources"] and "secrets" not in rule["resources"]
        )


@pytest.mark.parametrize("value, named", [("operator.resyncInterval=soon", "/operator/resyncInterval"),
                                          ("cluster.broker.groups=two", "/cluster/broker/groups"),
                                          ("rbac.scop=cluster", "'scop' not allowed")])
def test_a_wrong_value_fails_with_a_message_naming_it(kube: KubeCluster, value: str, named: str) -> None:
    done = kube.helm("template", "rel", str(CHART), "--set", value, check=False)
    assert done.returncode != 0 and named in done.stderr, done.stderr


def test_secrets_are_opt_in_read_or_managed(kube: KubeCluster) -> None:
    rendered = docs(
        kube.helm("template", "rel", str(CHART), "-n", "ops", "--set", "rbac.readSecrets=true").stdout
    )
    rules = next(d for d in rendered if d["kind"] == "ClusterRole")["rules"]
    assert [r["verbs"] for r in rules if "secrets" in r["resources"]] == [["get"]]
    default = docs(kube.helm("template", "rel", str(CHART), "-n", "ops").stdout)
    rules = next(d for d in default if d["kind"] == "ClusterRole")["rules"]
    assert not [r for r in rules if "secrets" in r["resources"]]
    managed = docs(
        kube.helm("template", "rel", str(CHART), "-n", "ops", "--set", "rbac.manageSecrets=true").stdout
    )
    rules = next(d for d in managed if d["kind"] == "ClusterRole")["rules"]
    secret_verbs = [r["verbs"] for r in rules if "secrets" in r["resources"]]
    assert secret_verbs == [["get", "create", "update", "patch"]]


def run_dev_cluster(kube: KubeCluster, op: OperatorProcess, namespace: str) -> None:
    """What the operator must be able to do with the chart's RBAC: every kind, status, events."""
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "dev-cluster.yaml"))
    wait_condition(kube, "broker", "dev", namespace, "Ready", "False", "PodsNotReady", op=op)
    wait_condition(kube, "nameserver", "dev", namespace, "Ready", "False", "PodsNotReady", op=op)
    # No broker runs (no kubelet): the Topic waits with a reason, written through the status subresource.
    wait_condition(kube, "topic", "test-topic", namespace, "Ready", "False", op=op, timeout=40)
    assert names(kube, "statefulsets", namespace) == ["dev", "dev-0"]
    assert "Forbidden" not in op.log() and "forbidden" not in op.log()
    # Deleting a Topic goes through the operator's finalizer (its delete handler, with the chart's rights).
    kube.kubectl("delete", "topic", "test-topic", "-n", namespace, "--timeout=30s")


def secrets_need_opting_in(kube: KubeCluster, op: OperatorProcess, namespace: str) -> None:
    """Least privilege: by default the operator may not read Secrets nor write them, and says which
    value to set (a Broker's spec.tls Secret; a NameServer's managed certificate)."""
    broker = {"apiVersion": "pyrocketmq.io/v1alpha1", "kind": "Broker", "metadata": {"name": "locked"},
              "spec": {"nameServer": {"name": "dev"}, "tls": {"secretName": "locked-tls"}}}
    names = {"apiVersion": "pyrocketmq.io/v1alpha1", "kind": "NameServer", "metadata": {"name": "managed"},
             "spec": {"replicas": 1, "tls": {"managed": True}}}
    kube.apply(broker, "-n", namespace)
    kube.apply(names, "-n", namespace)
    for kind, name, value in (("broker", "locked", "rbac.readSecrets=true"),
                              ("nameserver", "managed", "rbac.manageSecrets=true")):
        found = wait_condition(kube, kind, name, namespace, "Ready", "False", "SecretForbidden", op=op)
        assert value in conditions(found)["Ready"]["message"], conditions(found)["Ready"]


def test_install_upgrade_uninstall_and_run_with_the_charts_rbac(crds: KubeCluster, tmp_path: Path) -> None:  # noqa: F811
    kube = crds
    release_ns, work_ns = kube.create_namespace("ops"), kube.create_namespace("app")
    try:
        kube.helm(
            "install", "pyrocketmq", str(CHART), "-n", release_ns, "--set", "image.tag=test", "--wait=false"
        )
        deployment = kube.get("deployment", "pyrocketmq", "-n", release_ns)
        assert deployment["spec"]["strategy"]["type"] == "Recreate"
        assert kube.get("clusterrolebinding", "pyrocketmq")["subjects"][0]["namespace"] == release_ns
        wait_for(
            kube,
            lambda: kube.get("pods", "-n", release_ns, "-l", "app.kubernetes.io/name=pyrocketmq-operator")[
                "items"
            ],
            30,
            "the operator pod (Pending: no kubelet)",
        )

        # The operator, run here with the chart's ServiceAccount, can do its whole job.
        sa = kube.service_account_kubeconfig(release_ns, "pyrocketmq")
        op = OperatorProcess(kube, tmp_path, kubeconfig=sa, name="operator-sa").start()
        try:
            run_dev_cluster(kube, op, work_ns)
            secrets_need_opting_in(kube, op, work_ns)
        finally:
            op.stop()

        kube.helm("upgrade", "pyrocketmq", str(CHART), "-n", release_ns, "--set", "image.tag=test2",
                  "--set", "operator.resyncInterval=7", "--wait=false")
        container = kube.get("deployment", "pyrocketmq", "-n", release_ns)["spec"]["template"]["spec"][
            "containers"
        ][0]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert container["image"].endswith(":test2") and env["PYROCKETMQ_OPERATOR_RESYNC_INTERVAL"] == "7"
        releases = json.loads(kube.helm("list", "-n", release_ns, "-o", "json").stdout)
        assert [(r["name"], r["revision"]) for r in releases] == [("pyrocketmq", "2")]

        kube.helm("uninstall", "pyrocketmq", "-n", release_ns, "--wait")
        assert kube.kubectl("get", "clusterrole", "pyrocketmq", check=False).returncode != 0
        assert kube.kubectl("get", "deployment", "pyrocketmq", "-n", release_ns, check=False).returncode != 0
        assert kube.kubectl("get", "crd", "brokers.pyrocketmq.io", check=False).returncode == 0  # CRDs stay
    finally:
        kube.helm("uninstall", "pyrocketmq", "-n", release_ns, check=False)
        for n in (release_ns, work_ns):
            kube.kubectl("delete", "namespace", n, "--wait=false", check=False)


def test_namespaced_install_serves_only_its_namespaces(crds: KubeCluster, tmp_path: Path) -> None:  # noqa: F811
    kube = crds
    release_ns, served, other = (kube.create_namespace(p) for p in ("ops", "app", "other"))
    try:
        kube.helm("install", "scoped", str(CHART), "-n", release_ns, "--set", "rbac.scope=namespaced",
                  "--set", f"rbac.watchNamespaces={{{served}}}", "--wait=false")
        sa = f"system:serviceaccount:{release_ns}:scoped-pyrocketmq"

        def can(verb: str, res: str, n: str) -> bool:
            return (
                kube.kubectl("auth", "can-i", verb, res, "-n", n, f"--as={sa}", check=False).returncode == 0
            )

        assert can("patch", "statefulsets.apps", served) and can(
            "patch", "brokers.pyrocketmq.io/status", served
        )
        assert not can("list", "statefulsets.apps", other) and not can("get", "secrets", served)
        assert not can("list", "customresourcedefinitions", served) and not can("list", "namespaces", served)

        op = OperatorProcess(
            kube,
            tmp_path,
            kubeconfig=kube.service_account_kubeconfig(release_ns, "scoped-pyrocketmq"),
            namespaces=(served,),
            name="operator-scoped",
        ).start()
        try:
            run_dev_cluster(kube, op, served)
            kube.kubectl("apply", "-n", other, "-f", str(EXAMPLES / "dev-cluster.yaml"))
            time.sleep(3)  # several resyncs: the operator must not act there
            assert names(kube, "statefulsets", other) == []  # not served: untouched
            assert "status" not in (get(kube, "broker", "dev", other) or {})
        finally:
            op.stop()
        kube.helm("uninstall", "scoped", "-n", release_ns, "--wait")
    finally:
        for n in (release_ns, served, other):
            kube.kubectl("delete", "namespace", n, "--wait=false", check=False)
