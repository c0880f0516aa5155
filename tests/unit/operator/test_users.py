"""User resources and Broker spec.auth: the model, what one broker needs changed (users and ACL
entries), which users are pruned, and what spec.auth renders into the pods (read back by the
broker's own settings parser and store)."""

from __future__ import annotations

import asyncio
import base64

import orjson
import pytest

from pyrocketmq.broker.settings import BrokerSettings
from pyrocketmq.operator.model import SpecError
from pyrocketmq.operator.names import namesrv_addresses
from pyrocketmq.operator.podconf import pod_conf
from pyrocketmq.operator.render import broker_conf, render_broker
from pyrocketmq.operator.security import SecretError, read_broker_secrets
from pyrocketmq.operator.users import (
    UserModel,
    broker_changes,
    custom_entries,
    quota_change,
    undeclared_users,
)
from pyrocketmq.server.acl2 import acl_from_info, acl_to_info
from pyrocketmq.server.auth_metadata import AuthMetadata

from .conftest import SETTINGS, broker, by_kind, conf_dict

NS = namesrv_addresses("names", "prod", 1)


def user(name: str = "alice", **spec: object) -> UserModel:
    return UserModel.from_body({"kind": "User", "metadata": {"name": name, "namespace": "prod"},
                                "spec": {"clusterRef": {"name": "orders"}, **spec}})


ALICE_ACL = [
    {"resources": ["Topic:orders", "Topic:pay*"], "actions": ["Pub", "Sub"], "sourceIps": ["10.0.0.0/8"]},
    {"resources": ["Topic:*"], "actions": ["All"], "decision": "Deny"},
]


def test_a_user_defaults_to_its_name_a_normal_type_and_a_secret_of_its_name():
    model = user(acl=ALICE_ACL)
    assert (model.username, model.user_type, model.secret_name, model.subject) == (
        "alice", "Normal", "alice", "User:alice")
    assert model.entries()["Topic:*"] == (("All",), "Deny", ())


@pytest.mark.parametrize(("spec", "words"), [
    ({"acl": [{"resources": ["Topic:a"], "actions": ["Pub"]},
              {"resources": ["Topic:a"], "actions": ["Sub"]}]}, "spec.acl[1]: Topic:a is in spec.acl[0] too"),
    ({"acl": [{"resources": ["Queue:a"], "actions": ["Pub"]}]}, "spec.acl[0].resources"),
    ({"acl": [{"resources": ["Topic:a"], "actions": ["Publish"]}]}, "spec.acl[0].actions"),
    ({"acl": [{"resources": ["Topic:a"], "actions": ["Pub"], "decision": "Perhaps"}]},
     "spec.acl[0].decision"),
    ({"userType": "Root"}, "spec.userType"),
    ({"username": "a b"}, "spec.username"),
    ({"authentication": {"type": "certificate"}}, "spec.authentication.type"),
])
def test_a_spec_that_cannot_be_applied_names_its_field(spec, words):
    with pytest.raises(SpecError, match=words.replace("[", r"\[").replace("]", r"\]")):
        user(**spec)


def test_the_acl_body_round_trips_through_the_brokers_model():
    """What the operator sends is what a broker answers back, so a resync finds nothing to change."""
    model = user(acl=ALICE_ACL)
    stored = acl_to_info(acl_from_info(model.acl_info()))
    assert custom_entries(stored) == model.entries()
    have_user = {"username": "alice", "password": "pw", "userType": "Normal", "userStatus": "enable"}
    assert broker_changes(model, "pw", have_user, stored).empty


def test_changes_for_a_new_a_changed_and_a_disabled_user():
    model = user(acl=ALICE_ACL)
    new = broker_changes(model, "pw", None, None)
    assert new.user == "create" and new.new_acl and set(new.put) == {"Topic:orders", "Topic:pay*", "Topic:*"}
    old = {"username": "alice", "password": "old", "userType": "Normal", "userStatus": "enable"}
    assert broker_changes(model, "pw", old, None).user == "update"
    disabled = {**old, "password": "pw", "userStatus": "disable"}
    assert broker_changes(model, "pw", disabled, None).user == "update"


def test_a_tls_users_password_on_the_brokers_is_its_own_business():
    """A TLS user's brokers hold a random password handed to nobody: a resync never changes it, but
    still its type and status."""
    model = user(authentication={"type": "tls", "secretName": "alice-cert"}, acl=ALICE_ACL)
    assert model.by_certificate and model.secret_name == "alice-cert"
    held = {"username": "alice", "password": "whatever", "userType": "Normal", "userStatus": "enable"}
    assert broker_changes(model, None, held, None).user is None
    assert broker_changes(model, None, {**held, "userType": "Super"}, None).user == "update"
    assert broker_changes(model, None, None, None).user == "create"


def test_changed_entries_are_put_first_and_stale_ones_removed():
    before = user(acl=[{"resources": ["Topic:orders"], "actions": ["Pub"]},
                       {"resources": ["Topic:old"], "actions": ["Sub"]}])  # fmt: skip
    stored = acl_to_info(acl_from_info(before.acl_info()))
    after = user(acl=[{"resources": ["Topic:orders"], "actions": ["Pub", "Sub"]},
                      {"resources": ["Group:g"], "actions": ["Sub"]}])  # fmt: skip
    change = broker_changes(after, "pw", {"password": "pw", "userType": "Normal"}, stored)
    assert change.user is None and not change.new_acl
    assert set(change.put) == {"Topic:orders", "Group:g"} and change.stale == ("Topic:old",)
    assert [e["resource"] for e in after.acl_info(change.put)["policies"][0]["entries"]] == list(change.put)


def test_undeclared_users_are_pruned_but_the_super_user_is_kept():
    listed = [{"username": "alice"}, {"username": "mallory"}, {"username": "root"}, {"username": "mallory"}]
    assert undeclared_users(listed, {"alice"}, {"root"}) == ["mallory"]


def _secret(**data: str) -> dict:
    return {"data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def test_spec_auth_turns_acl2_on_and_creates_the_super_user_at_the_first_start(tmp_path):
    model = broker(auth={"secretName": "mq-root"})
    conf = conf_dict(broker_conf(model, 0, NS))
    assert conf["authenticationEnabled"] == conf["authorizationEnabled"] == "true"
    assert "initAuthenticationUser" not in conf  # never in a ConfigMap
    [sts] = by_kind(render_broker(model, NS, SETTINGS), "StatefulSet")
    [container] = sts["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("valueFrom") for e in container["env"]}
    assert env["PYROCKETMQ_AUTH_PASSWORD"] == {"secretKeyRef": {"name": "mq-root", "key": "password"}}
    text = pod_conf(broker_conf(model, 0, NS), {"POD_NAME": "orders-0-0", "POD_IP": "10.0.0.5",
                                                "PYROCKETMQ_AUTH_USERNAME": "root",
                                                "PYROCKETMQ_AUTH_PASSWORD": "s3cret=:#x"})  # fmt: skip
    keys = conf_dict(text)
    assert (keys["accessKey"], keys["secretKey"]) == ("root", "s3cret=:#x")  # its own requests are signed
    settings = BrokerSettings.from_conf(keys)
    assert settings.auth.enabled
    meta = AuthMetadata(str(tmp_path))
    meta.init_users(settings.auth)
    root = meta.user("root")
    assert root is not None and root.is_super and root.password == "s3cret=:#x"
    assert orjson.loads(keys["innerClientAuthenticationCredentials"])["secretKey"] == "s3cret=:#x"


def test_spec_auth_and_spec_acl_exclude_each_other():
    with pytest.raises(SpecError, match="choose one"):
        broker(auth={"secretName": "a"}, acl={"secretName": "b"})


def test_the_operator_signs_with_the_super_user_of_spec_auth():
    model = broker(auth={"secretName": "mq-root"})
    store = {"mq-root": _secret(username="root", password="pw")}

    async def get(_v: str, _k: str, _ns: str, name: str) -> dict | None:
        return store.get(name)

    _, security = asyncio.run(read_broker_secrets(get, model))
    assert (security.access_key, security.secret_key) == ("root", "pw")
    store["mq-root"] = _secret(username="root")
    with pytest.raises(SecretError, match="needs username and password"):
        asyncio.run(read_broker_secrets(get, model))


def test_a_name_server_with_spec_auth_reads_its_super_user_from_the_secret(tmp_path):
    """The kubelet expands $(VAR) in the arguments; the name server parses what it gets."""
    from pyrocketmq.namesrv.settings import NamesrvSettings
    from pyrocketmq.operator.model import NameServerModel
    from pyrocketmq.operator.render import render_nameserver

    from .conftest import body

    model = NameServerModel.from_body(body("NameServer", "names", replicas=1, auth={"secretName": "mq-root"},
                                           controller={"enabled": False}))
    [sts] = by_kind(render_nameserver(model, SETTINGS), "StatefulSet")
    [container] = sts["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("valueFrom") for e in container["env"]}
    assert env["PYROCKETMQ_AUTH_PASSWORD"] == {"secretKeyRef": {"name": "mq-root", "key": "password"}}
    expanded = {"PYROCKETMQ_AUTH_USERNAME": "root", "PYROCKETMQ_AUTH_PASSWORD": "pw-1"}
    conf = {}
    for arg in container["args"]:
        if arg.startswith("--set="):
            key, _, value = arg[len("--set="):].partition("=")
            for var, text in expanded.items():
                value = value.replace(f"$({var})", text)
            conf[key] = value
    conf["kvConfigPath"] = str(tmp_path / "namesrv" / "kvConfig.json")
    settings = NamesrvSettings.from_conf(conf)
    assert settings.auth.enabled
    meta = AuthMetadata(settings.auth_dir)
    meta.init_users(settings.auth)
    assert meta.user("root").password == "pw-1" and meta.user("root").is_super


def test_quotas_are_set_changed_and_removed_to_match_the_spec():
    limited = user(quotas={"producedBytesPerSecond": 50000, "requestsPerSecond": 0})
    assert limited.quotas == (("producedBytesPerSecond", 50000),)
    assert quota_change(limited, None) == "set"
    held = {"username": "alice", "producedBytesPerSecond": 50000.0, "consumedBytesPerSecond": 0}
    assert quota_change(limited, held) is None
    assert quota_change(user(quotas={"producedBytesPerSecond": 10}), held) == "set"
    assert quota_change(user(), held) == "delete" and quota_change(user(), None) is None
    with pytest.raises(SpecError, match="spec.quotas.bytes"):
        user(quotas={"bytes": 1})
