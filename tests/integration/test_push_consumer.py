"""The push consumer on real processes: clustering with members coming and going, broadcasting with
local offsets across a restart, and a consumer killed with SIGKILL.

Assertions are on content (every message consumed, allocations equal to the strategy's answer);
the waits only bound the test.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import orjson
import pytest

from pyrocketmq.client import Admin, PushConsumerSettings, RebalanceSettings
from pyrocketmq.client.allocate import allocate_averagely
from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient

from .push import Collector, Steady, consumer, create_topic, wait_until

TOPIC = "PushTopic"
WAIT = 60.0


def expected_split(consumers, topic: str, queues: int = 8) -> dict[str, list[MessageQueue]]:
    qs = [MessageQueue(topic, "broker-a", i) for i in range(queues)]
    ids = sorted(c.instance.client_id for c in consumers)
    return {cid: allocate_averagely("g", cid, qs, ids) for cid in ids}


def matches_strategy(consumers, topic: str) -> bool:
    want = expected_split(consumers, topic)
    return all(
        [mq for mq in c.assignment() if mq.topic == topic] == want[c.instance.client_id] for c in consumers
    )


def test_clustering_two_three_two_consumers_under_a_steady_producer(namesrv, broker):
    group = "cg_cluster"

    async def run():
        await create_topic(namesrv.addr, broker.addr, TOPIC)
        cols = [Collector(f"c{i}") for i in range(3)]
        c0, c1, c2 = (consumer(namesrv.addr, group, f"c{i}", TOPIC, cols[i]) for i in range(3))
        steady = await Steady(namesrv.addr, TOPIC).start()
        try:
            await c0.start()
            await c1.start()
            await wait_until(
                lambda: matches_strategy([c0, c1], TOPIC), WAIT, "2 consumers split 8 queues 4/4"
            )
            await c2.start()
            await wait_until(
                lambda: matches_strategy([c0, c1, c2], TOPIC), WAIT, "3 consumers split 8 queues 3/3/2"
            )
            await wait_until(lambda: bool(cols[2].messages), WAIT, "the third consumer gets messages")
            await c2.shutdown()
            await wait_until(lambda: matches_strategy([c0, c1], TOPIC), WAIT, "back to 2 consumers")
            await asyncio.sleep(1.0)
            await steady.stop()
            sent = set(steady.sent)
            await wait_until(
                lambda: sent <= {b for col in cols for b in col.bodies()}, WAIT, "every message consumed"
            )
        finally:
            await steady.stop()
            for c in (c0, c1, c2):
                await c.shutdown()
        await wait_until(
            lambda: not [t for t in threading.enumerate() if t.name.startswith("pyrocketmq-consume")],
            WAIT,
            "the consumers' worker threads end after shutdown",
        )
        got = [b for col in cols for b in col.bodies()]
        assert set(got) == sent
        assert all(col.messages for col in cols), "each consumer got a share"
        # duplicates only around rebalances: far fewer than the messages sent
        assert len(got) - len(set(got)) < len(sent) // 2

    asyncio.run(run())


WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from pyrocketmq.client import (
        ClientSettings, ConsumeResult, PushConsumer, PushConsumerSettings, RebalanceSettings,
    )

    namesrv, group, topic, out = sys.argv[1:5]

    async def main():
        f = open(out, "a", buffering=1)

        def listener(msgs, ctx):
            for m in msgs:
                f.write(m.body.decode() + "\\n")
            return ConsumeResult.SUCCESS

        settings = PushConsumerSettings(consume_from="first", rebalance=RebalanceSettings(interval=2.0))
        client = ClientSettings(instance_name="victim", client_ip="127.0.0.1")
        c = PushConsumer(group, namesrv, settings, client)
        c.subscribe(topic, "*")
        c.register_listener(listener)
        await c.start()
        await asyncio.Event().wait()

    asyncio.run(main())
    """
)


def test_kill_9_of_a_consumer_moves_its_queues_and_loses_nothing(namesrv, broker, tmp_path):
    group = "cg_kill"
    script = tmp_path / "victim.py"
    script.write_text(WORKER)
    out = tmp_path / "victim.out"

    async def run():
        await create_topic(namesrv.addr, broker.addr, TOPIC)
        cols = [Collector(f"s{i}") for i in range(2)]
        survivors = [consumer(namesrv.addr, group, f"s{i}", TOPIC, cols[i]) for i in range(2)]
        steady = await Steady(namesrv.addr, TOPIC).start()
        victim = subprocess.Popen([sys.executable, str(script), namesrv.addr, group, TOPIC, str(out)],
                                  stdout=subprocess.DEVNULL, stderr=open(tmp_path / "victim.log", "wb"),
                                  start_new_session=True)
        try:
            for c in survivors:
                await c.start()

            def three_way() -> bool:
                mine = {mq for c in survivors for mq in c.assignment() if mq.topic == TOPIC}
                return len(mine) == 6 and out.exists() and out.stat().st_size > 0

            await wait_until(three_way, WAIT, "the victim owns 2 of 8 queues and consumes")
            os.killpg(victim.pid, signal.SIGKILL)
            victim.wait(10)
            await wait_until(
                lambda: matches_strategy(survivors, TOPIC), 150.0, "survivors take the victim's queues"
            )
            await asyncio.sleep(1.0)
            await steady.stop()
            sent = set(steady.sent)
            await wait_until(lambda: sent <= {b for col in cols for b in col.bodies()} | set(_lines(out)),
                             WAIT, "every message consumed by someone")
        finally:
            if victim.poll() is None:
                os.killpg(victim.pid, signal.SIGKILL)
                victim.wait(10)
            await steady.stop()
            for c in survivors:
                await c.shutdown()
        by_victim = set(_lines(out))
        assert by_victim, "the victim consumed before it died"
        assert sent <= {b for col in cols for b in col.bodies()} | by_victim

    asyncio.run(run())


def _lines(path: Path) -> list[str]:
    try:
        return [x for x in path.read_text().splitlines() if x]
    except FileNotFoundError:
        return []


def _consume_cli(
    namesrv: str, topic: str, group: str, *extra: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``pyrocketmq consume`` run in a child process, its output captured as text."""
    argv = [sys.executable, "-m", "pyrocketmq", "consume", "-n", namesrv, "-t", topic, "-g", group, *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def test_broadcasting_every_consumer_gets_every_message_and_offsets_survive_a_restart(
    namesrv, broker, tmp_path
):
    group = "cg_broadcast"

    def settings(i: int) -> PushConsumerSettings:
        return PushConsumerSettings(message_model="BROADCASTING", consume_from="first",
                                    offset_store_dir=str(tmp_path / f"offsets{i}"),
                                    rebalance=RebalanceSettings(interval=2.0))

    async def run():
        await create_topic(namesrv.addr, broker.addr, TOPIC, 4)
        cols = [Collector(f"b{i}") for i in range(3)]
        cs = [consumer(namesrv.addr, group, f"b{i}", TOPIC, cols[i], settings=settings(i)) for i in range(3)]
        steady = Steady(namesrv.addr, TOPIC, interval=0.0)
        restarted = Collector("b0-again")
        again = consumer(namesrv.addr, group, "b0-again", TOPIC, restarted, settings=settings(0))
        try:
            for c in cs:
                await c.start()
            await wait_until(
                lambda: all(len(c.assignment()) == 4 for c in cs), WAIT, "each consumer owns all 4 queues"
            )
            await steady.start()
            while len(steady.sent) < 100:
                await asyncio.sleep(0.05)
            await steady.stop()
            first = set(steady.sent)
            for col in cols:
                await wait_until(
                    lambda col=col: first <= set(col.bodies()), WAIT, f"{col.name} got every message"
                )
            await cs[0].shutdown()
            assert (tmp_path / "offsets0" / group / "offsets.json").exists()

            steady2 = Steady(namesrv.addr, TOPIC, interval=0.0, body_fn=lambda i: f"second{i}")
            await steady2.start()
            while len(steady2.sent) < 40:
                await asyncio.sleep(0.05)
            await steady2.stop()
            second = set(steady2.sent)
            await again.start()
            await wait_until(
                lambda: second <= set(restarted.bodies()), WAIT, "the restarted consumer got the new messages"
            )
            for col in cols[1:]:
                await wait_until(
                    lambda col=col: second <= set(col.bodies()), WAIT, f"{col.name} got the new messages"
                )
        finally:
            await steady.stop()
            for c in [*cs, again]:
                await c.shutdown()
        assert not first & set(restarted.bodies()), (
            "a restarted broadcasting consumer resumes from its offsets file"
        )
        for col in cols:
            assert len(col.bodies()) == len(set(col.bodies()))

    asyncio.run(run())


def test_cli_consume_push_prints_count_messages_and_persists_only_those(namesrv, broker):
    topic, group = "CliPush", "cg_cli_push"

    async def send():
        await create_topic(namesrv.addr, broker.addr, topic, 2)
        steady = Steady(namesrv.addr, topic, interval=0.0)
        await steady.start()
        while len(steady.sent) < 12:
            await asyncio.sleep(0.01)
        await steady.stop()
        return steady.sent

    sent = asyncio.run(send())

    def consume(*extra: str) -> subprocess.CompletedProcess[str]:
        return _consume_cli(namesrv.addr, topic, group, "--push", *extra, timeout=120)

    first = consume("--from-beginning", "-c", "5")
    assert first.returncode == 0, first.stderr
    assert "received 5 message(s)" in first.stdout
    printed = [line.rsplit("body=", 1)[1] for line in first.stdout.splitlines() if "body=" in line]
    rest = consume("--timeout", "5")
    assert rest.returncode == 0, rest.stderr
    printed += [line.rsplit("body=", 1)[1] for line in rest.stdout.splitlines() if "body=" in line]
    assert set(printed) == set(sent), "the second run continues where the first one's printed messages end"


def test_reset_offset_by_time_rewinds_running_consumers_and_running_info_is_relayed(namesrv, broker):
    """Admin resetOffsetByTime → the broker's RESET_CONSUMER_CLIENT_OFFSET (220) → the push consumer
    restarts its queues at the new offsets; GET_CONSUMER_RUNNING_INFO (307) relayed by the broker is
    answered from the consumer's process queues."""
    topic, group = "RewindPush", "cg_rewind"

    async def burst(prefix: str, n: int) -> list[str]:
        s = Steady(namesrv.addr, topic, interval=0.0, body_fn=lambda i: f"{prefix}{i}")
        await s.start()
        while len(s.sent) < n:
            await asyncio.sleep(0.01)
        await s.stop()
        return s.sent

    async def run():
        await create_topic(namesrv.addr, broker.addr, topic, 4)
        col = Collector("rw")
        c = consumer(namesrv.addr, group, "rw", topic, col)
        try:
            await c.start()
            await wait_until(
                lambda: len([q for q in c.assignment() if q.topic == topic]) == 4, WAIT, "owns 4 queues"
            )
            old = set(await burst("old", 20))
            await asyncio.sleep(2.0)
            t = int(time.time() * 1000)
            new = set(await burst("new", 20))
            await wait_until(lambda: old | new <= set(col.bodies()), WAIT, "both bursts consumed")

            client = RemotingClient()
            try:
                fields = {"consumerGroup": group, "clientId": c.instance.client_id, "jstackEnable": False}
                resp = await client.invoke(
                    broker.addr, RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, fields), 15
                )
            finally:
                await client.close()
            assert resp.code == ResponseCode.SUCCESS, resp
            info = orjson.loads(resp.body)
            assert info["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
            assert sum(1 for k in info["mqTable"] if topic in k) == 4
            assert {s["topic"] for s in info["subscriptionSet"]} == {topic, f"%RETRY%{group}"}

            before = len(col.messages)
            async with Admin(namesrv.addr) as admin:
                table = await admin.reset_offset_by_time(group, topic, t)
            assert len(table) == 4
            await wait_until(
                lambda: all(col.bodies().count(b) >= 2 for b in new), WAIT, "the new burst consumed again"
            )
            await asyncio.sleep(1.0)
            again = col.bodies()[before:]
        finally:
            await c.shutdown()
        assert set(again) == new, (
            "consumption restarts at the reset time: the old burst is not consumed again"
        )

    asyncio.run(run())


@pytest.mark.parametrize("mode", [[], ["--push"]])
def test_cli_consume_of_a_missing_topic_says_how_to_create_it_and_fails(namesrv, broker, mode):
    done = _consume_cli(namesrv.addr, "NoSuchTopic", "cg_missing", "--timeout", "30", *mode)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "topic NoSuchTopic does not exist" in done.stderr
    assert "admin updateTopic" in done.stderr and "Traceback" not in done.stderr


def test_cli_pull_consume_of_a_group_the_brokers_do_not_have_fails_with_how_to_create_it(namesrv, tmp_path):
    from .procs import start_broker

    (tmp_path / "strict").mkdir()
    broker = start_broker(tmp_path / "strict", namesrv.addr, autoCreateSubscriptionGroup="false")
    try:
        asyncio.run(create_topic(namesrv.addr, broker.addr, "StrictTopic", 2))
        done = _consume_cli(namesrv.addr, "StrictTopic", "cg_nobody_made", "--timeout", "60")
    finally:
        broker.stop()
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "SUBSCRIPTION_GROUP_NOT_EXIST" in done.stderr and "updateSubGroup" in done.stderr
