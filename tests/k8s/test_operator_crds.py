"""The CRDs on a real API server: accepted, defaults applied, invalid resources refused with a message
naming the field (OpenAPI and CEL), the category lists all four kinds. No operator runs here."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.k8s.cluster import KubeCluster, KubeCommandError
from tests.k8s.operator_env import EXAMPLES, crds, ns  # noqa: F401 (fixtures)


def cr(kind: str, name: str, **spec: object) -> dict:
    return {"apiVersion": "pyrocketmq.io/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec}


def refused(kube: KubeCluster, namespace: str, doc: dict) -> str:
    with pytest.raises(KubeCommandError) as err:
        kube.apply(doc, "-n", namespace)
    return err.value.stderr


@pytest.mark.parametrize(
    ("doc", "fields", "words"),
    [
        (
            cr("Topic", "bad-name", clusterRef={"name": "b"}, topicName="bad topic!"),
            ["spec.topicName"],
            ["should match"],
        ),
        (
            cr("Topic", "neg", clusterRef={"name": "b"}, readQueueNums=-1, writeQueueNums=-2),
            ["spec.readQueueNums", "spec.writeQueueNums"],
            ["greater than or equal to 1"],
        ),
        (
            cr("Topic", "more-writes", clusterRef={"name": "b"}, readQueueNums=4, writeQueueNums=8),
            ["spec.writeQueueNums"],
            ["must not exceed readQueueNums"],
        ),
        (cr("Topic", "dotted.name", clusterRef={"name": "b"}), ["spec.topicName"], ["set spec.topicName"]),
        (
            cr("Topic", "system", clusterRef={"name": "b"}, topicName="%RETRY%x"),
            ["spec.topicName"],
            ["reserved"],
        ),
        (
            cr("Broker", "zero", nameServer={"name": "n"}, replicasPerGroup=0),
            ["spec.replicasPerGroup"],
            ["greater than or equal to 1"],
        ),
        (
            cr("Broker", "sync-one", nameServer={"name": "n"}, replicationMode="SYNC", replicasPerGroup=1),
            ["spec.replicasPerGroup"],
            ["SYNC needs replicasPerGroup >= 2"],
        ),
        (
            cr("Broker", "both-ns", nameServer={"name": "n", "addresses": ["a:9876"]}),
            ["spec.nameServer"],
            ["exactly one of"],
        ),
        (
            cr("Broker", "owned-key", nameServer={"name": "n"}, config={"brokerName": "x"}),
            ["spec.config"],
            ["set by the operator"],
        ),
        (
            cr("ConsumerGroup", "neg-retry", clusterRef={"name": "b"}, retryMaxTimes=-1),
            ["spec.retryMaxTimes"],
            ["greater than or equal to 0"],
        ),
        (cr("NameServer", "none", replicas=0), ["spec.replicas"], ["greater than or equal to 1"]),
        (
            cr("Broker", "acl-and-auth", nameServer={"name": "n"}, acl={"secretName": "a"},
               auth={"secretName": "b"}),
            ["spec.auth"],
            ["choose one"],
        ),
        (
            cr("User", "bad-acl", clusterRef={"name": "b"},
               acl=[{"resources": ["Topic orders"], "actions": ["Publish"]}]),
            ["spec.acl[0].resources[0]", "spec.acl[0].actions[0]"],
            ["should match", "Unsupported value"],
        ),
        (
            cr(
                "ConsumerGroup",
                "reset-when",
                clusterRef={"name": "b"},
                resetOffset={"id": "1", "topic": "T", "to": "yesterday"},
            ),
            ["spec.resetOffset.to"],
            ["should match"],
        ),
        (
            cr(
                "ConsumerGroup",
                "reset-what",
                clusterRef={"name": "b"},
                resetOffset={"id": "1", "to": "latest"},
            ),
            ["spec.resetOffset.topic"],
            ["Required value"],
        ),
    ],
    ids=lambda v: v["metadata"]["name"] if isinstance(v, dict) else None,
)
def test_invalid_resources_are_refused_naming_the_field(crds, ns, doc, fields, words):  # noqa: F811
    stderr = refused(crds, ns, doc)
    for text in [*fields, *words]:
        assert text in stderr, stderr


def test_immutable_fields(crds, ns):  # noqa: F811
    crds.apply(cr("Topic", "t", clusterRef={"name": "b"}, topicName="T1"), "-n", ns)
    stderr = refused(crds, ns, cr("Topic", "t", clusterRef={"name": "b"}, topicName="T2"))
    assert "spec.topicName" in stderr and "immutable" in stderr
    crds.apply(cr("Broker", "b", nameServer={"name": "n"}), "-n", ns)
    stderr = refused(crds, ns, cr("Broker", "b", nameServer={"name": "n"}, storage={"size": "1Ti"}))
    assert "spec.storage.size" in stderr and "immutable" in stderr


def test_defaults_are_applied_by_the_api_server(crds, ns):  # noqa: F811
    crds.apply(cr("Broker", "d", nameServer={"name": "n"}), "-n", ns)
    spec = crds.get("broker", "d", "-n", ns)["spec"]
    assert spec["groups"] == 1 and spec["replicasPerGroup"] == 1
    assert spec["replicationMode"] == "ASYNC" and spec["flushMode"] == "ASYNC"
    assert spec["storage"] == {"type": "persistent", "size": "10Gi", "deleteClaim": False}
    assert spec["metrics"] == {"enabled": True, "port": 5557}
    crds.apply(cr("Topic", "d", clusterRef={"name": "d"}), "-n", ns)
    spec = crds.get("topic", "d", "-n", ns)["spec"]
    assert (spec["readQueueNums"], spec["writeQueueNums"], spec["perm"], spec["messageType"]) == (
        8,
        8,
        6,
        "NORMAL",
    )


def test_examples_apply_and_the_category_lists_every_kind(crds, ns):  # noqa: F811
    for path in sorted(EXAMPLES.glob("*.yaml")):
        if path.name != "dev-cluster.yaml":
            crds.kubectl("apply", "-n", ns, "-f", str(path))
    listed = crds.kubectl("get", "pyrocketmq", "-n", ns, "-o", "json").stdout
    kinds = sorted({item["kind"] for item in json.loads(listed)["items"]})
    assert kinds == ["Broker", "ConsumerGroup", "NameServer", "Topic", "User"]
    table = crds.kubectl("get", "rmqbr", "-n", ns).stdout
    assert table.split()[:6] == ["NAME", "CLUSTER", "GROUPS", "REPLICAS", "READY-GROUPS", "READY"]
    for short in ("rmqns", "rmqt", "rmqcg", "rmqu"):
        assert crds.kubectl("get", short, "-n", ns).returncode == 0


def test_every_example_document_is_a_known_kind():
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            assert doc["apiVersion"] == "pyrocketmq.io/v1alpha1"
            assert doc["kind"] in {"NameServer", "Broker", "Topic", "ConsumerGroup", "User"}
