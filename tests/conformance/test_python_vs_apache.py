"""Our Python client against an unmodified Apache RocketMQ 4.9.7 broker (the ground truth) — and ours.

One scenario, run against both clusters:

- sync sends (1 000 each) with tags, keys and user properties to an auto-created topic (the
  producer falls back to TBW102's route) and to a topic created with our Admin;
- async sends, oneway sends, a batch, ordered sends by sharding key, and one body over 4 KiB
  (compressed by the producer, inflated by the consumer);
- our PullConsumer reads everything back: same bodies, tags, keys and user properties, each
  message exactly where its SendResult said;
- every message can be viewed by its offset message id; committed offsets are stored.

The synchronous facades are used on purpose: they drive the asyncio client on its background loop
thread, which is what non-async applications do.
"""

from __future__ import annotations

import time
import uuid

import pytest

from pyrocketmq.client import SyncPullConsumer
from pyrocketmq.client.admin import SyncAdmin
from pyrocketmq.client.message import Message, SendStatus, user_properties
from pyrocketmq.client.settings import PullConsumerSettings
from pyrocketmq.client.sync_producers import SyncProducer
from tests.helpers.routes import wait_for_route

pytestmark = pytest.mark.conformance

SYNC_COUNT = 1000
ASYNC_COUNT = 50
ONEWAY_COUNT = 20
BATCH_COUNT = 10


@pytest.fixture(params=["apache", "pyrocketmq"])
def cluster(request):
    return request.getfixturevalue(f"{request.param}_cluster")


def _message(topic: str, kind: str, i: int, body: bytes | None = None) -> Message:
    return Message(
        topic,
        body if body is not None else f"{kind}-{i}-body-{'x' * (i % 50)}".encode(),
        tags=f"Tag{i % 3}",
        keys=[f"{kind}-k{i}", f"mod{i % 10}"],
        properties={"idx": str(i), "kind": kind, "unicode": "héllo wörld"},
    )


def _consume_all(namesrv: str, group: str, topics: list[str], want: set[str], timeout: float = 90.0):
    """Poll every queue of ``topics`` from the beginning until every unique id in ``want`` arrived."""
    got: dict[str, object] = {}
    settings = PullConsumerSettings(auto_commit=False, long_poll_ms=2000)
    with SyncPullConsumer(group, namesrv, settings) as consumer:
        queues = [mq for t in topics for mq in consumer.fetch_queues(t)]
        consumer.assign(queues)
        consumer.seek_to_begin()
        deadline = time.monotonic() + timeout
        while not want <= got.keys() and time.monotonic() < deadline:
            for m in consumer.poll(timeout=2):
                assert m.msg_id not in got, f"message {m.msg_id} delivered twice"
                got[m.msg_id] = m
        consumer.commit_sync()
        committed = {mq: consumer.committed(mq) for mq in queues}
        ends = {mq: consumer.max_offset(mq) for mq in queues}
    return got, committed, ends


def test_python_client_round_trip(cluster):  # long: one client's whole round trip against Apache
    ns = cluster.namesrv_addr
    run = uuid.uuid4().hex[:8]
    auto_topic = f"PyAuto_{run}"
    made_topic = f"PyMade_{run}"
    group = f"py_cg_{run}"
    sent: dict[str, tuple[Message, object]] = {}  # unique id -> (message, SendResult or None)

    with SyncAdmin(ns) as admin:
        targets = admin.create_topic(made_topic, cluster=cluster.cluster_name, read_queues=4, write_queues=4)
        assert targets == [cluster.broker_addr]
        wait_for_route(admin, made_topic)
        assert made_topic in admin.topic_list()

        with SyncProducer(f"py_pg_{run}", ns) as producer:
            # sync, to the auto-created topic and to the created one
            for topic in (auto_topic, made_topic):
                for i in range(SYNC_COUNT):
                    msg = _message(topic, "sync", i)
                    result = producer.send(msg)
                    assert result.status is SendStatus.SEND_OK
                    assert result.msg_id == msg.unique_id
                    assert result.message_queue.topic == topic
                    sent[result.msg_id] = (msg, result)
            # the auto-created topic got min(4, TBW102's queues) queues and a route of its own
            route = admin.topic_route(auto_topic)
            assert [q.write_queue_nums for q in route.queue_datas] == [4]

            # async
            futures = []
            for i in range(ASYNC_COUNT):
                msg = _message(made_topic, "async", i)
                futures.append((msg, producer.send_async(msg)))
            for msg, fut in futures:
                result = fut.result(30)
                assert result.status is SendStatus.SEND_OK
                sent[result.msg_id] = (msg, result)

            # oneway: no result; known by unique id only
            for i in range(ONEWAY_COUNT):
                msg = _message(made_topic, "oneway", i)
                producer.send_oneway(msg)
                assert msg.unique_id
                sent[msg.unique_id] = (msg, None)

            # a batch: one request, one result naming every message
            batch = [_message(made_topic, "batch", i) for i in range(BATCH_COUNT)]
            result = producer.send(batch)
            assert result.status is SendStatus.SEND_OK
            assert result.msg_id.split(",") == [m.unique_id for m in batch]
            for m in batch:
                sent[m.unique_id] = (m, None)

            # ordered: one sharding key, one queue
            queues_used = set()
            for i in range(10):
                msg = _message(made_topic, "ordered", i)
                result = producer.send(msg, sharding_key="order-42")
                queues_used.add(result.message_queue)
                sent[result.msg_id] = (msg, result)
            assert len(queues_used) == 1

            # a body over 4 KiB: compressed on the wire, identical for the consumer
            big_body = ("The quick brown fox jumps over the lazy dog. " * 400).encode()
            assert len(big_body) > 4096
            big = _message(made_topic, "big", 0, big_body)
            big_result = producer.send(big)
            sent[big_result.msg_id] = (big, big_result)

        got, committed, ends = _consume_all(ns, group, [auto_topic, made_topic], set(sent))
        missing = set(sent) - got.keys()
        assert not missing, f"{len(missing)} of {len(sent)} messages not consumed, e.g. {sorted(missing)[:3]}"
        assert got.keys() == set(sent)

        for uid, (msg, result) in sent.items():
            m = got[uid]
            assert m.topic == msg.topic
            assert m.body == msg.body, f"body of {uid} differs"
            assert m.tags == msg.tags
            assert m.keys == msg.key_list()
            assert user_properties(m.properties) == msg.properties
            assert int(m.properties["MIN_OFFSET"]) <= m.queue_offset < int(m.properties["MAX_OFFSET"])
            if result is not None:
                assert m.queue_id == result.message_queue.queue_id
                assert m.queue_offset == result.queue_offset
                assert m.offset_msg_id == result.offset_msg_id

        # the consumer saw the big body inflated; the broker stored it compressed
        assert got[big_result.msg_id].store_size < len(big_body)

        # every queue's committed offset is its end
        assert committed == ends

        # view by offset message id (VIEW_MESSAGE_BY_ID to the ip:port inside the id)
        for uid in [*list(sent)[:3], big_result.msg_id]:
            msg, result = sent[uid]
            if result is None:
                continue
            viewed = admin.view_message(result.offset_msg_id)
            assert viewed.body == msg.body
            assert viewed.properties["UNIQ_KEY"] == uid
            assert viewed.topic == msg.topic

        # consumer progress shows the group with no lag
        progress, _tps = admin.consume_stats(group)
        mine = {mq: w for mq, w in progress.items() if mq.topic in (auto_topic, made_topic)}
        assert mine and all(w.consumer_offset == w.broker_offset for w in mine.values())
