"""Finding stored messages from the Python Admin API and the CLI's mqadmin verbs (queryMsgByKey,
queryMsgByUniqueKey, queryMsgByOffset, printMsg, queryMsgById) against real processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from pyrocketmq.client import Admin, Message, Producer
from pyrocketmq.client.errors import MQBrokerError
from pyrocketmq.remoting.body import MessageQueue

from .push import create_topic, wait_until

TOPIC = "Lookups"


@pytest.fixture
def stored(namesrv, broker):
    async def go():
        await create_topic(namesrv.addr, broker.addr, TOPIC, queues=2)
        async with Producer("lookup_pg", namesrv.addr) as p:
            sent = []
            for i in range(12):
                keys = ["order-7"] if i % 4 == 0 else [f"item-{i}"]
                tags = "even" if i % 2 == 0 else "odd"
                sent.append(await p.send(Message(TOPIC, f"body-{i}".encode(), tags=tags, keys=keys)))
            return sent

    return asyncio.run(go())


def cli(namesrv: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyrocketmq", "admin", *args, "-n", namesrv],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_admin_api_finds_messages(namesrv, stored):
    async def go():
        async with Admin(namesrv.addr) as admin:
            by_key = await admin.query_message_by_key(TOPIC, "order-7")
            none = await admin.query_message_by_key(TOPIC, "order-7", 0, int(time.time() * 1000) - 3_600_000)
            by_uniq = await admin.query_message_by_unique_key(TOPIC, stored[5].msg_id)
            at = await admin.message_at(stored[3].message_queue, stored[3].queue_offset)
            with pytest.raises(MQBrokerError):
                await admin.message_at(MessageQueue(TOPIC, "broker-a", 0), 10_000)
            return by_key, none, by_uniq, at

    by_key, none, by_uniq, at = asyncio.run(go())
    assert sorted(m.body for m in by_key) == [b"body-0", b"body-4", b"body-8"] and none == []
    assert [m.body for m in by_uniq] == [b"body-5"] and at.body == b"body-3"


def test_the_mqadmin_verbs(namesrv, stored):
    out = cli(namesrv.addr, "queryMsgByKey", "-t", TOPIC, "-k", "order-7")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["#Message", "ID", "#QID", "#Offset"] and len(lines) == 4
    assert {line.split()[0] for line in lines[1:]} == {stored[i].msg_id for i in (0, 4, 8)}

    out = cli(namesrv.addr, "queryMsgByUniqueKey", "-t", TOPIC, "-i", stored[6].msg_id)
    assert out.returncode == 0 and "body-6" in out.stdout and "Keys:                [item-6]" in out.stdout, (
        out
    )

    r = stored[9]
    out = cli(namesrv.addr, "queryMsgByOffset", "-t", TOPIC, "-b", r.message_queue.broker_name,
              "-i", str(r.message_queue.queue_id), "-o", str(r.queue_offset))  # fmt: skip
    assert out.returncode == 0 and "Message Body:        body-9" in out.stdout, out

    out = cli(namesrv.addr, "printMsg", "-t", TOPIC, "-s", "even")
    assert out.returncode == 0, out.stderr
    printed = sorted(
        line.rsplit("BODY: ", 1)[1] for line in out.stdout.splitlines() if line.startswith("MSGID: ")
    )
    assert printed == sorted(f"body-{i}" for i in range(0, 12, 2))
    assert out.stdout.count("minOffset=") == 2

    out = cli(namesrv.addr, "queryMsgById", "-i", r.offset_msg_id)
    assert out.returncode == 0 and "body-9" in out.stdout, out
    out = cli(namesrv.addr, "queryMsgByKey", "-t", TOPIC, "-k", "order-7", "-c", "0")
    assert out.returncode != 0 and "maxNum" in out.stderr and "Traceback" not in out.stderr
    out = cli(namesrv.addr, "printMsg", "-t", TOPIC, "-c", "no-such-charset")
    assert out.returncode != 0 and "not a charset" in out.stderr and "Traceback" not in out.stderr


def test_producer_traces_and_query_msg_trace_by_id(tmp_path, namesrv):
    from pyrocketmq.client import ProducerSettings

    from .procs import start_broker

    broker = start_broker(tmp_path, namesrv.addr, "broker-t", traceTopicEnable="true")
    try:
        async def go():
            async with Producer("traced_pg", namesrv.addr, ProducerSettings(trace=True)) as p:
                return await p.send(Message("Traced", b"hello", tags="t1", keys=["order-1"]))

        result = asyncio.run(go())  # shutdown flushes the traces still queued

        async def consume():
            from pyrocketmq.client import ClientSettings, PushConsumer, PushConsumerSettings

            from .push import Collector

            col = Collector("c")
            c = PushConsumer(
                "traced_cg",
                namesrv.addr,
                PushConsumerSettings(consume_from="first", trace=True),
                ClientSettings(instance_name="traced", client_ip="127.0.0.1"),
            )
            c.subscribe("Traced", "*")
            c.register_listener(col)
            await c.start()
            try:
                await wait_until(lambda: len(col.messages) >= 1, 30, "the traced message consumed")
            finally:
                await c.shutdown()

        asyncio.run(consume())
        out = cli(namesrv.addr, "queryMsgTraceById", "-i", result.msg_id)
    finally:
        broker.stop()
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith("Pub ")]
    assert len(rows) == 1 and rows[0][1] == "traced_pg" and rows[0][-1] == "success", out.stdout
    subs = [line.split() for line in out.stdout.splitlines() if line.startswith("Sub ")]
    assert len(subs) == 1 and subs[0][1] == "traced_cg" and subs[0][-1] == "success", out.stdout


def test_transactions_are_traced(tmp_path, namesrv):
    from pyrocketmq.client import ProducerSettings, TransactionProducer, TransactionState
    from pyrocketmq.client.trace import decode_traces

    from .procs import start_broker

    broker = start_broker(tmp_path, namesrv.addr, "broker-t", traceTopicEnable="true")
    try:
        async def go():
            async with TransactionProducer("traced_tx", namesrv.addr, ProducerSettings(trace=True)) as p:
                result = await p.send_in_transaction(
                    Message("TracedTx", b"tx"), lambda m, a: TransactionState.COMMIT
                )
            async with Admin(namesrv.addr) as admin:
                found = await admin.query_message_by_key("RMQ_SYS_TRACE_TOPIC", result.msg_id)
            return result, [
                r for m in found for r in decode_traces(m.body.decode()) if r.msg_id == result.msg_id
            ]

        result, records = asyncio.run(go())
    finally:
        broker.stop()
    assert sorted(r.kind for r in records) == ["EndTransaction", "Pub"] and all(
        r.group == "traced_tx" for r in records
    )

