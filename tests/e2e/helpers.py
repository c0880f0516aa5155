"""Small helpers for the e2e tests: resources as users write them, pods that run one command,
and reading what a broker pod holds through the admin protocol (from the node, pod IPs route)."""

from __future__ import annotations

import json
import secrets
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyrocketmq.client import (
    ClientSettings,
    Message,
    ProducerSettings,
    SyncAdmin,
    SyncProducer,
    SyncPullConsumer,
)
from pyrocketmq.client.controller import controller_groups
from pyrocketmq.client.errors import MQError
from pyrocketmq.operator.drain import ROLE_LABEL
from pyrocketmq.remoting.body import SubscriptionGroupWrapper, TopicConfigSerializeWrapper
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from tests.k8s.cluster import KubeCluster

GROUP = "pyrocketmq.io/v1alpha1"
BROKER_PORT = 10911
BROKER_SELECTOR = "app.kubernetes.io/component=broker"


def nameserver_cr(name: str, replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "NameServer",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}},
        },
    }


def broker_cr(
    name: str, nameserver: str, *, groups: int = 2, replicas: int = 2, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "Broker",
        "metadata": {"name": name},
        "spec": {
            "nameServer": {"name": nameserver},
            "clusterName": f"{name.capitalize()}Cluster",
            "groups": groups,
            "replicasPerGroup": replicas,
            "replicationMode": "SYNC",
            "flushMode": "ASYNC",
            "storage": {"type": "persistent", "size": "1Gi"},
            "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "1Gi"}},
            "config": {"mappedFileSizeCommitLog": "67108864"},
            **spec,
        },
    }


def topic_cr(name: str, topic: str, cluster: str, queues: int = 4) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "Topic",
        "metadata": {"name": name},
        "spec": {"clusterRef": {"name": cluster}, "topicName": topic, "readQueueNums": queues,
                 "writeQueueNums": queues},
    }  # fmt: skip


def group_cr(name: str, group: str, cluster: str) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "ConsumerGroup",
        "metadata": {"name": name},
        "spec": {"clusterRef": {"name": cluster}, "groupName": group},
    }


def _invoke(admin: SyncAdmin, addr: str, code: int) -> bytes:
    async def call():
        resp = await admin.admin.instance.invoke(addr, RemotingCommand.request(code))
        return resp.body or b"{}"

    return admin._lt.run(call())


def topics_on(admin: SyncAdmin, addr: str) -> set[str]:
    body = _invoke(admin, addr, RequestCode.GET_ALL_TOPIC_CONFIG)
    return set(TopicConfigSerializeWrapper.from_json(body).topic_config_table)


def groups_on(admin: SyncAdmin, addr: str) -> set[str]:
    body = _invoke(admin, addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    return set(SubscriptionGroupWrapper.from_json(body).subscription_group_table)


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c.get("type") == kind:
            return c
    return {}


def get(kube: KubeCluster, kind: str, name: str, ns: str) -> dict[str, Any] | None:
    proc = kube.kubectl("get", kind, name, "-n", ns, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def wait_ready(kube: KubeCluster, kind: str, name: str, ns: str, timeout: float = 180) -> dict[str, Any]:
    def ready():
        obj = get(kube, kind, name, ns)
        return obj if condition(obj, "Ready").get("status") == "True" else None

    return kube.wait_until(ready, timeout, f"{kind}/{name} Ready", interval=1)


def first_group(kube: KubeCluster, ns: str, broker: str = "orders") -> dict[str, Any]:
    """``status.groups[0]`` of Broker ``broker`` ({} before it has one)."""
    return ((get(kube, "broker", broker, ns) or {}).get("status", {}).get("groups") or [{}])[0]


def wait_elected(kube: KubeCluster, ns: str) -> dict[str, Any]:
    """NameServer ``names`` and Broker ``orders`` Ready, and its first group (of 2 replicas, with
    failover) with an elected master and both replicas in sync; that group's status."""
    wait_ready(kube, "nameserver", "names", ns, timeout=180)
    wait_ready(kube, "broker", "orders", ns, timeout=240)
    group = kube.wait_until(lambda: (g := first_group(kube, ns)).get("master", {}).get("pod")
                            and len(g.get("inSync", ())) == 2 and g, 120,
                            "a master and both replicas in sync", interval=2)  # fmt: skip
    # the master's budget selects it by this label: until then a drain may evict it like any pod
    master = group["master"]["pod"]
    kube.wait_until(lambda: kube.get("pod", master, "-n", ns)["metadata"].get("labels", {}).get(ROLE_LABEL)
                    == "master", 60, f"{master} labelled {ROLE_LABEL}=master", interval=1)  # fmt: skip
    return group


def controller_view(namesrv: str, group: str) -> dict[str, Any]:
    """What the controller itself says of ``group`` now (``masterId``, ``epoch``, ``syncStateSet``):
    the operator's status repeats it a resync later. ``{"error": …}`` while no controller answers."""
    try:
        with SyncAdmin(namesrv) as admin:
            return admin._lt.run(controller_groups(admin.admin.instance, namesrv)).get(group) or {}
    except (MQError, OSError) as e:  # no leader yet, a pod not answering: asked again
        return {"error": str(e)}


def node_of(kube: KubeCluster, ns: str, pod: str) -> str:
    return kube.get("pod", pod, "-n", ns)["spec"]["nodeName"]


def master_off_operator_node(kube: KubeCluster, ns: str) -> str:
    """The first group's master pod, switched over first if it shares a node with the operator (a
    fault on that node would silence the operator too, and with it the Broker's status)."""
    master = wait_elected(kube, ns)["master"]["pod"]
    operator_node = kube.get("pods", "-n", "pyrocketmq-system", "-l", "app.kubernetes.io/component=operator")[
        "items"][0]["spec"]["nodeName"]  # fmt: skip
    if node_of(kube, ns, master) == operator_node:
        master = next(p for p in ("orders-0-0", "orders-0-1") if p != master)
        kube.kubectl(
            "annotate", "broker", "orders", "-n", ns, f"pyrocketmq.io/switchover={master}", "--overwrite"
        )
        kube.wait_until(
            lambda: first_group(kube, ns).get("master", {}).get("pod") == master, 90, "switchover", interval=1
        )
    return master


def k8s_node(*args: str) -> None:
    """``scripts/k8s-node ARGS`` (freeze, thaw, isolate, heal a node)."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "k8s-node"
    subprocess.run([str(script), *args], check=True, capture_output=True, timeout=60)


class NodeFaults:
    """What a test does to nodes, each undone by :meth:`undo` or, for whatever is left when the test
    ends (a failure half-way), by :meth:`restore`: no node stays frozen, cut off or cordoned.

    ``freeze`` and ``isolate`` are ``scripts/k8s-node``'s (undone by ``thaw`` and ``heal``);
    ``drain`` is ``kubectl drain`` (undone by ``uncordon``)."""

    UNDO = {"freeze": "thaw", "isolate": "heal", "drain": "uncordon"}

    def __init__(self, kube: KubeCluster) -> None:
        self.kube = kube
        self.pending: list[tuple[str, str]] = []
        """(node, the action that undoes what was done to it), oldest first."""

    def do(self, node: str, action: str) -> None:
        self.pending.append((node, self.UNDO[action]))
        if action == "drain":
            self.kube.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                              "--timeout=300s", timeout=330)  # fmt: skip
        else:
            k8s_node(node, action)

    def undo(self, node: str) -> None:
        for item in [p for p in self.pending if p[0] == node][::-1]:
            self._undo(*item)
            self.pending.remove(item)

    def restore(self) -> None:
        while self.pending:
            self._undo(*self.pending.pop())

    def _undo(self, node: str, action: str) -> None:
        if action == "uncordon":
            self.kube.kubectl("uncordon", node, check=False)
        else:
            k8s_node(node, action)


def pods(kube: KubeCluster, ns: str, selector: str = "") -> list[dict[str, Any]]:
    args = ["pods", "-n", ns] + (["-l", selector] if selector else [])
    return kube.get(*args)["items"]


def pod_ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", ())
    )


def pod_ip(kube: KubeCluster, ns: str, name: str) -> str:
    return kube.get("pod", name, "-n", ns)["status"]["podIP"]


def run_pod(
    kube: KubeCluster, ns: str, image: str, args: list[str], *, name: str = "", timeout: float = 180,
    env: list[dict[str, Any]] | None = None, secret_mount: tuple[str, str] | None = None,
) -> tuple[str, str]:
    """Run ``args`` in a one-off pod of ``image``; return (phase, logs) once it has finished.
    ``env``: the container's environment; ``secret_mount``: (Secret, path) mounted read-only, as an
    application mounts its credentials."""
    name = name or f"run-{secrets.token_hex(3)}"
    container: dict[str, Any] = {"name": "main", "image": image, "imagePullPolicy": "Never", "args": args,
                                 "env": env or [],
                                 "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}}}  # fmt: skip
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if secret_mount is not None:
        spec["volumes"] = [{"name": "credentials", "secret": {"secretName": secret_mount[0]}}]
        container["volumeMounts"] = [{"name": "credentials", "mountPath": secret_mount[1], "readOnly": True}]
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}, "-n", ns)
    deadline = time.monotonic() + timeout
    phase = ""
    while time.monotonic() < deadline:
        phase = kube.get("pod", name, "-n", ns)["status"].get("phase", "")
        if phase in ("Succeeded", "Failed"):
            break
        time.sleep(1)
    logs = kube.kubectl("logs", name, "-n", ns, check=False).stdout
    return phase, logs


@dataclass
class MQ:
    kube: KubeCluster
    ns: str
    images: Any  # conftest.E2EImages
    names: int = 2
    """Pods of NameServer ``names``."""

    def broker_pods(self) -> list[dict]:
        return pods(self.kube, self.ns, BROKER_SELECTOR)

    def namesrv_addr(self) -> str:
        """From the node: the name server pods' IPs now (the pod network routes to the node)."""
        return ";".join(f"{pod_ip(self.kube, self.ns, f'names-{i}')}:9876" for i in range(self.names))

    def new_topic(self, prefix: str, queues: int = 2) -> str:
        """A Topic ``<prefix>_<random>`` of ``queues`` queues per group on Broker ``orders``, Ready."""
        topic = f"{prefix}_{secrets.token_hex(3)}"
        name = f"{prefix.lower()}-topic"
        self.kube.apply(topic_cr(name, topic, "orders", queues=queues), "-n", self.ns)
        wait_ready(self.kube, "topic", name, self.ns, timeout=90)
        return topic

    def in_cluster_namesrv(self) -> str:
        return f"names.{self.ns}.svc:9876"

    def broker_addrs(self) -> dict[str, str]:
        return {p["metadata"]["name"]: f"{p['status']['podIP']}:{BROKER_PORT}" for p in self.broker_pods()}


def delete_namespace(kube: KubeCluster, ns: str) -> None:
    """Delete a test's namespace without waiting for its pods to stop: every test has a namespace of
    its own, so the next one need not wait (the cluster's teardown removes whatever is left)."""
    kube.kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)


@contextmanager
def deployed_mq(kube: KubeCluster, images: Any, prefix: str, *, wait: bool = False, names: int = 2,
                groups: int = 2, **broker_spec: Any) -> Iterator[MQ]:
    """A fresh namespace with NameServer ``names`` (``names`` pods) and Broker ``orders`` (``groups``
    groups × master + slave, more ``broker_spec``); deleted afterwards. ``wait``: return once both
    are Ready."""
    ns = kube.create_namespace(prefix)
    kube.apply(nameserver_cr("names", replicas=names), "-n", ns)
    kube.apply(broker_cr("orders", "names", groups=groups, replicas=2, **broker_spec), "-n", ns)
    try:
        if wait:
            wait_ready(kube, "nameserver", "names", ns, timeout=180)
            wait_ready(kube, "broker", "orders", ns, timeout=240)
        yield MQ(kube, ns, images, names)
    finally:
        delete_namespace(kube, ns)


def mq_fixture(
    prefix: str, *, wait: bool = False, names: int = 2, groups: int = 2, **broker_spec: Any
) -> Any:
    """A test module's ``mq`` fixture (``mq = mq_fixture("e2e-x", wait=True)``): its own
    :func:`deployed_mq` of these arguments, once the chart is installed; deleted after the module."""

    @pytest.fixture(scope="module", name="mq")
    def mq(node_cluster: KubeCluster, images: Any, operator_release: str) -> Iterator[MQ]:
        with deployed_mq(
            node_cluster, images, prefix, wait=wait, names=names, groups=groups, **broker_spec
        ) as cluster:
            yield cluster

    return mq


def namespace_fixture(prefix: str) -> Any:
    """A test module's ``ns`` fixture (``ns = namespace_fixture("e2e-x")``): a namespace of its own
    once the chart is installed, deleted after the module."""

    @pytest.fixture(scope="module", name="ns")
    def ns(node_cluster: KubeCluster, operator_release: str) -> Iterator[str]:
        name = node_cluster.create_namespace(prefix)
        try:
            yield name
        finally:
            delete_namespace(node_cluster, name)

    return ns


class Sender:
    """Sends from the node in a thread until stopped, keeping what was acknowledged and what failed."""

    def __init__(
        self, namesrv: str, topic: str, pause: float = 0.02, send_timeout: float = 3.0, keys: int = 0,
        client: ClientSettings | None = None,
    ) -> None:
        self.namesrv, self.topic, self.pause, self.send_timeout = namesrv, topic, pause, send_timeout
        self.client = client
        """TLS or an account, when the cluster asks for them."""
        self.keys = keys
        """With keys: sends round-robin over that many sharding keys (an orderly topic), each body
        ``<topic>|<key>|<per-key sequence>``."""
        self.ok_at: list[float] = []
        """Monotonic time of each SEND_OK."""
        self.acked: dict[str, bytes] = {}
        """Every send the broker answered (SEND_OK or another status: stored on the broker it reached)."""
        self.ok: dict[str, bytes] = {}
        """Those answered SEND_OK (with SYNC_MASTER: on every in-sync replica)."""
        self.failures: list[str] = []
        self.statuses: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sender:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)

    def _run(self) -> None:
        settings = ProducerSettings(send_timeout=self.send_timeout)
        with SyncProducer(f"P_{secrets.token_hex(3)}", self.namesrv, settings, self.client) as producer:
            i, seqs = 0, [0] * self.keys
            while not self._stop.is_set():
                extra: dict[str, Any] = {}
                if self.keys:
                    key = i % self.keys
                    seqs[key] += 1
                    body, extra = f"{self.topic}|k{key}|{seqs[key]}".encode(), {"sharding_key": f"k{key}"}
                else:
                    body = f"{self.topic}-{i}".encode()
                try:
                    result = producer.send(Message(self.topic, body), **extra)
                    self.acked[result.msg_id] = body
                    if result.status.name == "SEND_OK":
                        self.ok[result.msg_id] = body
                        self.ok_at.append(time.monotonic())
                    self.statuses[result.status.name] = self.statuses.get(result.status.name, 0) + 1
                except Exception as exc:  # noqa: BLE001 — counted, the test decides
                    self.failures.append(f"{type(exc).__name__}: {exc}")
                i += 1
                time.sleep(self.pause)

    def wait_for(self, n: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acked) < n and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(self.acked) >= n, (
            f"only {len(self.acked)} sends acknowledged; failures: {self.failures[-5:]}"
        )


def read_all(namesrv: str, topic: str, group: str, expect: int, timeout: float = 90) -> list[bytes]:
    with SyncPullConsumer(group, namesrv) as consumer:
        consumer.assign(consumer.fetch_queues(topic))
        consumer.seek_to_begin()
        got: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(got) < expect and time.monotonic() < deadline:
            got.extend(m.body for m in consumer.poll(timeout=2))
        consumer.commit_sync()
    return got


def read_until(namesrv: str, topic: str, group: str, want: set[bytes], timeout: float = 90) -> set[bytes]:
    """The bodies of ``topic`` read from the start until every one of ``want`` was seen (or ``timeout``);
    unlike a count, this is not fooled by messages stored twice (a send retried after a failover)."""
    seen: set[bytes] = set()
    with SyncPullConsumer(group, namesrv) as consumer:
        consumer.assign(consumer.fetch_queues(topic))
        consumer.seek_to_begin()
        deadline = time.monotonic() + timeout
        while not want <= seen and time.monotonic() < deadline:
            seen.update(m.body for m in consumer.poll(timeout=2))
    return seen


def try_send(namesrv: str, topic: str, settings: ClientSettings) -> str:
    """``"sent"`` when one message goes through with these client settings, else the error's text."""
    try:
        with SyncProducer(f"P_{secrets.token_hex(3)}", namesrv, client=settings) as producer:
            producer.send(Message(topic, b"probe"))
        return "sent"
    except MQError as e:
        return str(e)
