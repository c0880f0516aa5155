"""The CRDs, read as YAML: shape, structural schemas, defaults that agree with the models, and the
examples validated against the OpenAPI schemas (CEL rules are checked by the API server in tests/k8s)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pyrocketmq.operator.model import BrokerModel, ConsumerGroupModel, NameServerModel, TopicModel
from pyrocketmq.operator.users import UserModel

ROOT = Path(__file__).resolve().parents[3]
CRDS = {p.name: yaml.safe_load(p.read_text()) for p in sorted((ROOT / "crds").glob("*.yaml"))}
BY_KIND = {crd["spec"]["names"]["kind"]: crd for crd in CRDS.values()}
MODELS = {
    "NameServer": NameServerModel,
    "Broker": BrokerModel,
    "Topic": TopicModel,
    "ConsumerGroup": ConsumerGroupModel,
    "User": UserModel,
}


def schema_of(kind: str) -> dict[str, Any]:
    (version,) = BY_KIND[kind]["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    """What the API server's defaulting does: fill absent properties that have a default, recursively."""
    if not isinstance(value, dict) or schema.get("type") != "object":
        if isinstance(value, list) and "items" in schema:
            return [apply_defaults(schema["items"], v) for v in value]
        return value
    out = dict(value)
    for key, sub in (schema.get("properties") or {}).items():
        if key not in out and "default" in sub:
            out[key] = copy.deepcopy(sub["default"])
        if key in out:
            out[key] = apply_defaults(sub, out[key])
    return out


def examples() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        docs += [(path.name, d) for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def validate(doc: dict[str, Any]) -> None:
    jsonschema.validate(apply_defaults(schema_of(doc["kind"]), doc), schema_of(doc["kind"]))


def test_five_kinds_in_one_group_and_category():
    assert set(BY_KIND) == {"NameServer", "Broker", "Topic", "ConsumerGroup", "User"}
    short = set()
    for crd in CRDS.values():
        spec = crd["spec"]
        assert spec["group"] == "pyrocketmq.io" and spec["scope"] == "Namespaced"
        assert crd["metadata"]["name"] == f"{spec['names']['plural']}.pyrocketmq.io"
        assert spec["names"]["categories"] == ["pyrocketmq"]
        assert spec["names"]["shortNames"] and not short & set(spec["names"]["shortNames"])
        short |= set(spec["names"]["shortNames"])
        (version,) = spec["versions"]
        assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
        assert "status" in version["subresources"]
        columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
        assert columns["Ready"] == '.status.conditions[?(@.type=="Ready")].status'
        assert columns["Age"] == ".metadata.creationTimestamp"


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_status_has_conditions_and_observed_generation(kind):
    status = schema_of(kind)["properties"]["status"]
    assert status["properties"]["observedGeneration"]["type"] == "integer"
    conditions = status["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map" and conditions["x-kubernetes-list-map-keys"] == [
        "type"
    ]
    item = conditions["items"]["properties"]
    assert {"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"} <= set(item)


def _walk(schema: dict[str, Any], path: str = ""):
    yield path, schema
    for key, sub in (schema.get("properties") or {}).items():
        yield from _walk(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_schemas_are_structural(kind):
    for path, node in _walk(schema_of(kind)):
        if path == ".metadata":
            continue
        assert "type" in node or node.get("x-kubernetes-int-or-string"), f"{kind}{path} has no type"
        if "default" in node:
            jsonschema.validate(node["default"], {k: v for k, v in node.items() if k != "default"})
        for rule in node.get("x-kubernetes-validations", ()):
            assert rule["rule"] and rule["message"], f"{kind}{path}: a CEL rule without a message"


@pytest.mark.parametrize(("name", "doc"), examples(), ids=lambda v: v if isinstance(v, str) else v["kind"])
def test_examples_are_valid(name, doc):
    validate(doc)


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_model_defaults_agree_with_crd_defaults(kind):
    minimal = {
        "NameServer": {},
        "Broker": {"nameServer": {"name": "n"}},
        "Topic": {"clusterRef": {"name": "b"}},
        "ConsumerGroup": {"clusterRef": {"name": "b"}},
        "User": {"clusterRef": {"name": "b"}, "acl": [{"resources": ["Topic:t"], "actions": ["Pub"]}]},
    }[kind]
    raw = {
        "apiVersion": "pyrocketmq.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "x", "namespace": "n"},
        "spec": minimal,
    }
    defaulted = apply_defaults(schema_of(kind), raw)
    assert defaulted["spec"] != minimal or kind == "NameServer"
    assert MODELS[kind].from_body(defaulted) == MODELS[kind].from_body(raw)


@pytest.mark.parametrize(
    ("kind", "spec", "field"),
    [
        ("Broker", {"nameServer": {"name": "n"}, "replicasPerGroup": 0}, "replicasPerGroup"),
        ("Broker", {"nameServer": {"name": "n"}, "groups": 65}, "groups"),
        ("Broker", {"nameServer": {"name": "n"}, "replicationMode": "ASAP"}, "replicationMode"),
        ("Broker", {"nameServer": {"name": "n"}, "storage": {"size": "lots"}}, "size"),
        ("Broker", {"nameServer": {"addresses": ["no-port"]}}, "addresses"),
        ("Topic", {"clusterRef": {"name": "b"}, "topicName": "bad topic"}, "topicName"),
        ("Topic", {"clusterRef": {"name": "b"}, "readQueueNums": -1}, "readQueueNums"),
        ("Topic", {"clusterRef": {"name": "b"}, "writeQueueNums": 0}, "writeQueueNums"),
        ("Topic", {"clusterRef": {"name": "b"}, "perm": 7}, "perm"),
        ("Topic", {}, "clusterRef"),
        ("ConsumerGroup", {"clusterRef": {"name": "b"}, "retryMaxTimes": -1}, "retryMaxTimes"),
        ("ConsumerGroup", {"clusterRef": {"name": "b"}, "groupName": "a/b"}, "groupName"),
        ("NameServer", {"replicas": 0}, "replicas"),
        ("Broker", {"nameServer": {"name": "n"}, "auth": {"secretName": "Bad Name"}}, "secretName"),
        ("User", {"clusterRef": {"name": "b"}, "userType": "Admin"}, "userType"),
        ("User", {"clusterRef": {"name": "b"}, "acl": [{"resources": ["Topic:a b"], "actions": ["Pub"]}]},
         "resources"),
        ("User", {"clusterRef": {"name": "b"}, "acl": [{"resources": ["*"], "actions": ["Any"]}]}, "actions"),
        ("User", {"clusterRef": {"name": "b"}, "acl": [{"resources": ["*"], "actions": ["Pub"],
                                                        "sourceIps": ["somewhere"]}]}, "sourceIps"),
        ("User", {"clusterRef": {"name": "b"}, "acl": [{"resources": ["*"], "actions": ["Pub"],
                                                        "decision": "Maybe"}]}, "decision"),
    ],
)
def test_invalid_specs_fail_the_openapi_schema(kind, spec, field):
    doc = {"apiVersion": "pyrocketmq.io/v1alpha1", "kind": kind, "metadata": {"name": "x"}, "spec": spec}
    with pytest.raises(jsonschema.ValidationError) as err:
        validate(doc)
    assert field in str(err.value)


def test_cel_rules_cover_the_cross_field_cases():
    rules = {
        kind: [
            r["rule"] for _, node in _walk(schema_of(kind)) for r in node.get("x-kubernetes-validations", ())
        ]
        for kind in BY_KIND
    }
    assert any("SYNC" in r and "replicasPerGroup >= 2" in r for r in rules["Broker"])
    assert any("writeQueueNums <= self.readQueueNums" in r for r in rules["Topic"])
    assert any("has(self.spec.topicName)" in r for r in rules["Topic"])
    assert any("self == oldSelf" in r for r in rules["Topic"])
    assert any("has(self.name) != has(self.addresses)" in r for r in rules["Broker"])
    assert any("has(self.acl)" in r and "has(self.auth)" in r for r in rules["Broker"])
    assert any("self == oldSelf" in r for r in rules["User"])


def test_the_chart_ships_the_same_crds():
    chart = {p.name: p.read_text() for p in sorted((ROOT / "charts" / "pyrocketmq" / "crds").glob("*.yaml"))}
    top = {p.name: p.read_text() for p in sorted((ROOT / "crds").glob("*.yaml"))}
    assert chart == top, "charts/pyrocketmq/crds/ differs from crds/: copy crds/*.yaml into the chart"
