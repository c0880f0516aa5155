"""Message traces in Apache's format, both ways: the unmodified Java producer with message trace on
writes to our broker's RMQ_SYS_TRACE_TOPIC and our ``queryMsgTraceById`` reads its Pub records; our
producer with ``trace=True`` writes to an Apache broker and Apache's ``mqadmin queryMsgTraceById``
reads ours."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from pyrocketmq.client import Message, Producer, ProducerSettings
from tests.conformance.apache import run_mqadmin, start_apache_cluster
from tests.integration.procs import start_broker, start_namesrv

pytestmark = pytest.mark.conformance


def _pub_rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.startswith("Pub ")]


def test_java_traces_read_by_our_cli(tmp_path, java):
    ns = start_namesrv(tmp_path)
    broker = start_broker(tmp_path, ns.addr, traceTopicEnable="true")
    try:
        sent = java.run("ProducerScenario", [ns.addr, "TracedJava", 3, "sync", "pg_traced_java"], timeout=120,
                        jvm_props={"trace.enable": "true"}).json()  # fmt: skip
        assert sent["errors"] == 0
        msg_id = sent["sent"][1]["msgId"]
        deadline, out = time.monotonic() + 90, None
        while time.monotonic() < deadline:  # the Java client sends traces asynchronously
            out = subprocess.run([sys.executable, "-m", "pyrocketmq", "admin", "queryMsgTraceById",
                                  "-n", ns.addr, "-i", msg_id],
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
            if _pub_rows(out.stdout):
                break
            time.sleep(1)
    finally:
        broker.stop()
        ns.stop()
    assert out is not None and out.returncode == 0, out
    [row] = _pub_rows(out.stdout)
    assert row[1] == "pg_traced_java" and row[-1] == "success", out.stdout


def test_our_traces_read_by_apache_mqadmin(tmp_path):
    apache = start_apache_cluster(tmp_path / "apache", broker_overrides={"traceTopicEnable": "true"})
    try:
        async def send():
            async with Producer("pg_traced_py", apache.namesrv_addr, ProducerSettings(trace=True)) as p:
                return [await p.send(Message("TracedPy", f"t{i}".encode(), keys=["k"])) for i in range(3)]

        results = asyncio.run(send())
        asyncio.run(_consume_traced(apache.namesrv_addr))
        msg_id = results[2].msg_id
        deadline, rows, subs, text = time.monotonic() + 30, [], [], ""
        while time.monotonic() < deadline and not (rows and subs):
            out = run_mqadmin(
                tmp_path / "mqadmin-home", ["queryMsgTraceById", "-n", apache.namesrv_addr, "-i", msg_id]
            )
            text = out.stdout + out.stderr
            rows = _pub_rows(out.stdout)
            subs = [line.split() for line in out.stdout.splitlines() if line.startswith("Sub ")]
            if not (rows and subs):
                time.sleep(1)
    finally:
        apache.stop()
    assert len(rows) == 1 and rows[0][1] == "pg_traced_py" and rows[0][-1] == "success", text
    assert len(subs) == 1 and subs[0][1] == "cg_traced_py" and subs[0][-1] == "success", text


async def _consume_traced(namesrv: str) -> None:
    from pyrocketmq.client import ClientSettings, PushConsumer, PushConsumerSettings
    from tests.integration.push import Collector, wait_until

    col = Collector("c")
    c = PushConsumer("cg_traced_py", namesrv, PushConsumerSettings(consume_from="first", trace=True),
                     ClientSettings(instance_name="traced", client_ip="127.0.0.1"))
    c.subscribe("TracedPy", "*")
    c.register_listener(col)
    await c.start()
    try:
        await wait_until(lambda: len(col.messages) >= 3, 60, "the traced messages consumed")
    finally:
        await c.shutdown()
