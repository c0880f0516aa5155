"""Topic message types with real processes, applied the way the operator applies a Topic resource
(``apply_topic``): the broker keeps the ``message.type`` attribute across a restart and refuses
messages of another type; a changed spec re-types the topic on every master."""

from __future__ import annotations

import asyncio

import pytest

from pyrocketmq.client import Admin, Message, Producer, TransactionProducer, TransactionState
from pyrocketmq.client.errors import MQBrokerError
from pyrocketmq.operator.model import TopicModel
from pyrocketmq.operator.rocketmq import apply_topic
from pyrocketmq.remoting.code import ResponseCode

from .procs import start_broker
from .push import wait_until


def topic_body(topic: str, message_type: str) -> dict:
    return {"apiVersion": "pyrocketmq.io/v1alpha1", "kind": "Topic",
            "metadata": {"name": topic.lower(), "namespace": "prod", "uid": "u1", "generation": 1},
            "spec": {"clusterRef": {"name": "orders"}, "topicName": topic, "readQueueNums": 2,
                     "writeQueueNums": 2, "messageType": message_type}}  # fmt: skip


async def _types(admin: Admin, addr: str) -> dict[str, str | None]:
    return {
        t: c.message_type
        for t, c in (await admin.broker_topic_configs(addr)).items()
        if t.startswith("Typed")
    }


async def _send(namesrv: str, topic: str, msg: Message) -> str:
    try:
        async with Producer("typed_pg", namesrv) as p:
            await p.send(msg)
        return "sent"
    except MQBrokerError as e:
        return f"{e.code}: {e}"


def test_the_broker_refuses_messages_of_another_type(tmp_path, namesrv):
    broker = start_broker(tmp_path, namesrv.addr)

    async def apply(topic: str, kind: str, applied: str | None = None) -> None:
        async with Admin(namesrv.addr) as admin:
            await apply_topic(
                admin, TopicModel.from_body(topic_body(topic, kind)), "DefaultCluster", (), applied
            )
            await wait_until(lambda: _routed(admin, topic), 30, f"{topic} routed")

    async def go():
        async with Admin(namesrv.addr) as admin:  # the operator retries until the group has registered
            await wait_until(lambda: _registered(admin), 30, "broker-a registered with the name server")
        for topic, kind in (("TypedTx", "TRANSACTION"), ("TypedDelay", "DELAY"), ("TypedFifo", "FIFO"),
                            ("TypedPlain", "NORMAL")):
            await apply(topic, kind)
        outcomes = {
            "plain to tx": await _send(namesrv.addr, "TypedTx", Message("TypedTx", b"x")),
            "plain to delay": await _send(namesrv.addr, "TypedDelay", Message("TypedDelay", b"x")),
            "delay to delay": await _send(
                namesrv.addr, "TypedDelay", Message("TypedDelay", b"x", delay_level=1)
            ),
            "plain to fifo": await _send(namesrv.addr, "TypedFifo", Message("TypedFifo", b"x")),
            "delay to plain": await _send(
                namesrv.addr, "TypedPlain", Message("TypedPlain", b"x", delay_level=1)
            ),
        }
        async with TransactionProducer("typed_tx_pg", namesrv.addr) as tp:
            tx = await tp.send_in_transaction(Message("TypedTx", b"t"), lambda m, a: TransactionState.COMMIT)
            with pytest.raises(MQBrokerError) as refused:
                await tp.send_in_transaction(
                    Message("TypedPlain", b"t"), lambda m, a: TransactionState.COMMIT
                )
        await apply("TypedPlain", "DELAY", applied="NORMAL")  # the spec changed: every master re-typed
        async with Admin(namesrv.addr) as admin:
            return outcomes, tx, refused.value, await _types(admin, broker.addr)

    try:
        outcomes, tx, refused, types = asyncio.run(go())
        broker.stop()
        broker.start()  # the attribute is kept in topics.json

        async def after_restart():
            async with Admin(namesrv.addr) as admin:
                return await _types(admin, broker.addr)

        kept = asyncio.run(after_restart())
    finally:
        broker.stop()
    illegal = f"{int(ResponseCode.MESSAGE_ILLEGAL)}: "
    assert (
        outcomes["plain to tx"].startswith(illegal)
        and "takes TRANSACTION messages, not NORMAL" in outcomes["plain to tx"]
    )
    assert outcomes["plain to delay"].startswith(illegal)
    assert outcomes["delay to delay"] == "sent" and outcomes["plain to fifo"] == "sent"
    assert outcomes["delay to plain"].startswith(illegal)
    assert tx.status.name == "SEND_OK" and refused.code == ResponseCode.MESSAGE_ILLEGAL
    assert types == {
        "TypedTx": "TRANSACTION",
        "TypedDelay": "DELAY",
        "TypedFifo": "FIFO",
        "TypedPlain": "DELAY",
    }
    assert kept == types


async def _registered(admin: Admin) -> bool:
    return bool((await admin.cluster_info()).cluster_addr_table.get("DefaultCluster"))


async def _routed(admin: Admin, topic: str) -> bool:
    try:
        return bool((await admin.topic_route(topic)).queue_datas)
    except MQBrokerError:
        return False


def test_the_cli_sets_the_message_type(namesrv, broker):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "pyrocketmq", "admin", "updateTopic", "-n", namesrv.addr,
                          "-b", broker.addr, "-t", "TypedCli", "-a", "+message.type=TRANSACTION"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr

    async def go():
        async with Admin(namesrv.addr) as admin:
            await wait_until(lambda: _routed(admin, "TypedCli"), 30, "TypedCli routed")
            return (await admin.broker_topic_configs(broker.addr))["TypedCli"].message_type, \
                await _send(namesrv.addr, "TypedCli", Message("TypedCli", b"x"))

    kind, sent = asyncio.run(go())
    assert kind == "TRANSACTION" and sent.startswith(f"{int(ResponseCode.MESSAGE_ILLEGAL)}: ")
