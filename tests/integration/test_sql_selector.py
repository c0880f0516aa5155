"""SQL92 selectors from the Python clients on real processes: a pull consumer and a push consumer
given ``MessageSelector.by_sql`` get exactly the messages it selects; a selector the broker cannot
parse, or a broker without ``enablePropertyFilter``, fails the push consumer's start with the
broker's answer (as the Java client's start fails)."""

from __future__ import annotations

import asyncio

import pytest

from pyrocketmq.client import (
    ClientSettings,
    Message,
    MessageSelector,
    Producer,
    PullConsumer,
    PullConsumerSettings,
    PushConsumer,
    PushConsumerSettings,
)
from pyrocketmq.client.errors import MQBrokerError
from pyrocketmq.remoting.code import ResponseCode

from .procs import start_broker
from .push import Collector, create_topic, wait_until

TOPIC = "SqlClients"
N = 60
SELECTOR = "price BETWEEN 3 AND 6 AND (region = 'eu' OR TAGS = 'vip')"


def selected(i: int) -> bool:
    return 3 <= i % 10 <= 6 and (i % 3 == 0 or i % 4 == 0)


@pytest.fixture
def sql_broker(tmp_path, namesrv):
    proc = start_broker(tmp_path, namesrv.addr, "broker-sql", enablePropertyFilter="true")
    yield proc
    proc.stop()


async def _produce(namesrv: str, broker: str) -> None:
    await create_topic(namesrv, broker, TOPIC, queues=4)
    async with Producer("sql_pg", namesrv) as producer:
        for i in range(N):
            props = {"price": str(i % 10), **({"region": "eu"} if i % 3 == 0 else {})}
            await producer.send(
                Message(TOPIC, f"s{i}".encode(), tags="vip" if i % 4 == 0 else None, properties=props)
            )


def test_pull_and_push_consumers_get_what_the_selector_selects(namesrv, sql_broker):
    want = [f"s{i}" for i in range(N) if selected(i)]

    async def go():
        await _produce(namesrv.addr, sql_broker.addr)
        got: list[str] = []
        settings = PullConsumerSettings(expression=MessageSelector.by_sql(SELECTOR), consume_from="first")
        async with PullConsumer("sql_pull", namesrv.addr, settings) as pull:
            await pull.assign(await pull.fetch_queues(TOPIC))
            await wait_until(lambda: _drain(pull, got), 30, "the pull consumer's selection")
        collector = Collector("c")
        push = PushConsumer("sql_push", namesrv.addr, PushConsumerSettings(consume_from="first"),
                            ClientSettings(instance_name="sqlpush", client_ip="127.0.0.1"))
        push.subscribe(TOPIC, MessageSelector.by_sql(SELECTOR))
        push.register_listener(collector)
        await push.start()
        try:
            await wait_until(
                lambda: len(collector.messages) >= len(want), 30, "the push consumer's selection"
            )
            await asyncio.sleep(1.0)  # nothing more arrives
        finally:
            await push.shutdown()
        return sorted(got, key=lambda b: int(b[1:])), sorted(collector.bodies(), key=lambda b: int(b[1:]))

    pulled, pushed = asyncio.run(go())
    assert pulled == want and pushed == want and 0 < len(want) < N


async def _drain(pull: PullConsumer, got: list[str]) -> bool:
    got.extend(m.body.decode() for m in await pull.poll(timeout=0.5))
    return len(got) >= sum(selected(i) for i in range(N))


@pytest.mark.parametrize(("enabled", "selector", "code", "words"), [
    (True, "price >", ResponseCode.SUBSCRIPTION_PARSE_FAILED, "price >"),
    (False, "price > 1", ResponseCode.SYSTEM_ERROR, "does not support consumer to filter message by SQL92"),
])  # fmt: skip
def test_a_selector_the_broker_cannot_serve_fails_start(tmp_path, namesrv, enabled, selector, code, words):
    broker = start_broker(
        tmp_path, namesrv.addr, "broker-x", **({"enablePropertyFilter": "true"} if enabled else {})
    )

    async def go():
        await create_topic(namesrv.addr, broker.addr, TOPIC, queues=2)
        push = PushConsumer("sql_bad", namesrv.addr, PushConsumerSettings(consume_from="first"),
                            ClientSettings(instance_name="sqlbad", client_ip="127.0.0.1"))
        push.subscribe(TOPIC, MessageSelector.by_sql(selector))
        push.register_listener(Collector("c"))
        with pytest.raises(MQBrokerError) as e:
            await push.start()
        return e.value

    try:
        err = asyncio.run(go())
    finally:
        broker.stop()
    assert err.code == code and words in str(err), err


def test_the_cli_consumes_with_a_sql_selector(namesrv, sql_broker):
    import subprocess
    import sys

    asyncio.run(_produce(namesrv.addr, sql_broker.addr))
    want = sum(selected(i) for i in range(N))
    out = subprocess.run([sys.executable, "-m", "pyrocketmq", "consume", "-n", namesrv.addr, "-t", TOPIC,
                          "-g", "sql_cli", "--from-beginning", "--sql", SELECTOR, "--timeout", "5"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    bodies = sorted(
        int(line.rsplit("body=s", 1)[-1]) for line in out.stdout.splitlines() if line.startswith("[")
    )
    assert bodies == [i for i in range(N) if selected(i)] and len(bodies) == want, out.stdout[-2000:]


def test_the_spark_source_reads_with_a_sql_selector(namesrv, sql_broker):
    from pyrocketmq.spark import broker_client
    from pyrocketmq.spark.options import SourceOptions
    from pyrocketmq.spark.planning import QueueRange

    asyncio.run(_produce(namesrv.addr, sql_broker.addr))
    opts = SourceOptions.from_options(
        {"nameServer": namesrv.addr, "topic": TOPIC, "sqlSelector": SELECTOR}, streaming=False
    )
    from pyrocketmq.client import Admin
    from pyrocketmq.remoting.body import MessageQueue

    async def ends():
        async with Admin(namesrv.addr) as admin:
            return [await admin.max_offset(MessageQueue(TOPIC, "broker-sql", q)) for q in range(4)]

    got = []
    for q, end in enumerate(asyncio.run(ends())):
        got += [
            m.body.decode()
            for m in broker_client.read_range(opts, QueueRange(TOPIC, "broker-sql", q, 0, end))
        ]
    assert sorted(got, key=lambda b: int(b[1:])) == [f"s{i}" for i in range(N) if selected(i)]
    with pytest.raises(Exception, match="not both"):
        SourceOptions.from_options(
            {"nameServer": namesrv.addr, "topic": TOPIC, "sqlSelector": "a > 1", "subExpression": "A"}
        )
