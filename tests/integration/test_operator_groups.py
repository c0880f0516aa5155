"""A ConsumerGroup resource's broker-side effects with real processes, applied the way the operator
applies them: ``orderly`` recorded in the group config (consumeMessageOrderly), and
``spec.resetOffset`` moving the group's offsets on every master — with a push consumer online, which
is told to pull from there, as mqadmin resetOffsetByTime does."""

from __future__ import annotations

import asyncio

from pyrocketmq.client import Admin, Message, Producer
from pyrocketmq.operator.model import ConsumerGroupModel
from pyrocketmq.operator.rocketmq import apply_group, reset_group_offsets
from pyrocketmq.remoting.body import MessageQueue

from .push import Collector, consumer, create_topic, wait_until

TOPIC = "ResetTopic"
GROUP = "GID_RESET"


def group_body(**spec) -> dict:
    return {"apiVersion": "pyrocketmq.io/v1alpha1", "kind": "ConsumerGroup",
            "metadata": {"name": "reset", "namespace": "prod", "uid": "u1", "generation": 1},
            "spec": {"clusterRef": {"name": "orders"}, "groupName": GROUP, "orderly": True,
                     **spec}}  # fmt: skip


def test_orderly_is_recorded_and_a_reset_rewinds_an_online_group(namesrv, broker):
    async def go():
        await create_topic(namesrv.addr, broker.addr, TOPIC, queues=2)
        async with Admin(namesrv.addr) as admin:
            await apply_group(admin, ConsumerGroupModel.from_body(group_body()), "DefaultCluster")
            orderly = (await admin.broker_subscription_groups(broker.addr))[GROUP].consume_message_orderly
        async with Producer("reset_pg", namesrv.addr) as p:
            for i in range(20):
                await p.send(Message(TOPIC, f"r{i}".encode()))
        col = Collector("c")
        c = consumer(namesrv.addr, GROUP, "reset-c", TOPIC, col)
        await c.start()
        try:
            await wait_until(lambda: len(col.messages) >= 20, 30, "20 consumed")
            await c.persist_offsets(sync=True)
            model = ConsumerGroupModel.from_body(
                group_body(resetOffset={"id": "r1", "topic": TOPIC, "to": "earliest"})
            )
            async with Admin(namesrv.addr) as admin:
                queues = (await reset_group_offsets(admin, GROUP, model.reset_offset, None, "now"))[0][
                    "queues"
                ]
            await wait_until(lambda: len(col.messages) >= 40, 30, "everything consumed again after the reset")
        finally:
            await c.shutdown()
        model = ConsumerGroupModel.from_body(
            group_body(resetOffset={"id": "r2", "topic": TOPIC, "to": "latest"})
        )
        async with Admin(namesrv.addr) as admin:  # offline now: the offsets are stored directly
            latest = (await reset_group_offsets(admin, GROUP, model.reset_offset, None, "now"))[0]["queues"]
            stored = {q: await admin.instance.query_consumer_offset(GROUP, MessageQueue(TOPIC, "broker-a", q))
                      for q in (0, 1)}  # fmt: skip
        return orderly, queues, col, latest, stored

    orderly, queues, col, latest, stored = asyncio.run(go())
    assert orderly is True
    assert sorted((q["queueId"], q["offset"]) for q in queues) == [(0, 0), (1, 0)]
    assert sorted(col.bodies()) == sorted([f"r{i}" for i in range(20)] * 2)
    assert {q["queueId"]: q["offset"] for q in latest} == stored and sum(stored.values()) == 20
