"""SQL92 selectors held up against Apache RocketMQ 4.9's broker (``enablePropertyFilter=true``): the
same messages, the same selectors pulled raw (``expressionType=SQL92``), the same messages selected
and the same refusals; and the unmodified Java push consumer with ``MessageSelector.bySql`` against
pyrocketmq, a bad selector refused at its start as Apache refuses it."""

from __future__ import annotations

import asyncio

import pytest

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient
from tests.conformance.apache import start_apache_cluster
from tests.integration.procs import start_broker, start_namesrv
from tests.integration.wire import create_topic, pull, send_v2

pytestmark = pytest.mark.conformance

TOPIC = "SqlSelect"
MESSAGES: list[dict[str, str]] = [
    {"a": "10", "b": "3"}, {"a": "x"}, {}, {"a": "2", "region": "eu"}, {"a": "5.5", "region": "eu"},
    {"a": "-1", "flag": "true"}, {"a": "0", "region": "us"}, {"a": "5"}, {"a": "9223372036854775808"},
    {"a": " 7 "}, {"a": "1e3"}, {"a": "+4"}, {"flag": "TRUE"}, {"name": "O'Brien", "a": "3"},
    {"a": "12", "b": "12.0"}, {"region": "ap", "b": "x"}, {"a": "5", "b": "5"}, {"flag": "no", "a": "NaN"},
]  # fmt: skip
TAGGED = {0: "red", 3: "blue", 4: "red"}
SELECTORS = [
    "a > 5", "a >= 5", "a = 5", "a <> 5", "a < 5", "a <= 5", "NOT (a > 5)", "a IS NULL", "a IS NOT NULL",
    "a > b", "a = b", "a = 'x'", "TRUE", "FALSE", "a", "a BETWEEN 0 AND 5", "a NOT BETWEEN 0 AND 5",
    "region IN ('eu', 'ap')", "region NOT IN ('eu')", "TAGS = 'red'", "TAGS IN ('red', 'blue') AND a > 3",
    "a >= 5.5", "a < 1e3", "flag = TRUE", "flag = 'true'", "a = 0", "a > 0 OR region = 'us'",
    "a > 0 AND region IS NULL", "name = 'O''Brien'", "a = 10L", "a > -1", "(a > 1) AND NOT (b IS NULL)",
    "a = 1.0E1", "-a < 0", "NOT a", "b <> 'x'", "region = 'eu' or region = 'us' and a > 1",
    "a > 2 -- a comment", "/* block */ a < 3", "a in ('5', '10')", "A > 5", "a IS NOT NULL AND a > 0",
]  # fmt: skip
BAD = ["a >", "a > 'x'", "a = NULL", "a IN (1)", "a ~ 1", "TRUE > 1", "a IN ()", "a BETWEEN 1", "(a > 1",
       "a > 1 a"]  # fmt: skip


async def _select(addr: str) -> dict[str, object]:
    client = RemotingClient()
    try:
        assert (await client.invoke(addr, create_topic(TOPIC, 1), 10)).code == ResponseCode.SUCCESS
        for i, props in enumerate(MESSAGES):
            resp = await client.invoke(
                addr, send_v2(TOPIC, f"m{i}".encode(), tags=TAGGED.get(i), props=props), 10
            )
            assert resp.code == ResponseCode.SUCCESS, resp.remark
        out: dict[str, object] = {}
        for expr in SELECTORS + BAD:
            got: list[str] = []
            offset, code = 0, ResponseCode.SUCCESS
            for _ in range(len(MESSAGES) + 2):
                resp = await client.invoke(
                    addr, pull(TOPIC, 0, offset, sub=expr, expression_type="SQL92"), 10
                )
                code = resp.code
                if code == ResponseCode.SUCCESS:
                    got += [m.body.decode() for m in decode_messages(resp.body or b"")]
                if code not in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY):
                    break
                offset = int(resp.ext_fields["nextBeginOffset"])
                if offset >= len(MESSAGES):
                    break
            out[expr] = sorted(got, key=lambda b: int(b[1:])) if expr in SELECTORS else int(code)
        return out
    finally:
        await client.close()


def _refused_at_start(java, namesrv: str, topic: str, selector: str) -> str:
    out = java.run(
        "PushConsumerScenario", [namesrv, topic, "GID_SQL_BAD", "concurrent", 1, 20, 0, selector], timeout=120
    )
    assert out.returncode == 3, out.describe("should have been refused at start")
    return next(line for line in out.stderr.splitlines() if line.startswith("start failed"))


def test_the_same_selectors_select_the_same_messages_as_apache(tmp_path, java):
    apache = start_apache_cluster(tmp_path / "apache", broker_overrides={"enablePropertyFilter": "true"})
    try:
        theirs = asyncio.run(_select(apache.broker_addr))
        apache_refusal = _refused_at_start(java, apache.namesrv_addr, TOPIC, "price >")
    finally:
        apache.stop()
    ns = start_namesrv(tmp_path / "ours")
    broker = start_broker(tmp_path / "ours", ns.addr, enablePropertyFilter="true")
    try:
        ours = asyncio.run(_select(broker.addr))
    finally:
        broker.stop()
        ns.stop()
    assert theirs["TRUE"] == [f"m{i}" for i in range(len(MESSAGES))]  # the comparison can tell a difference
    different = {e: (ours[e], theirs[e]) for e in SELECTORS if ours[e] != theirs[e]}
    assert not different, different
    # Apache's pull with a selector it cannot parse logs the error and then filters nothing (every
    # message goes out); ours refuses the pull. Java consumers meet the refusal at start from both
    # (CHECK_CLIENT_CONFIG, see below).
    assert all(ours[b] == ResponseCode.SUBSCRIPTION_PARSE_FAILED for b in BAD), {b: ours[b] for b in BAD}
    assert "CODE: 23" in apache_refusal, (
        apache_refusal
    )  # what ours answers too (test_java_push_consumer_by_sql)


@pytest.fixture(scope="module")
def sql_cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sql-ours")
    ns = start_namesrv(tmp)
    broker = start_broker(tmp, ns.addr, enablePropertyFilter="true")
    try:
        yield ns, broker
    finally:
        broker.stop()
        ns.stop()


def test_java_push_consumer_by_sql(sql_cluster, java):
    ns, broker = sql_cluster
    topic = "SqlPush"

    async def send() -> None:
        client = RemotingClient()
        try:
            assert (await client.invoke(broker.addr, create_topic(topic, 2), 10)).code == ResponseCode.SUCCESS
            for i in range(40):
                props = {"idx": str(i), "price": str(i % 10), **({"region": "eu"} if i % 3 == 0 else {})}
                resp = await client.invoke(
                    broker.addr, send_v2(topic, f"p{i}".encode(), queue_id=i % 2, props=props), 10
                )
                assert resp.code == ResponseCode.SUCCESS, resp.remark
        finally:
            await client.close()

    asyncio.run(send())
    expected = sorted(i for i in range(40) if i % 10 > 4 and i % 3 == 0)  # price > 4 AND region = 'eu'
    out = java.run("PushConsumerScenario",
                   [ns.addr, topic, "GID_SQL_PUSH", "concurrent", len(expected), 60, 0,
                    "price > 4 AND region = 'eu'"], timeout=120).json()  # fmt: skip
    got = sorted({int(d["properties"]["idx"]) for d in out["deliveries"]})
    assert got == expected and not out["timedOut"], (got, expected)
    refusal = _refused_at_start(java, ns.addr, topic, "price >")
    assert "CODE: 23" in refusal, refusal  # SUBSCRIPTION_PARSE_FAILED, as Apache answers
