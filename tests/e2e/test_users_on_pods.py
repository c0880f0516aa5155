"""ACL 2.0 users from resources on real pods: a NameServer and a Broker (master + slave) with
spec.auth and User resources whose passwords the operator generates into Secrets; their ACLs on master,
slave and name server; Python and the unmodified Java client in where allowed and out elsewhere
(deny, source addresses); an application pod with its credentials from its User's Secret; edits
applied live; users nobody declares pruned; a deleted User gone."""

from __future__ import annotations

import base64
import secrets
import time
import urllib.request
from collections.abc import Callable

import pytest

from localkube import config as lk_config
from pyrocketmq.client import ClientSettings, Message, SyncAdmin, SyncProducer, SyncPullConsumer
from pyrocketmq.client.errors import MQBrokerError, MQClientError, MQError
from pyrocketmq.remoting.body import SubscriptionGroupConfig
from pyrocketmq.remoting.code import ResponseCode
from tests.conformance import maven
from tests.conformance.jvm import JavaPrograms
from tests.e2e.helpers import (
    broker_cr,
    get,
    nameserver_cr,
    namespace_fixture,
    pod_ip,
    pods,
    run_pod,
    topic_cr,
    try_send,
    wait_ready,
)
from tests.k8s.cluster import KubeCluster

ns = namespace_fixture("e2e-users")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()



def _acl2_client(password: str, user: str) -> ClientSettings:
    return ClientSettings(access_key=user, secret_key=password, request_timeout=5, connect_timeout=3)


def _user_cr(name: str, acl: list[dict], **spec: object) -> dict:
    return {"apiVersion": "pyrocketmq.io/v1alpha1", "kind": "User", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": "users"}, "acl": acl, **spec}}  # fmt: skip


def _password(kube: KubeCluster, ns: str, secret: str) -> str:
    data = kube.wait_until(lambda: (get(kube, "secret", secret, ns) or {}).get("data"), 60,
                           f"Secret {secret}")
    return base64.b64decode(data["password"]).decode()


def _users_on(admin: SyncAdmin, addrs: list[str]) -> list[set[str]]:
    return [{u["username"] for u in admin.list_users(broker_addr=a)} for a in addrs]


def _deploy(kube: KubeCluster, ns: str) -> tuple[str, str, str, str]:
    """A NameServer and a Broker (master + slave) with spec.auth, topics Orders_* and Other_*, and
    Users alice (Orders_* and her group; every other topic denied) and bob (publish on Orders_*
    from 192.0.2.0/24 only); returns root's password and the topic and group names."""
    root_pw = secrets.token_urlsafe(16)
    kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "mq-root"}, "type": "Opaque",
                "data": {"username": _b64("root"), "password": _b64(root_pw)}}, "-n", ns)  # fmt: skip
    names = nameserver_cr("plain", replicas=1)
    names["spec"]["auth"] = {"secretName": "mq-root"}  # the name server checks ACL 2.0 too
    kube.apply(names, "-n", ns)
    kube.apply(broker_cr("users", "plain", groups=1, replicas=2, auth={"secretName": "mq-root"}), "-n", ns)
    orders, other, group = (f"{p}_{secrets.token_hex(3)}" for p in ("Orders", "Other", "GID_ALICE"))
    kube.apply(topic_cr("orders-topic", orders, "users", queues=2), "-n", ns)
    kube.apply(topic_cr("other-topic", other, "users", queues=2), "-n", ns)
    alice_acl = [{"resources": [f"Topic:{orders}"], "actions": ["Pub", "Sub", "Get"]},  # Get: queue extents
                 {"resources": [f"Group:{group}"], "actions": ["Sub"]},
                 {"resources": ["Topic:*"], "actions": ["All"], "decision": "Deny"}]  # fmt: skip
    kube.apply(_user_cr("alice", alice_acl), "-n", ns)
    kube.apply(_user_cr("bob", [{"resources": [f"Topic:{orders}"], "actions": ["Pub"],
                                 "sourceIps": ["192.0.2.0/24"]}]), "-n", ns)  # fmt: skip
    kube.apply(_user_cr("carol", CAROL_ACL), "-n", ns)
    pod_networks = sorted(lk_config.node_named(n["metadata"]["name"]).pod_cidr
                          for n in kube.get("nodes")["items"])  # fmt: skip
    kube.apply(_user_cr("dave", [{"resources": [f"Topic:{orders}", f"Group:{APP_GROUP}"],
                                  "actions": ["Pub", "Sub", "Get"], "sourceIps": pod_networks}]), "-n", ns)
    return root_pw, orders, other, group


APP_GROUP = "GID_APP"
"""dave's group: his application pod consumes with it."""


def _app_pod_as_dave(kube: KubeCluster, ns: str, image: str, namesrv: str, topic: str) -> None:
    """dave may publish and subscribe from the pod network only: refused from the node, while his
    application pod, whose credentials come from his Secret, produces and consumes."""
    started = time.monotonic()
    dave = _acl2_client(_password(kube, ns, "dave"), "dave")
    assert "no permission" in try_send(namesrv, topic, dave).lower()  # the node is outside his networks
    env = [{"name": f"PYROCKETMQ_{var}", "valueFrom": {"secretKeyRef": {"name": "dave", "key": key}}}
           for var, key in (("ACCESS_KEY", "username"), ("SECRET_KEY", "password"))]  # fmt: skip
    in_cluster = f"plain.{ns}.svc:9876"
    produce = ["pyrocketmq", "produce", "-n", in_cluster, "-t", topic, "-c", "20", "--body", "from-daves-pod",
               "-q"]  # fmt: skip
    phase, logs = run_pod(kube, ns, image, produce, name="dave-producer", env=env)
    assert phase == "Succeeded" and "sent 20 message(s)" in logs, logs
    phase, logs = run_pod(kube, ns, image, ["pyrocketmq", "consume", "-n", in_cluster, "-t", topic, "-g",
                                            APP_GROUP, "--from-beginning", "--timeout", "10"],
                          name="dave-consumer", env=env)  # fmt: skip
    assert phase == "Succeeded" and logs.count("from-daves-pod") == 20, logs[-2000:]
    took = time.monotonic() - started
    assert took < 180, took
    print(f"dave's application pod (credentials from Secret dave, source rule: the pod networks) "
          f"sent and read 20 messages, {took:.0f} s after his User was Ready; refused from the node")


CAROL_ACL = [
    {"resources": ["Topic:Mx_*"], "actions": ["Pub", "Sub", "Create", "Delete", "Get"]},
    {"resources": ["Topic:Mx_deny"], "actions": ["All"], "decision": "Deny"},  # beats the prefix
    {"resources": ["Group:GX_*"], "actions": ["Sub", "Create", "Delete"]},
    {"resources": ["Cluster:*"], "actions": ["Get", "List", "Update"]},
]
"""carol: each action on each resource kind, allowed here and refused elsewhere."""


def _refusal(fn: Callable[[], object]) -> str:
    """'' when ``fn`` went through, else the refusal's words (any other error fails the test)."""
    try:
        fn()
        return ""
    except MQBrokerError as e:
        assert e.code == ResponseCode.NO_PERMISSION, e
        return e.remark or str(e)
    except MQClientError as e:  # a route refused by the name server
        assert "no permission" in str(e).lower(), e
        return str(e)


def _has_route(admin: SyncAdmin, topic: str) -> bool:
    try:
        return bool(admin.topic_route(topic).queue_datas)
    except MQError:
        return False


def _every_action_both_ways(kube: KubeCluster, ns: str, namesrv: str, master: str, passwords: dict) -> None:
    """Every action on Topic, Group and Cluster resources, once allowed and once refused; a Deny on
    a name beating an Allow on its prefix."""
    carol, alice = _acl2_client(passwords["carol"], "carol"), _acl2_client(passwords["alice"], "alice")
    topic = f"Mx_{secrets.token_hex(3)}"
    with SyncAdmin(namesrv, client=carol) as admin, SyncAdmin(namesrv, client=alice) as other:
        # Create, on Topic and Group
        assert _refusal(lambda: admin.create_topic(topic, broker_addr=master, write_queues=1)) == ""
        assert "Topic:Zz_new" in _refusal(lambda: admin.create_topic("Zz_new", broker_addr=master))
        assert "Topic:Mx_deny" in _refusal(lambda: admin.create_topic("Mx_deny", broker_addr=master))
        def create_group(name: str) -> str:
            return _refusal(lambda: admin.create_subscription_group(SubscriptionGroupConfig(group_name=name),
                                                                    broker_addr=master))  # fmt: skip

        assert create_group("GX_1") == "" and "Group:GY_1" in create_group("GY_1")
        kube.wait_until(lambda: _has_route(admin, topic), 60, f"a route for {topic}")
        # Pub and Sub (the deny: no route either), Get (offsets)
        assert try_send(namesrv, topic, carol) == "sent"
        assert "no permission" in try_send(namesrv, "Mx_deny", carol).lower()
        with SyncPullConsumer("GX_1", namesrv, client=carol) as consumer:
            queues = consumer.fetch_queues(topic)
            consumer.assign(queues)
            consumer.seek_to_begin()
            got: list[bytes] = []
            kube.wait_until(lambda: got.extend(m.body for m in consumer.poll(timeout=2)) or got, 60,
                            "carol reads what she sent")  # fmt: skip
            assert admin.max_offset(queues[0]) >= 1
        assert "Topic:" in _refusal(lambda: other.max_offset(queues[0]))  # alice: Topic:* denied
        # List and Get on the cluster (name server), Update (broker config)
        assert topic in admin.topic_list() and admin.cluster_info().broker_addr_table
        assert "Cluster:" in _refusal(other.topic_list) and "Cluster:" in _refusal(other.cluster_info)
        value = admin.broker_config(master).get("fileReservedTime") or "72"
        assert _refusal(lambda: admin.update_broker_config(master, "fileReservedTime", value)) == ""
        assert "Cluster:UsersCluster" in _refusal(
            lambda: other.update_broker_config(master, "fileReservedTime", value))
        # Delete, on Group and Topic
        assert _refusal(lambda: admin.delete_subscription_group("GX_1", master)) == ""
        assert "Group:GID_" in _refusal(lambda: admin.delete_subscription_group(passwords["group"], master))
        assert _refusal(lambda: admin.delete_topic(topic, "UsersCluster")) == ""
    print("carol: Pub, Sub, Create, Delete, Get on Topic; Sub, Create, Delete on Group; Get, List, Update on "
          "Cluster allowed, and each refused where her ACL (or alice's) does not grant it")


@pytest.mark.timeout(900)
def test_users_and_their_acls_from_user_resources_on_pods(node_cluster, images, ns, tmp_path):
    """ACL 2.0 from resources: a Broker with spec.auth, Users whose passwords the operator generates
    into Secrets, their ACLs on master and slave, applied live, pruned and deleted."""
    kube = node_cluster
    root_pw, orders, other, group = _deploy(kube, ns)
    wait_ready(kube, "broker", "users", ns, timeout=300)
    for name in ("orders-topic", "other-topic"):
        wait_ready(kube, "topic", name, ns, timeout=120)
    alice = wait_ready(kube, "user", "alice", ns, timeout=120)
    # master, slave and the name server
    assert alice["status"]["secretName"] == "alice" and len(alice["status"]["brokers"]) == 3, alice["status"]
    wait_ready(kube, "user", "bob", ns, timeout=60)
    print(kube.kubectl("get", "rmqu", "-n", ns).stdout)  # what the README shows
    namesrv = f"{pod_ip(kube, ns, 'plain-0')}:9876"
    alice_pw, bob_pw = _password(kube, ns, "alice"), _password(kube, ns, "bob")
    root = _acl2_client(root_pw, "root")

    # Master, slave and name server all know alice (a slave elected master would serve her at once).
    # from the node: a name server's DNS name as its pod's address
    addrs = [f"{pod_ip(kube, ns, a.split('.')[0])}:{a.rsplit(':', 1)[1]}" if ".svc" in a else a
             for a in alice["status"]["brokers"]]
    with SyncAdmin(namesrv, client=root) as admin:
        assert all("alice" in users and "bob" in users for users in _users_on(admin, addrs))

    # alice publishes and consumes where her ACL allows, nowhere else; a wrong password is refused.
    with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv, client=_acl2_client(alice_pw, "alice")) as p:
        sent = [p.send(Message(orders, f"a{i}".encode())).msg_id for i in range(10)]
    assert len(sent) == 10
    denied = try_send(namesrv, other, _acl2_client(alice_pw, "alice"))
    assert "no permission" in denied.lower() and other in denied, denied  # no route for it
    assert try_send(namesrv, orders, _acl2_client("wrong-password", "alice")) != "sent"
    with SyncPullConsumer(group, namesrv, client=_acl2_client(alice_pw, "alice")) as consumer:
        consumer.assign(consumer.fetch_queues(orders))
        consumer.seek_to_begin()
        got: list[bytes] = []
        kube.wait_until(lambda: got.extend(m.body for m in consumer.poll(timeout=2)) or len(got) >= 10, 60,
                        "alice reads her 10 messages")  # fmt: skip
    assert sorted(got) == sorted(f"a{i}".encode() for i in range(10))
    # The unmodified Java client signs as alice (AclClientRPCHook): in where she may, out elsewhere.
    java = JavaPrograms(maven.resolve(maven.CLIENT), log_dir=tmp_path / "java")
    as_alice = {"acl.accessKey": "alice", "acl.secretKey": alice_pw}
    sent_java = java.run("ProducerScenario", [namesrv, orders, 5, "sync", "pg_alice"], timeout=120,
                         jvm_props=as_alice).json()  # fmt: skip
    assert sent_java["errors"] == 0, [s.get("error") for s in sent_java["sent"] if "error" in s][:2]
    refused_java = java.run("ProducerScenario", [namesrv, other, 1, "sync", "pg_alice"], timeout=120,
                            jvm_props=as_alice).json()  # fmt: skip
    assert refused_java["errors"] == 1

    wait_ready(kube, "user", "dave", ns, timeout=60)
    _app_pod_as_dave(kube, ns, images.project, namesrv, orders)

    # bob may publish only from 192.0.2.0/24; the rule edited away applies live, no pod replaced.
    assert "no permission" in try_send(namesrv, orders, _acl2_client(bob_pw, "bob")).lower()
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(kube, ns)}
    # a user no User declares is pruned at bob's next reconcile
    with SyncAdmin(namesrv, client=root) as admin:
        admin.create_user("mallory", "mallory-password", broker_addr=addrs[0])
    kube.apply(_user_cr("bob", [{"resources": [f"Topic:{orders}"], "actions": ["Pub"]}]), "-n", ns)
    kube.wait_until(lambda: try_send(namesrv, orders, _acl2_client(bob_pw, "bob")) == "sent", 60,
                    "bob may publish once his source rule is gone", interval=2)  # fmt: skip
    with SyncAdmin(namesrv, client=root) as admin:
        kube.wait_until(lambda: all("mallory" not in u for u in _users_on(admin, addrs)), 60,
                        "mallory pruned")
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(kube, ns)}
    assert after == before

    _every_action_both_ways(kube, ns, namesrv, addrs[0], {"alice": alice_pw, "group": group,
                                                          "carol": _password(kube, ns, "carol")})
    _quota_slows_alice_not_bob(kube, ns, namesrv, orders, addrs[0], {"root": root_pw, "alice": alice_pw,
                                                                      "bob": bob_pw})

    # A deleted User leaves every broker.
    kube.kubectl("delete", "user", "alice", "-n", ns, "--timeout=60s")
    with SyncAdmin(namesrv, client=root) as admin:
        assert all("alice" not in users and "bob" in users for users in _users_on(admin, addrs))
    assert try_send(namesrv, orders, _acl2_client(alice_pw, "alice")) != "sent"


def _user_metric(text: str, name: str, user: str) -> float:
    """The value of ``pyrocketmq_broker_user_<name>{..., user="<user>"}`` in a scrape (0 when absent)."""
    prefix = f"pyrocketmq_broker_user_{name}{{"
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(prefix) and f'user="{user}"' in line)


def _quota_slows_alice_not_bob(kube: KubeCluster, ns: str, namesrv: str, topic: str, master: str,
                               passwords: dict[str, str]) -> None:
    """spec.quotas: alice held to 8 KB/s of sends by every broker: slowed, never refused; bob, who
    sends beside her, is not held back at all."""
    kube.merge_patch("user", "alice", ns, {"spec": {"quotas": {"producedBytesPerSecond": 8000}}})
    with SyncAdmin(namesrv, client=_acl2_client(passwords["root"], "root")) as admin:
        kube.wait_until(lambda: (admin.get_user_quota("alice", broker_addr=master) or {})
                        .get("producedBytesPerSecond"), 60, "alice's quota on the master")  # fmt: skip
    body = b"q" * 1024
    for user in ("alice", "bob"):
        with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv,
                          client=_acl2_client(passwords[user], user)) as producer:
            assert all(producer.send(Message(topic, body)).status.name == "SEND_OK" for _ in range(24))
    url = f"http://{master.rsplit(':', 1)[0]}:5557/metrics"
    scrape = urllib.request.urlopen(url, timeout=10).read().decode()
    assert _user_metric(scrape, "throttle_seconds_total", "alice") > 0
    assert _user_metric(scrape, "throttle_seconds_total", "bob") == 0
    assert _user_metric(scrape, "produced_bytes_total", "bob") >= 24 * 1024
