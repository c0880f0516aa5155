"""``deliveryGuarantee=exactlyOnce``: a streaming driver killed around its batch commit, and a write
task killed mid-write, still leave every input row exactly once in the output topic; the half
messages of the lost attempts are settled by the broker's check-back, answered from the checkpoint.

The broker here checks unresolved half messages every 300 ms once they are 1 s old (RocketMQ's
defaults are 60 s and 6 s) and up to 1000 times, so orphans are asked about while the test runs.
The driver is a subprocess (``eos_job.py``) the test kills at a pause hook
(:mod:`pyrocketmq.spark.transactional_sink`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from pyrocketmq.client import Message, TransactionProducer, TransactionState, shared_loop
from pyrocketmq.remoting.message import MessageExt, Prop
from pyrocketmq.spark.exactly_once import ATTEMPT_PROP, BATCH_PROP, QUERY_PROP, SinkCheckpoint
from pyrocketmq.spark.options import SinkOptions

from .conftest import REPO_ROOT, Rmq, spark_env, start_cluster

ROWS = 40


@pytest.fixture(scope="module")
def txrmq(tmp_path_factory):
    cluster = start_cluster(tmp_path_factory.mktemp("txrmq"), transactionCheckInterval=300,
                            transactionTimeOut=1000, transactionCheckMax=1000)
    try:
        yield Rmq(cluster)
    finally:
        cluster.stop()


def _job(rmq: Rmq, source: str, sink: str, ckpt: Path, mode: str, log, **env: str) -> subprocess.Popen:
    args = [sys.executable, str(Path(__file__).with_name("eos_job.py")), rmq.ns, source, sink, str(ckpt),
            str(ROWS // 2), mode]
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=spark_env(**env), cwd=REPO_ROOT,
                            start_new_session=True)


def _topics(rmq: Rmq, name: str) -> tuple[str, str, list[str]]:
    source, sink = f"{name}In", f"{name}Out"
    rmq.create_topic(source, queues=2)
    rmq.create_topic(sink, queues=2)
    bodies = [f"{name}-{i}" for i in range(ROWS)]
    rmq.produce(source, [b.encode() for b in bodies])
    return source, sink, bodies


def _output(spark, rmq: Rmq, sink: str) -> Counter:
    rows = spark.read.format("pyrocketmq").option("nameServer", rmq.ns).option("topic", sink).load().collect()
    return Counter(bytes(r.body).decode() for r in rows)


def _finish(job: subprocess.Popen, log_path: Path, timeout: float = 300) -> None:
    try:
        rc = job.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        tail = log_path.read_text(errors="replace")[-3000:]
        raise AssertionError("the job did not finish:\n" + tail) from None
    assert rc == 0, log_path.read_text(errors="replace")[-3000:]


class CheckBackProbe:
    """A producer of the sink's group in the test process, answering check-backs as the sink does
    (from the checkpoint) and recording the answers."""

    def __init__(self, rmq: Rmq, sink: str, ckpt: Path) -> None:
        opts = SinkOptions.from_options({"nameServer": rmq.ns, "topic": sink,
                                         "deliveryGuarantee": "exactlyOnce", "checkpointLocation": str(ckpt)})
        self.checkpoint = SinkCheckpoint(str(ckpt))
        self.answers: list[tuple[str, str, TransactionState, float]] = []
        self._lock = threading.Lock()
        self.producer = TransactionProducer(opts.producer_group, rmq.ns, check_local_transaction=self.check)
        self.sink = sink

    def check(self, msg: MessageExt) -> TransactionState:
        msg_id = msg.properties.get(Prop.UNIQ_KEY) or msg.msg_id
        state = self.checkpoint.answer(msg.properties, msg_id)
        with self._lock:
            self.answers.append((msg_id, msg.properties.get(ATTEMPT_PROP, ""), state, time.monotonic()))
        return state

    def __enter__(self) -> CheckBackProbe:
        shared_loop().run(self.producer.start())
        shared_loop().run(self.producer.instance.update_route(self.sink))  # heartbeat the broker now
        return self

    def __exit__(self, *exc: object) -> None:
        shared_loop().run(self.producer.shutdown())

    def reachable(self, timeout: float = 30.0) -> None:
        """Leave a half message of a superseded attempt open and wait for its check-back (so an
        empty :meth:`settled` means nothing was left open, not that no check could reach us)."""
        props = {QUERY_PROP: self.checkpoint.query_id() or "", BATCH_PROP: "0", ATTEMPT_PROP: "probe"}
        half = shared_loop().run(self.producer.send_half(Message(self.sink, b"probe", properties=props)))
        deadline = time.monotonic() + timeout
        while not any(a[0] == half.msg_id and a[2] is TransactionState.ROLLBACK for a in self.answers):
            assert time.monotonic() < deadline, "no check-back reached the probe"
            time.sleep(0.2)
        with self._lock:
            self.answers = [a for a in self.answers if a[0] != half.msg_id]

    def settled(self, quiet: float = 3.0, timeout: float = 60.0) -> list[TransactionState]:
        """Wait until no check-back came for ``quiet`` seconds; the answers given meanwhile."""
        self.reachable()
        start = deadline = time.monotonic()  # the probe's own check came just now
        deadline += timeout
        while time.monotonic() < deadline:
            with self._lock:
                last = max((a[3] for a in self.answers), default=start)
            if time.monotonic() - last >= quiet:
                return [a[2] for a in self.answers]
            time.sleep(0.2)
        raise AssertionError(f"check-backs did not stop: {self.answers[-5:]}")


@pytest.mark.parametrize("stage", ["before-commit", "after-commit"])
def test_a_driver_killed_around_the_commit_leaves_every_row_once(spark, txrmq, tmp_path, stage):
    name = "Eos" + stage.replace("-", "").title().replace("Commit", "C")
    source, sink, bodies = _topics(txrmq, name)
    ckpt, marker, log_path = tmp_path / "ckpt", tmp_path / "paused", tmp_path / "job.log"
    with open(log_path, "ab") as log:
        job = _job(txrmq, source, sink, ckpt, "forever", log,
                   PYROCKETMQ_SPARK_EOS_PAUSE=f"{stage}:0:{marker}")
        try:
            deadline = time.monotonic() + 300
            while not marker.exists():
                assert job.poll() is None, log_path.read_text(errors="replace")[-3000:]
                assert time.monotonic() < deadline, "batch 0 never reached its commit"
                time.sleep(0.1)
        finally:
            os.killpg(job.pid, signal.SIGKILL)  # the driver dies inside batch 0's commit
            job.wait(30)
        assert not (ckpt / "commits" / "0").exists()
        if stage == "before-commit":  # 20 half messages, none ended: nothing visible yet
            assert sum(_output(spark, txrmq, sink).values()) == 0
        else:  # batch 0 committed, but Spark does not know: it runs batch 0 again
            assert sum(_output(spark, txrmq, sink).values()) == ROWS // 2
        _finish(_job(txrmq, source, sink, ckpt, "available-now", log), log_path)
    out = _output(spark, txrmq, sink)
    assert sorted(out) == sorted(bodies) and set(out.values()) == {1}, out
    records = SinkCheckpoint(str(ckpt))
    assert records.record(0) is not None and records.record(1) is not None
    # The query is gone: the broker's remaining check-backs reach the probe, which rolls back
    # whatever is still open (the killed run's or the replay's attempts), and then they stop.
    with CheckBackProbe(txrmq, sink, ckpt) as probe:
        answers = probe.settled()
    assert set(answers) <= {TransactionState.ROLLBACK}, answers
    assert _output(spark, txrmq, sink) == out


def test_a_write_task_killed_mid_write_is_replaced_not_added(spark, txrmq, tmp_path):
    source, sink, bodies = _topics(txrmq, "EosTask")
    ckpt, log_path = tmp_path / "ckpt", tmp_path / "job.log"
    with open(log_path, "ab") as log:
        # partition 0's first attempt of batch 0 sends 5 half messages, then its worker exits
        _finish(_job(txrmq, source, sink, ckpt, "available-now", log,
                     PYROCKETMQ_SPARK_EOS_CRASH_TASK=f"0:5:{tmp_path / 'crashed'}"), log_path)
    assert (tmp_path / "crashed").exists(), "the write task was not killed"
    out = _output(spark, txrmq, sink)
    assert sorted(out) == sorted(bodies) and set(out.values()) == {1}, out
    with CheckBackProbe(txrmq, sink, ckpt) as probe:
        answers = probe.settled()
    assert set(answers) <= {TransactionState.ROLLBACK}, answers
    assert _output(spark, txrmq, sink) == out
