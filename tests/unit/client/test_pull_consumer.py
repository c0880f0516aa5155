"""Pull requests and what a pulled message goes through before the user sees it (no sockets)."""

from __future__ import annotations

import asyncio
import zlib

import pytest

from pyrocketmq.client.errors import MQBrokerError, MQClientError, SubscriptionGroupNotFoundError
from pyrocketmq.client.process_queue import ProcessQueue
from pyrocketmq.client.pull_consumer import PullConsumer, _Batch
from pyrocketmq.client.pulling import (
    PullStatus,
    PullSysFlag,
    build_pull_header,
    parse_expression,
    process_messages,
    pull_result_from_response,
)
from pyrocketmq.client.settings import PullConsumerSettings
from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import PullMessageRequestHeader
from pyrocketmq.remoting.message import MessageExt, SysFlag, encode_message, tags_code

MQ = MessageQueue("T", "broker-a", 1)


@pytest.mark.parametrize(
    ("expr", "tags"),
    [("*", set()), ("", set()), (None, set()), ("  *  ", set()), ("A", {"A"}), ("A || B", {"A", "B"}),
     ("A||B||A", {"A", "B"}), (" || ", set())],
)
def test_parse_expression(expr, tags) -> None:
    sub = parse_expression(expr)
    assert set(sub.tags) == tags
    assert sub.all is (not tags)
    assert sub.codes() == sorted({tags_code(t) for t in tags})


def test_header_of_a_lite_pull() -> None:
    h = build_pull_header(group="g", mq=MQ, offset=10, max_nums=32, subscription=parse_expression("A || B"),
                          suspend_ms=0, sub_version=123)
    assert h == {
        "consumerGroup": "g", "topic": "T", "queueId": "1", "queueOffset": "10", "maxMsgNums": "32",
        "sysFlag": str(PullSysFlag.SUBSCRIPTION | PullSysFlag.LITE_PULL), "commitOffset": "0",
        "suspendTimeoutMillis": "0", "subscription": "A || B", "subVersion": "123", "expressionType": "TAG",
    }
    # the broker's own parser reads it back
    parsed = PullMessageRequestHeader.from_command(RemotingCommand.request(11, h))
    assert parsed.queue_offset == 10 and parsed.subscription == "A || B"


def test_long_poll_sets_the_suspend_bit() -> None:
    h = build_pull_header(group="g", mq=MQ, offset=0, max_nums=1, subscription=parse_expression("*"),
                          suspend_ms=20000, sub_version=1)
    assert h["sysFlag"] == str(0x2 | 0x4 | 0x10) and h["suspendTimeoutMillis"] == "20000"


def msg(topic="T", tags=None, body=b"b", props=None, sys_flag=0, offset=0) -> MessageExt:
    p = dict(props or {})
    if tags:
        p["TAGS"] = tags
    return MessageExt(topic=topic, body=body, properties=p, sys_flag=sys_flag, queue_offset=offset,
                      born_host=("10.0.0.1", 5), store_host=("10.0.0.2", 10911))


def test_tags_are_rechecked_by_exact_string() -> None:
    # "Aa" and "BB" have the same Java hash: the broker lets both through for "Aa".
    assert tags_code("Aa") == tags_code("BB")
    out = process_messages(
        [msg(tags="Aa"), msg(tags="BB"), msg(tags=None)], parse_expression("Aa"), "g", 0, 3
    )
    assert [m.tags for m in out] == ["Aa"]


def test_star_keeps_untagged_messages() -> None:
    assert len(process_messages([msg(), msg(tags="x")], parse_expression("*"), "g", 0, 2)) == 2


def test_retry_topic_is_restored_only_for_the_groups_retry_topic() -> None:
    out = process_messages(
        [
            msg(topic="%RETRY%g", props={"RETRY_TOPIC": "Orig"}),
            msg(topic="%RETRY%other", props={"RETRY_TOPIC": "X"}),
        ],
        parse_expression("*"),
        "g",
        0,
        2,
    )
    assert [m.topic for m in out] == ["Orig", "%RETRY%other"]


def test_compressed_bodies_are_inflated_and_flags_cleared() -> None:
    body = b"hello " * 2000
    out = process_messages([msg(body=zlib.compress(body, 5), sys_flag=0x301 | SysFlag.MULTI_TAGS)],
                           parse_expression("*"), "g", 0, 1)
    assert out[0].body == body
    assert out[0].sys_flag == SysFlag.MULTI_TAGS


def test_min_max_offset_properties() -> None:
    out = process_messages([msg()], parse_expression("*"), "g", 5, 9)
    assert out[0].properties["MIN_OFFSET"] == "5" and out[0].properties["MAX_OFFSET"] == "9"


def _response(code: int, body: bytes | None = None, **ext) -> RemotingCommand:
    fields = {"nextBeginOffset": 7, "minOffset": 0, "maxOffset": 9, "suggestWhichBrokerId": 0}
    fields.update(ext)
    return RemotingCommand.request(11).response(code, None, fields, body)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (0, PullStatus.FOUND),
        (19, PullStatus.NO_NEW_MSG),
        (20, PullStatus.NO_MATCHED_MSG),
        (21, PullStatus.OFFSET_ILLEGAL),
    ],
)
def test_pull_statuses(code: int, status: PullStatus) -> None:
    r = pull_result_from_response(_response(code), parse_expression("*"), "g", "b:1")
    assert r.status is status and r.next_begin_offset == 7 and r.min_offset == 0 and r.max_offset == 9
    assert r.messages == []


def test_found_decodes_the_body() -> None:
    records = b"".join(bytes(encode_message(msg(tags=t, offset=i))) for i, t in enumerate(["A", "B", "A"]))
    r = pull_result_from_response(
        _response(0, records, suggestWhichBrokerId=1), parse_expression("A"), "g", "b:1"
    )
    assert [m.queue_offset for m in r.messages] == [0, 2]
    assert r.suggest_which_broker_id == 1


@pytest.mark.parametrize(
    ("code", "cls"), [(26, SubscriptionGroupNotFoundError), (1, MQBrokerError), (17, MQBrokerError)]
)
def test_other_codes_raise(code: int, cls: type) -> None:
    with pytest.raises(cls):
        pull_result_from_response(_response(code), parse_expression("*"), "g", "b:1")


def test_garbage_body_raises_a_broker_error() -> None:
    with pytest.raises(MQBrokerError, match="undecodable"):
        pull_result_from_response(_response(0, b"\x00" * 60), parse_expression("*"), "g", "b:1")


# -- buffering and offsets (state only: no pull tasks run) -----------------------------------------


def _consumer_with_queues(
    *queues: MessageQueue, settings: PullConsumerSettings | None = None
) -> PullConsumer:
    c = PullConsumer("g", "ns:9876", settings or PullConsumerSettings(auto_commit=False))
    c._instance = object()  # type: ignore[assignment]  # "started"; nothing here talks to it
    c._data = asyncio.Event()
    for q in queues:  # as assign() does, without its requests
        c.state.subscribe(q.topic, parse_expression(c.expression_for(q.topic)))
        c.state.assign(q, ProcessQueue())
        c.offset_store.update(q, 0)
    return c


def _pulled(
    c: PullConsumer,
    mq: MessageQueue,
    msgs: list[MessageExt],
    next_offset: int,
    pq: ProcessQueue | None = None,
):
    """What the fetcher does with a pulled batch: into the process queue, and to the consumer's buffer."""
    pq = pq or c.state.table[mq]
    pq.put_messages(msgs)
    c._ready.append(_Batch(mq, pq, msgs, next_offset))


def test_poll_hands_out_batches_in_order_and_tracks_consumed_offsets() -> None:
    async def go():
        c = _consumer_with_queues(MQ)
        _pulled(c, MQ, [msg(offset=0), msg(offset=1)], 2)
        _pulled(c, MQ, [msg(offset=2)], 5)  # entries 3..4 were filtered out
        assert c.state.table[MQ].msg_count == 3
        out = await c.poll(0.01)
        return c, out

    c, out = asyncio.run(go())
    assert [m.queue_offset for m in out] == [0, 1, 2]
    assert c.position(MQ) == 5
    assert c.state.table[MQ].msg_count == 0


def test_batches_from_before_a_seek_are_dropped() -> None:
    async def go():
        c = _consumer_with_queues(MQ)
        _pulled(c, MQ, [msg(offset=0)], 1)
        c.seek(MQ, 0)  # a seek happened
        return await c.poll(0.01)

    assert asyncio.run(go()) == []


def test_poll_respects_max_messages_without_splitting_batches() -> None:
    async def go():
        c = _consumer_with_queues(MQ)
        for i in range(3):
            _pulled(c, MQ, [msg(offset=2 * i), msg(offset=2 * i + 1)], 2 * i + 2)
        first = await c.poll(0.01, max_messages=3)
        rest = await c.poll(0.01)
        return first, rest

    first, rest = asyncio.run(go())
    assert len(first) == 2 and len(rest) == 4


def test_commit_candidates_are_changed_consumed_offsets() -> None:
    q2 = MessageQueue("T", "broker-a", 2)
    c = _consumer_with_queues(MQ, q2)
    c.offset_store.update(MQ, 10)
    c.offset_store.update(q2, 4)
    c._committed[q2] = 4
    assert c._to_commit(None) == {MQ: 10}
    assert c._to_commit({q2: 1}) == {q2: 1}


def test_misuse_is_explained() -> None:
    with pytest.raises(MQClientError, match="start"):
        asyncio.run(PullConsumer("g").poll(0))
    with pytest.raises(MQClientError, match="assign"):
        asyncio.run(_consumer_with_queues().poll(0))
    with pytest.raises(MQClientError, match="not assigned"):
        _consumer_with_queues().seek(MQ, 0)
    with pytest.raises(MQClientError, match="consume_from"):
        PullConsumer("g", settings=PullConsumerSettings(consume_from="middle"))
    with pytest.raises(MQClientError, match="group"):
        PullConsumer("")


def test_heartbeat_data_of_a_lite_consumer() -> None:
    settings = PullConsumerSettings(auto_commit=False, topic_expressions={"U": "X || Y"})
    c = _consumer_with_queues(MQ, MessageQueue("U", "b", 0), settings=settings)
    data = c.consumer_data()
    assert data.consume_type == "CONSUME_ACTIVELY" and data.message_model == "CLUSTERING"
    subs = {s.topic: s for s in data.subscription_data_set}
    assert subs["T"].sub_string == "*" and subs["U"].tags_set == ("X", "Y")
    assert subs["U"].code_set == (tags_code("X"), tags_code("Y"))


def test_reset_offset_seeks_assigned_queues_only() -> None:
    async def go():
        c = _consumer_with_queues(MQ)
        old = c.state.table[MQ]
        c.on_reset_offset("T", {MQ: 42, MessageQueue("T", "broker-a", 9): 1})
        return c, old

    c, old = asyncio.run(go())
    assert c.position(MQ) == 42 and old.dropped and c.state.table[MQ] is not old
    assert c.assignment() == [MQ]
