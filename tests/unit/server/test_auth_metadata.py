"""ACL 2.0's users and ACLs on disk: Apache's rules for each change, the files written atomically and
read back by a new instance (a broker restart), the configured super users made once."""

from __future__ import annotations

import json
import os
import stat

import pytest

from pyrocketmq.remoting.properties import ConfigError
from pyrocketmq.server.acl2 import AuthError, PolicyType, Resource, User, UserType, acl_from_info
from pyrocketmq.server.auth_metadata import AuthMetadata
from pyrocketmq.server.auth_settings import AuthSettings


def _acl(*resources: str, decision: str = "Allow"):
    return acl_from_info({"subject": "User:alice", "policies": [{"entries": [
        {"resource": r, "actions": ["Pub"], "decision": decision} for r in resources]}]})


def test_users_and_acls_survive_a_restart(tmp_path):
    meta = AuthMetadata(str(tmp_path))
    meta.load()
    meta.create_user(User("alice", "alice-secret"))
    meta.put_acl("alice", _acl("Topic:orders", "Topic:pay*"))
    meta.update_user("alice", {"userStatus": "disable"})
    again = AuthMetadata(str(tmp_path))
    again.load()
    assert again.user("alice") == User("alice", "alice-secret", user_status=meta.users["alice"].user_status)
    assert not again.users["alice"].enabled
    assert again.acl("alice") == meta.acl("alice")
    for name in ("users.json", "acls.json"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o600
    doc = json.loads((tmp_path / "users.json").read_text())
    assert doc == {"users": [{"username": "alice", "password": "alice-secret", "userType": "Normal",
                              "userStatus": "disable"}]}


def test_apaches_rules_for_users(tmp_path):
    meta = AuthMetadata(str(tmp_path))
    meta.create_user(User("alice", "p"))
    with pytest.raises(AuthError, match="The user is existed"):
        meta.create_user(User("alice", "q"))
    with pytest.raises(AuthError, match="The user is not exist"):
        meta.update_user("bob", {"password": "x"})
    meta.create_user(User("bob", "p"))
    assert [u.username for u in meta.list_users()] == ["alice", "bob"]
    assert [u.username for u in meta.list_users("li")] == ["alice"]
    meta.put_acl("alice", _acl("Topic:a"))
    meta.delete_user("alice")  # its ACL goes with it
    meta.delete_user("nobody")
    assert meta.user("alice") is None and meta.acl("alice") is None


def test_apaches_rules_for_acls(tmp_path):
    meta = AuthMetadata(str(tmp_path))
    with pytest.raises(AuthError, match="The subject of User:alice is not exist."):
        meta.put_acl("alice", _acl("Topic:a"))
    meta.create_user(User("alice", "p"))
    meta.put_acl("alice", _acl("Topic:a", "Topic:b"))
    merged = meta.put_acl("alice", _acl("Topic:b", "Topic:c", decision="Deny"))
    assert [(e.resource.key, e.decision.value) for e in merged.policies[0].entries] == [
        ("Topic:a", "Allow"), ("Topic:b", "Deny"), ("Topic:c", "Deny")]
    meta.delete_acl("alice", PolicyType.CUSTOM, Resource.parse("Topic:b"))
    assert [e.resource.key for e in meta.acl("alice").policies[0].entries] == ["Topic:a", "Topic:c"]
    assert [a.subject for a in meta.list_acls(resource_filter="Topic:c")] == ["User:alice"]
    assert meta.list_acls(resource_filter="Topic:zzz") == []
    meta.delete_acl("alice")
    with pytest.raises(AuthError, match="The acl is not exist."):
        meta.delete_acl("alice")
    with pytest.raises(AuthError, match="The subject is not exist."):
        meta.get_acl("bob")
    assert meta.get_acl("alice") is None


def test_configured_super_users_are_made_once(tmp_path):
    meta = AuthMetadata(str(tmp_path))
    meta.init_users(AuthSettings(init_user='{"username": "root", "password": "root-pass"}',
                                 inner_credentials='{"accessKey": "inner", "secretKey": "inner-secret"}'))
    assert meta.users["root"] == User("root", "root-pass", UserType.SUPER)
    assert meta.users["inner"] == User("inner", "inner-secret", UserType.SUPER)
    meta.update_user("root", {"password": "changed"})
    again = AuthMetadata.open(str(tmp_path), AuthSettings(init_user='{"username": "root", "password": "x"}'))
    assert again.users["root"].password == "changed"


@pytest.mark.parametrize("raw", ['{"username": "root"}', "root:pass", "[1]"])
def test_a_bad_initial_user_is_refused(tmp_path, raw):
    with pytest.raises(ConfigError, match="initAuthenticationUser"):
        AuthMetadata(str(tmp_path)).init_users(AuthSettings(init_user=raw))


def test_a_broken_file_is_refused_with_its_name(tmp_path):
    (tmp_path / "acls.json").write_text('{"acls": [{"subject": "User:a", "policies": []}]}')
    with pytest.raises(AuthError, match="acls.json: acls\\[0\\]: The policies is empty."):
        AuthMetadata(str(tmp_path)).load()
