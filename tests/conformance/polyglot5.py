"""One scenario for every official RocketMQ 5.x client language (Go, Rust, Python ...) against
the broker's gRPC endpoint, and the checks that judge it the same way for each.

Each language has a small program of ours (``go5/``, ``rust5/``, ``python5/``) that takes

    ENDPOINT PLAIN_TOPIC FIFO_TOPIC CONSUMER_GROUP COUNT GROUPS PER_GROUP SECONDS

sends COUNT plain messages (bodies ``p-<i>``) to PLAIN_TOPIC, then PER_GROUP rounds of one FIFO message
per group of GROUPS (``<group>#<i>``, the groups interleaved) to FIFO_TOPIC, then receives everything
back with a SimpleConsumer of CONSUMER_GROUP (acking each), receives once more from the queues now
empty, and prints one JSON document as its last stdout line::

    {"client": "...", "plain": [SENT], "fifo": [SENT], "received": [RECEIVED], "errors": ["..."],
     "emptyWait": seconds the last receive took to say "no message"}
    SENT     = {"messageId", "body", "group"?, "offset"? (receipt's queue offset), "clientQueue"?}
    RECEIVED = {"messageId", "topic", "body", "group", "attempt"}

Where each message landed is read back from the broker (4.x pulls of the stored messages: their
``UNIQ_KEY`` is the 5.x message id), since most clients' receipts do not say, and a receipt's queue is
the one the client addressed, not the one the endpoint chose (it picks, as Apache's proxy does:
``broker/proxy/queue_select.py``). The checks: plain sends spread evenly over the 4 queues, each FIFO
group in the one queue Apache's proxy would choose and in send order, everything received once (FIFO
groups in order), an empty receive long-polls and then says "no message" (no error), no error at
all, and no RPC the endpoint does not serve.

``cached_build`` is how each language's client is installed once into the cache (``PYROCKETMQ_CACHE``):
a file lock, and a marker holding the digest of what was built, written last.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyrocketmq.broker.proxy.queue_select import group_queue
from tests.conformance import maven, probe
from tests.conformance.grpc5 import GrpcCluster, admin, make_topic, read_topic, start_grpc_cluster
from tests.helpers.prereq import missing_prerequisite

COUNT = 40
QUEUES = 4
GROUPS = ("order-0", "order-1", "order-2", "order-5")
"""Four message groups that Apache's proxy (Guava's jump hash) puts in four different queues of 4."""
PER_GROUP = 5
SECONDS = 40.0
"""How long a program may take to receive everything back."""
UNSERVED = "not served (UNIMPLEMENTED)"
"""What the endpoint logs when a client calls an RPC it does not serve (``broker/proxy/server.py``)."""


# -- installing a client once ------------------------------------------------------------------------------
def digest(*parts: Path | str) -> str:
    """A digest of files' contents and strings: what a cached build was made from."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.read_bytes() if isinstance(part, Path) else part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def cached_build(root: Path, stamp: str, build: Callable[[Path], None]) -> Path:
    """``root`` once ``build(root)`` made it for ``stamp``; built at most once across processes."""
    marker = root / ".built"

    def done() -> bool:
        return marker.is_file() and marker.read_text().split("\n", 1)[0] == stamp

    if done():
        return root
    with maven.file_lock(maven.cache_root() / f".{root.name}.lock"):
        if done():
            return root
        marker.unlink(missing_ok=True)
        root.mkdir(parents=True, exist_ok=True)
        build(root)
        marker.write_text(stamp + "\n")
    return root


def tool(name: str, *fallbacks: str) -> str:
    """The path of a toolchain command (PrerequisiteMissing when it is not installed)."""
    found = shutil.which(name) or next((f for f in fallbacks if os.access(f, os.X_OK)), None)
    if found is None:
        raise maven.PrerequisiteMissing(f"`{name}` is not installed (not on PATH)")
    return found


def step(cmd: Sequence[str], *, what: str, env: dict[str, str] | None = None, cwd: Path | None = None,
         timeout: float = 900, fetch: bool = False) -> None:
    """Run one install/build command. A failed download (``fetch``: the registry refused or could not be
    reached) is a missing prerequisite; a failed build of our program is a plain error."""
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise maven.PrerequisiteMissing(f"{what}: `{' '.join(cmd)}` took over {timeout:.0f} s") from exc
    if proc.returncode != 0:
        text = f"{what}: `{' '.join(cmd)}` exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}"
        raise maven.PrerequisiteMissing(text) if fetch else RuntimeError(text)


# -- running a program -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Topics:
    plain: str
    fifo: str
    group: str


def prepare(cluster: GrpcCluster, prefix: str) -> Topics:
    """The two topics (4 queues each) and a FIFO consumer group (its messages are delivered in order)."""
    from pyrocketmq.remoting.client_bodies import SubscriptionGroupConfig
    from pyrocketmq.remoting.code import RequestCode, ResponseCode
    from pyrocketmq.remoting.command import RemotingCommand

    topics = Topics(f"{prefix}Plain", f"{prefix}Fifo", f"G{prefix}")
    make_topic(cluster, topics.plain, QUEUES)
    make_topic(cluster, topics.fifo, QUEUES)
    body = SubscriptionGroupConfig(group_name=topics.group, consume_message_orderly=True).to_json()
    resp = admin(cluster.broker.addr,
                 RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    for topic in (topics.plain, topics.fifo):  # the clients ask for the route first thing
        probe.wait_for_route(cluster.namesrv.addr, topic, timeout=30)
    return topics


def arguments(cluster: GrpcCluster, topics: Topics) -> list[str]:
    return [cluster.endpoint, topics.plain, topics.fifo, topics.group, str(COUNT), ",".join(GROUPS),
            str(PER_GROUP), str(SECONDS)]


def run(cmd: Sequence[str], *, home: Path, timeout: float = 120) -> dict:
    """Run a scenario program (``HOME`` = ``home``: the clients log under ``~/logs``); its last stdout
    line is the JSON document returned."""
    home.mkdir(parents=True, exist_ok=True)
    full_env = dict(os.environ, HOME=str(home))
    full_env.pop("PYTHONPATH", None)
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, env=full_env,
                          start_new_session=True)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines or not lines[-1].startswith("{"):
        raise AssertionError(f"{cmd[0]} failed: exit {proc.returncode}\n--- stderr ---\n{proc.stderr[-4000:]}"
                             f"\n--- stdout ---\n{proc.stdout[-2000:]}")
    return json.loads(lines[-1])


# -- judging it --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Outcome:
    """What a program printed, and where the broker stored each message id: ``(queue, offset, body)``."""

    topics: Topics
    out: dict[str, Any]
    stored: dict[str, tuple[int, int, str]]
    broker_log: str

    def spread(self) -> dict[int, int]:
        """Plain messages per queue."""
        ids = [s["messageId"] for s in self.out["plain"]]
        counts = Counter(self.stored[i][0] for i in ids if i in self.stored)
        return {q: counts.get(q, 0) for q in range(QUEUES)}

    def fifo_queues(self) -> dict[str, list[int]]:
        queues: dict[str, set[int]] = defaultdict(set)
        for s in self.out["fifo"]:
            if s["messageId"] in self.stored:
                queues[s["group"]].add(self.stored[s["messageId"]][0])
        return {g: sorted(q) for g, q in sorted(queues.items())}

    def summary(self) -> str:
        addressed = Counter(s["clientQueue"] for s in self.out["plain"] if "clientQueue" in s)
        told = f" (the client addressed queues {dict(sorted(addressed.items()))})" if addressed else ""
        return (f"{self.out.get('client')}: plain messages per queue {self.spread()}{told}, FIFO group -> "
                f"queue {self.fifo_queues()}, received {len(self.out['received'])} of "
                f"{len(self.out['plain']) + len(self.out['fifo'])}, an empty receive took "
                f"{self.out.get('emptyWait', 0):.1f} s, errors {len(self.out['errors'])}")


def judge(cluster: GrpcCluster, prefix: str, cmd: Sequence[str], *, home: Path) -> Outcome:
    """Run the scenario on ``cluster`` (topics named after ``prefix``) and read back what was stored."""
    topics = prepare(cluster, prefix)
    out = run([*cmd, *arguments(cluster, topics)], home=home, timeout=SECONDS + 80)
    stored = {}
    for topic in (topics.plain, topics.fifo):
        for m in read_topic(cluster.broker.addr, topic, QUEUES):
            stored[m.properties["UNIQ_KEY"]] = (m.queue_id, m.queue_offset, m.body.decode())
    result = Outcome(topics, out, stored, cluster.broker.log_text())
    print(result.summary())  # shown with -s / -rA: the spread each client got
    return result


def outcome_fixture(language: str, command: Callable[[], Sequence[str]]) -> Any:
    """A test module's ``result`` fixture: ``command()`` builds or installs the client (a missing
    toolchain: :func:`~tests.helpers.prereq.missing_prerequisite`), then the scenario runs once
    on a cluster of the module's own."""
    @pytest.fixture(scope="module", name="result")
    def result(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
        try:
            cmd = command()
        except maven.PrerequisiteMissing as exc:
            missing_prerequisite("conformance", str(exc))
        cluster = start_grpc_cluster(tmp_path_factory.mktemp(f"grpc5-{language.lower()}"))
        try:
            yield judge(cluster, language, cmd, home=tmp_path_factory.mktemp(f"{language.lower()}5-home"))
        finally:
            cluster.stop()

    return result


class ClientChecks:
    """The checks of one client's run, as test methods: a test module subclasses this (``Test<Lang>``)
    and provides a ``result`` fixture (an :class:`Outcome`)."""

    def test_every_send_is_stored_once_where_its_receipt_says(self, result: Outcome) -> None:
        out = result.out
        assert out["errors"] == [], (out["errors"], result.summary())
        assert [s["body"] for s in out["plain"]] == [f"p-{i}" for i in range(COUNT)]
        assert [s["body"] for s in out["fifo"]] == [f"{g}#{i}" for i in range(PER_GROUP) for g in GROUPS]
        for s in out["plain"] + out["fifo"]:
            assert s["messageId"] in result.stored, s
            _, offset, body = result.stored[s["messageId"]]
            assert body == s["body"] and s.get("offset", offset) == offset, (s, result.stored[s["messageId"]])
        assert len(result.stored) == COUNT + len(GROUPS) * PER_GROUP

    def test_plain_sends_spread_evenly_over_all_queues(self, result: Outcome) -> None:
        """Round-robin over the write queues, whatever queue the client addressed."""
        spread = result.spread()
        assert sum(spread.values()) == COUNT, result.summary()
        assert all(abs(n - COUNT / QUEUES) <= 1 for n in spread.values()), result.summary()

    def test_each_fifo_group_keeps_the_queue_apache_picks_and_its_order(self, result: Outcome) -> None:
        for group in GROUPS:
            mine = [s for s in result.out["fifo"] if s["group"] == group]
            placed = sorted((result.stored[s["messageId"]][:2], s["body"]) for s in mine)
            assert {q for (q, _), _ in placed} == {group_queue(group, QUEUES)}, (group, placed)
            assert [body for _, body in placed] == [f"{group}#{i}" for i in range(PER_GROUP)], placed

    def test_everything_sent_is_received_once_fifo_groups_in_order(self, result: Outcome) -> None:
        out, topics = result.out, result.topics
        sent = {s["messageId"]: s for s in out["plain"] + out["fifo"]}
        got = [r["messageId"] for r in out["received"]]
        assert sorted(got) == sorted(sent), (result.summary(), sorted(set(sent) - set(got))[:5])
        for r in out["received"]:
            s = sent[r["messageId"]]
            topic = topics.fifo if s.get("group") else topics.plain
            assert (r["topic"], r["body"], r["group"]) == (topic, s["body"], s.get("group", "")), r
        for group in GROUPS:
            order = [r["body"] for r in out["received"] if r["group"] == group]
            assert order == [f"{group}#{i}" for i in range(PER_GROUP)], (group, order)

    def test_an_empty_receive_long_polls_then_says_no_message(self, result: Outcome) -> None:
        """The last receive finds nothing: it waits (the clients ask 3 s; Go's asks nothing and waits
        as against Apache's proxy), then ends with "no message", not an error nor a time-out."""
        out = result.out
        assert [e for e in out["errors"] if e.startswith("receive")] == [], out["errors"]
        assert 1.0 <= out["emptyWait"] <= SECONDS, out["emptyWait"]

    def test_every_rpc_the_client_called_is_served(self, result: Outcome) -> None:
        unserved = [line for line in result.broker_log.splitlines() if UNSERVED in line]
        assert unserved == [], unserved
