"""ACL 2.0's model without a socket: resource keys and patterns, actions, source addresses, the
decision (the most specific entry decides; Deny wins only a tie), users and the JSON bodies."""

from __future__ import annotations

import pytest

from pyrocketmq.server.acl2 import (
    Acl,
    Action,
    AuthError,
    Decision,
    Policy,
    PolicyEntry,
    PolicyType,
    Resource,
    ResourcePattern,
    ResourceType,
    User,
    UserStatus,
    UserType,
    acl_from_info,
    acl_to_info,
    decide,
    filter_acls,
    source_matches,
    subject_user,
    user_from_info,
    user_to_info,
    user_updated,
)

IP = "10.1.2.3"
DENIED = "the decision is deny."


def _acl(*entries: tuple[str, list[str], str], ips: list[str] | None = None,
         default: list[tuple[str, list[str], str]] | None = None) -> Acl:
    policies = [{"entries": [{"resource": r, "actions": a, "decision": d, "sourceIps": ips or []}
                             for r, a, d in entries]}] if entries else []
    if default:
        policies.append({"policyType": "Default",
                         "entries": [{"resource": r, "actions": a, "decision": d} for r, a, d in default]})
    return acl_from_info({"subject": "User:alice", "policies": policies})


@pytest.mark.parametrize(("key", "rtype", "name", "pattern"), [
    ("*", ResourceType.ANY, None, ResourcePattern.ANY),
    ("Topic:*", ResourceType.TOPIC, None, ResourcePattern.ANY),
    ("Topic:orders*", ResourceType.TOPIC, "orders", ResourcePattern.PREFIXED),
    ("Topic:orders", ResourceType.TOPIC, "orders", ResourcePattern.LITERAL),
    ("group:cg", ResourceType.GROUP, "cg", ResourcePattern.LITERAL),
    ("Cluster:DefaultCluster", ResourceType.CLUSTER, "DefaultCluster", ResourcePattern.LITERAL),
    ("Namespace:ns1*", ResourceType.NAMESPACE, "ns1", ResourcePattern.PREFIXED),
])
def test_resource_keys_parse_and_print_back(key, rtype, name, pattern):
    r = Resource.parse(key)
    assert (r.type, r.name, r.pattern) == (rtype, name, pattern)
    assert Resource.parse(r.key) == r


@pytest.mark.parametrize("key", ["", "Topic", "Topic:", "Queue:x", "Any:x", None])
def test_malformed_resource_keys_are_refused(key):
    with pytest.raises(AuthError, match="resource"):
        Resource.parse(key)


@pytest.mark.parametrize(("entry", "wanted", "matches"), [
    ("*", Resource.topic("a"), True),
    ("*", Resource.group("g"), True),
    ("Topic:*", Resource.topic("anything"), True),
    ("Topic:*", Resource.group("anything"), False),
    ("Topic:ord*", Resource.topic("orders"), True),
    ("Topic:ord*", Resource.topic("or"), False),
    ("Topic:orders", Resource.topic("orders"), True),
    ("Topic:orders", Resource.topic("orders2"), False),
    ("Group:cg", Resource.group("%RETRY%cg"), True),
    ("Group:cg", Resource.group("%DLQ%cg"), True),
])
def test_each_pattern_matches_what_it_should(entry, wanted, matches):
    assert Resource.parse(entry).matches(wanted) is matches


@pytest.mark.parametrize("action", [a for a in Action if a not in (Action.ANY, Action.ALL)])
def test_each_action_is_granted_by_itself_and_by_all_only(action):
    only = PolicyEntry(Resource.topic("t"), (action,))
    everything = PolicyEntry(Resource.topic("t"), (Action.ALL,))
    others = [a for a in Action if a not in (action, Action.ANY, Action.ALL)]
    assert only.matches_actions([action]) and everything.matches_actions([action])
    assert not PolicyEntry(Resource.topic("t"), tuple(others)).matches_actions([action])
    assert only.matches_actions([Action.ANY])  # a request asking "any right" takes this one
    allowed = _acl(("Topic:t", [action.value], "Allow"))
    assert decide(allowed, Resource.topic("t"), [action], IP) is None
    assert decide(allowed, Resource.topic("t"), others, IP) == "no matched policies."


def test_a_request_needing_one_of_several_actions_takes_any_of_them():
    acl = _acl(("Group:cg", ["Get"], "Allow"))
    assert decide(acl, Resource.group("cg"), [Action.SUB, Action.GET], IP) is None
    assert decide(acl, Resource.group("cg"), [Action.SUB], IP) is not None


@pytest.mark.parametrize(("entries", "topic", "refusal"), [
    # the more specific entry decides, whatever its decision
    ([("Topic:*", ["Pub"], "Deny"), ("Topic:orders", ["Pub"], "Allow")], "orders", None),
    ([("Topic:*", ["Pub"], "Allow"), ("Topic:orders", ["Pub"], "Deny")], "orders", DENIED),
    ([("Topic:ord*", ["Pub"], "Deny"), ("Topic:orders", ["Pub"], "Allow")], "orders", None),
    ([("Topic:ord*", ["Pub"], "Deny"), ("Topic:orders*", ["Pub"], "Allow")], "orders", None),
    ([("Topic:ord*", ["Pub"], "Allow"), ("Topic:orders*", ["Pub"], "Deny")], "orders", DENIED),
    ([("*", ["Pub"], "Deny"), ("Topic:*", ["Pub"], "Allow")], "orders", None),
    ([("Topic:ord*", ["Pub"], "Deny"), ("Topic:*", ["Pub"], "Allow")], "orders", DENIED),
    ([("Topic:ord*", ["Pub"], "Deny"), ("Topic:*", ["Pub"], "Allow")], "other", None),
    # a tie: Deny wins
    ([("Topic:orders", ["Pub"], "Allow"), ("Topic:orders", ["All"], "Deny")], "orders", DENIED),
    ([("Topic:ord*", ["Pub"], "Allow"), ("Topic:ord*", ["Pub"], "Deny")], "orders", DENIED),
    ([("*", ["Pub"], "Allow"), ("*", ["All"], "Deny")], "orders", DENIED),
    # nothing matches: refused
    ([("Topic:other", ["Pub"], "Allow")], "orders", "no matched policies."),
])
def test_the_most_specific_entry_decides_and_deny_wins_only_a_tie(entries, topic, refusal):
    acl = Acl("User:alice", (Policy(PolicyType.CUSTOM, tuple(
        PolicyEntry(Resource.parse(r), tuple(Action(a) for a in acts), (), Decision(d))
        for r, acts, d in entries)),))
    assert decide(acl, Resource.topic(topic), [Action.PUB], IP) == refusal


def test_default_policy_counts_only_when_no_custom_entry_matches():
    acl = _acl(("Topic:orders", ["Pub"], "Allow"), default=[("Topic:*", ["All"], "Deny"),
                                                           ("Group:*", ["Sub"], "Allow")])
    assert decide(acl, Resource.topic("orders"), [Action.PUB], IP) is None
    assert decide(acl, Resource.topic("orders"), [Action.SUB], IP) == "the decision is deny."
    assert decide(acl, Resource.topic("other"), [Action.PUB], IP) == "the decision is deny."
    assert decide(acl, Resource.group("cg"), [Action.SUB], IP) is None
    assert decide(None, Resource.group("cg"), [Action.SUB], IP) == "no matched policies."


@pytest.mark.parametrize(("ip", "spec", "inside"), [
    ("10.1.2.3", "10.1.2.3", True),
    ("10.1.2.4", "10.1.2.3", False),
    ("10.1.2.3", "10.1.0.0/16", True),
    ("10.2.2.3", "10.1.0.0/16", False),
    ("10.1.2.3", "0.0.0.0/0", True),
    ("::1", "::1/128", True),
    ("::1", "10.0.0.0/8", False),
])
def test_source_addresses_and_cidr_blocks(ip, spec, inside):
    assert source_matches(ip, spec) is inside


def test_an_entry_with_source_ips_applies_only_from_there():
    acl = _acl(("Topic:t", ["Pub"], "Allow"), ips=["192.168.0.0/24", "10.1.2.3"])
    assert decide(acl, Resource.topic("t"), [Action.PUB], "192.168.0.77") is None
    assert decide(acl, Resource.topic("t"), [Action.PUB], IP) is None
    assert decide(acl, Resource.topic("t"), [Action.PUB], "10.1.2.4") == "no matched policies."
    # a Deny from one place only
    acl = acl.merged([Policy(PolicyType.CUSTOM, (PolicyEntry(Resource.parse("Topic:t*"), (Action.PUB,)),))])
    acl = acl.merged([Policy(PolicyType.CUSTOM, (
        PolicyEntry(Resource.parse("Topic:t"), (Action.PUB,), ("10.9.9.9",), Decision.DENY),))])
    assert decide(acl, Resource.topic("t"), [Action.PUB], "10.9.9.9") == "the decision is deny."
    assert decide(acl, Resource.topic("t"), [Action.PUB], IP) is None  # the prefix entry


def test_users_from_bodies_default_and_update():
    u = user_from_info({"username": "alice", "password": "secret"})
    assert (u.user_type, u.user_status, u.subject) == (UserType.NORMAL, UserStatus.ENABLE, "User:alice")
    assert user_to_info(u) == {"username": "alice", "password": "secret", "userType": "Normal",
                               "userStatus": "enable"}
    admin = user_from_info({"username": "root", "password": "p", "userType": "super"})
    assert admin.is_super
    off = user_updated(u, {"userStatus": "disable", "password": ""})
    assert (off.password, off.enabled, off.user_type) == ("secret", False, UserType.NORMAL)
    assert user_updated(u, {"password": "new"}).password == "new"


@pytest.mark.parametrize(("info", "why"), [
    ({"password": "p"}, "username can not be blank"),
    ({"username": "a"}, "password can not be blank"),
    ({"username": "a", "password": "p", "userType": "Root"}, "userType 'Root' is not one of Super, Normal"),
    ({"username": "a", "password": "p", "userStatus": "off"}, "userStatus"),
    ({"username": 5, "password": "p"}, "username is not a string"),
])
def test_bad_user_bodies_say_why(info, why):
    with pytest.raises(AuthError, match=why):
        user_from_info(info)


def test_acl_bodies_round_trip_in_apaches_field_names():
    info = {"subject": "User:alice", "policies": [
        {"policyType": "Custom", "entries": [
            {"resource": "Topic:orders*", "actions": ["Pub", "Get"], "sourceIps": ["10.0.0.0/8"],
             "decision": "Allow"},
            {"resource": "Group:cg", "actions": ["Sub"], "decision": "Deny"}]},
        {"policyType": "Default", "entries": [{"resource": "*", "actions": ["All"], "decision": "Deny"}]}]}
    acl = acl_from_info(info)
    assert acl_to_info(acl) == info
    assert acl_from_info({"policies": info["policies"]}, "User:alice") == acl
    untyped = acl_from_info({"policies": [{"entries": info["policies"][0]["entries"]}]}, "User:alice")
    assert untyped.policies[0].policy_type is PolicyType.CUSTOM


@pytest.mark.parametrize(("info", "why"), [
    ({"subject": "alice", "policies": []}, "not User:<username>"),
    ({"subject": "User:alice"}, "The policies is empty."),
    ({"subject": "User:alice", "policies": [{"entries": []}]}, "The policy entries is empty."),
    ({"subject": "User:alice", "policies": [{"entries": [{"resource": "Topic:t", "actions": [],
                                                          "decision": "Allow"}]}]}, "The actions is empty."),
    ({"subject": "User:alice", "policies": [{"entries": [{"resource": "Topic:t", "actions": ["Any"],
                                                          "decision": "Allow"}]}]}, "can not be Any"),
    ({"subject": "User:alice", "policies": [{"entries": [{"resource": "Topic:t", "actions": ["Publish"],
                                                          "decision": "Allow"}]}]}, "'Publish' is not"),
    ({"subject": "User:alice", "policies": [{"entries": [{"resource": "Topic:t", "actions": ["Pub"],
                                                          "decision": "Maybe"}]}]}, "decision"),
    ({"subject": "User:alice", "policies": [{"entries": [{"resource": "Topic:t", "actions": ["Pub"],
                                                          "sourceIps": ["10.0.0"],
                                                          "decision": "Allow"}]}]}, "source ip is invalid"),
    ({"subject": "User:alice", "policies": [{"entries": [{"resource": "Queue:t", "actions": ["Pub"],
                                                          "decision": "Allow"}]}]}, "resource"),
])
def test_bad_acl_bodies_say_why(info, why):
    with pytest.raises(AuthError, match=why):
        acl_from_info(info)


def test_merging_replaces_an_entry_for_the_same_resource_and_deleting_removes_it():
    acl = _acl(("Topic:a", ["Pub"], "Allow"), ("Topic:b", ["Pub"], "Allow"))
    new = acl_from_info({"subject": "User:alice", "policies": [{"entries": [
        {"resource": "Topic:a", "actions": ["Sub"], "decision": "Deny"},
        {"resource": "Topic:c", "actions": ["Pub"], "decision": "Allow"}]}]})
    merged = acl.merged(new.policies)
    assert [(e.resource.key, e.decision) for e in merged.policies[0].entries] == [
        ("Topic:a", Decision.DENY), ("Topic:b", Decision.ALLOW), ("Topic:c", Decision.ALLOW)]
    less = merged.without(PolicyType.CUSTOM, Resource.parse("Topic:b"))
    assert less is not None and [e.resource.key for e in less.policies[0].entries] == ["Topic:a", "Topic:c"]
    one = _acl(("Topic:a", ["Pub"], "Allow"))
    assert one.without(PolicyType.CUSTOM, Resource.parse("Topic:a")) is None
    assert one.without(PolicyType.DEFAULT, Resource.parse("Topic:a")) == one


def test_listing_filters_by_subject_and_by_resource():
    a = _acl(("Topic:orders", ["Pub"], "Allow"), ("Group:cg", ["Sub"], "Allow"))
    b = acl_from_info({"subject": "User:bob", "policies": [{"entries": [
        {"resource": "Topic:payments", "actions": ["Pub"], "decision": "Allow"}]}]})
    assert filter_acls([a, b], "bob", None) == [b]
    cut = filter_acls([a, b], None, "orders")
    assert [(x.subject, [e.resource.key for p in x.policies for e in p.entries]) for x in cut] == [
        ("User:alice", ["Topic:orders"])]
    assert filter_acls([a, b], None, "alice") == [a]  # the subject names it: whole


def test_subjects_name_users():
    assert subject_user("User:alice") == "alice"
    for bad in ("alice", "User:", "Group:x", None):
        with pytest.raises(AuthError):
            subject_user(bad)


def test_super_and_disabled_users_are_told_apart():
    assert User("root", "p", UserType.SUPER).is_super
    assert not User("bob", "p", user_status=UserStatus.DISABLE).enabled
