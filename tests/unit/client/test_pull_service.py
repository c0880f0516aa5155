"""The pull service's requests and reactions, against a scripted broker answer (no sockets).

Checks the PULL_MESSAGE ext fields a push consumer sends (PROTOCOL.md §7: sysFlag SUSPEND, plus
COMMIT_OFFSET with the memory offset, never to a slave; suspendTimeoutMillis; no subscription) and
what each answer does to the request, the process queue and the offset store.
"""

from __future__ import annotations

import asyncio

import pytest

from pyrocketmq.client import pull_service as ps
from pyrocketmq.client.consumer_stats import ConsumerStats
from pyrocketmq.client.errors import (
    MQBrokerError,
    MQConnectionError,
    MQTimeoutError,
    ServiceNotAvailableError,
)
from pyrocketmq.client.offset_store import OffsetStore
from pyrocketmq.client.process_queue import ProcessQueue
from pyrocketmq.client.pull_service import FetchPlan, PullRequest, PullService
from pyrocketmq.client.pulling import PullSysFlag, parse_expression
from pyrocketmq.client.settings import PullSettings, PushConsumerSettings
from pyrocketmq.client.subscription_state import SubscriptionState
from pyrocketmq.client.tasks import TaskSet
from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import MessageExt, encode_message

MQ = MessageQueue("T", "broker-a", 0)


class FakeInstance:
    def __init__(self, answer: RemotingCommand, broker_id: int = 0) -> None:
        self.answer = answer
        self.broker_id = broker_id
        self.sent: list[RemotingCommand] = []
        self.refreshed: list[str] = []

    async def refresh_after_failure(self, topic):
        self.refreshed.append(topic)

    async def broker_addr_of(self, topic, name, bid=0):
        return ("127.0.0.1:1", self.broker_id)

    async def invoke(self, addr, cmd, timeout=None):
        self.sent.append(cmd)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class FakeService:
    def __init__(self) -> None:
        self.submitted: list[tuple[list[MessageExt], bool]] = []

    def submit(self, req, msgs, dispatch=True):
        self.submitted.append((msgs, dispatch))


class FakeTasks(TaskSet):
    """Records delayed calls instead of running them; spawned coroutines (pulls) are counted and closed
    unrun."""

    def __init__(self) -> None:
        super().__init__()
        self.later_calls: list[float] = []
        self.spawned = 0

    def later(self, delay, fn, *args):
        self.later_calls.append(delay)

    def spawn(self, coro):
        self.spawned += 1
        coro.close()


class FakeConsumer:
    """ConsumerParts' fields with a scripted instance, and what the fetcher's callbacks received."""

    def __init__(
        self, answer: RemotingCommand, *, broker_id: int = 0, model: str = "CLUSTERING", orderly=False
    ):
        self.group = "cg"
        self.settings = PushConsumerSettings(message_model=model)
        self.orderly = orderly
        self.state = SubscriptionState("cg", model)
        self.state.sub_version = 7
        self.state.subscribe("T", parse_expression("TagA"))
        self.clustering = self.state.clustering
        self.instance = FakeInstance(answer, broker_id)
        self.offset_store = OffsetStore("cg")
        self.stats = ConsumerStats()
        self.consume_service = FakeService()
        self.tasks = FakeTasks()
        self.moved: list[MessageQueue] = []

    @property
    def later_calls(self) -> list[float]:
        return self.tasks.later_calls

    async def persist_offset(self, mq, offset, *, sync):
        pass

    async def offset_moved(self, mq, pq):
        self.moved.append(mq)

    def fetcher(self) -> PullService:
        plan = FetchPlan(
            self.settings.pull, self.settings.flow, orderly=self.orderly, clustering=self.clustering
        )
        return PullService(
            self, plan, self.tasks, submit=self.consume_service.submit, on_offset_moved=self.offset_moved
        )


def answer(code: int, next_begin: int = 0, body: bytes | None = None, suggest: int = 0) -> RemotingCommand:
    fields = {
        "suggestWhichBrokerId": suggest,
        "nextBeginOffset": next_begin,
        "minOffset": 0,
        "maxOffset": 100,
    }
    return RemotingCommand.request(0, fields, body).response(code, None, fields, body)


def pull_once(consumer: FakeConsumer, req: PullRequest) -> PullService:
    async def go():
        svc = consumer.fetcher()
        svc.start()
        await svc.pull(req)
        return svc

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("memory_offset", "broker_id", "model", "sys_flag", "commit"),
    [
        (-1, 0, "CLUSTERING", "2", "0"),  # nothing to commit yet: SUSPEND only
        (42, 0, "CLUSTERING", "3", "42"),  # SUSPEND | COMMIT_OFFSET
        (42, 1, "CLUSTERING", "2", "42"),  # never commit through a slave
        (42, 0, "BROADCASTING", "2", "0"),  # broadcasting offsets stay local
    ],
)
def test_pull_request_fields(memory_offset, broker_id, model, sys_flag, commit):
    c = FakeConsumer(answer(ResponseCode.PULL_NOT_FOUND, 5), broker_id=broker_id, model=model)
    c.offset_store.update(MQ, memory_offset)
    pull_once(c, PullRequest(MQ, ProcessQueue(), 5))
    [cmd] = c.instance.sent
    ext = cmd.ext_fields
    assert (ext["sysFlag"], ext["commitOffset"]) == (sys_flag, commit)
    assert ext["suspendTimeoutMillis"] == "15000" and ext["maxMsgNums"] == "32"
    assert ext["queueOffset"] == "5" and ext["subVersion"] == "7" and "subscription" not in ext


def test_found_feeds_the_process_queue_rechecks_tags_and_remembers_the_suggested_broker():
    def stored(offset: int, tags: str) -> bytes:
        return bytes(
            encode_message(MessageExt(topic="T", body=b"x", queue_offset=offset, properties={"TAGS": tags}))
        )

    c = FakeConsumer(answer(ResponseCode.SUCCESS, 12, stored(10, "TagA") + stored(11, "TagZ"), suggest=1))
    req = PullRequest(MQ, ProcessQueue(), 10)
    svc = pull_once(c, req)
    assert req.next_offset == 12
    [(msgs, dispatch)] = c.consume_service.submitted
    assert [m.queue_offset for m in msgs] == [10]  # TagZ shares no tag with "TagA": filtered here
    assert req.pq.msg_count == 1 and dispatch is True
    assert svc.suggested[MQ] == 1
    assert c.tasks.spawned == 1  # pulled again at once


def test_no_new_message_moves_the_memory_offset_when_nothing_is_cached():
    c = FakeConsumer(answer(ResponseCode.PULL_RETRY_IMMEDIATELY, 30))
    req = PullRequest(MQ, ProcessQueue(), 20)
    pull_once(c, req)
    assert req.next_offset == 30 and c.offset_store.read_memory(MQ) == 30


def test_offset_moved_drops_the_queue_and_restarts_it_later():
    c = FakeConsumer(answer(ResponseCode.PULL_OFFSET_MOVED, 50))
    req = PullRequest(MQ, ProcessQueue(), 20)
    pull_once(c, req)
    assert req.pq.dropped and c.later_calls == [ps.OFFSET_MOVED_DELAY]
    assert c.tasks.spawned == 0


def test_flow_control_and_errors_delay_the_next_pull():
    c = FakeConsumer(answer(ResponseCode.SYSTEM_ERROR))
    pq = ProcessQueue(msg_count=1001)
    pull_once(c, PullRequest(MQ, pq, 0))
    assert c.instance.sent == [] and c.later_calls == [c.settings.flow.delay]
    pull_once(c, PullRequest(MQ, ProcessQueue(), 0))
    assert c.later_calls[-1] == c.settings.pull.delay_on_error


@pytest.mark.parametrize(
    ("error", "refreshed"),
    [
        (MQConnectionError("connection refused"), ["T"]),  # the broker is gone: a failover?
        (MQTimeoutError("no answer"), ["T"]),
        (ServiceNotAvailableError(ResponseCode.SERVICE_NOT_AVAILABLE, "stepping down"), ["T"]),
        (MQBrokerError(ResponseCode.SYSTEM_ERROR, "busy"), []),  # the broker is there: no new route
    ],
)
def test_a_pull_to_a_broker_that_is_gone_refreshes_the_route_and_asks_the_master_next(error, refreshed):
    c = FakeConsumer(error)
    req = PullRequest(MQ, ProcessQueue(), 0)

    async def go():
        svc = c.fetcher()
        svc.start()
        svc.suggested[MQ] = 1  # the last answer suggested the slave
        await svc.pull(req)
        return svc

    svc = asyncio.run(go())
    assert c.instance.refreshed == refreshed
    assert (MQ in svc.suggested) == (not refreshed)
    assert c.later_calls == [c.settings.pull.delay_on_error]


def test_orderly_queue_without_its_lock_is_not_pulled():
    c = FakeConsumer(answer(ResponseCode.PULL_NOT_FOUND), orderly=True)
    pull_once(c, PullRequest(MQ, ProcessQueue(locked=False), 0))
    assert c.instance.sent == [] and c.later_calls == [ps.NOT_LOCKED_DELAY]


# -- the same fetcher for the lite pull consumer ------------------------------------------------------
def lite_fetcher(c: FakeConsumer, suspend_ms: int = 15000, start_at: int = 9) -> PullService:
    async def start_offset(mq):
        return start_at

    pull = PullSettings(suspend_ms=suspend_ms)
    return PullService(
        c,
        FetchPlan(pull, c.settings.flow, lite=True),
        c.tasks,
        submit=c.consume_service.submit,
        start_offset=start_offset,
    )


def lite_pull_once(c: FakeConsumer, req: PullRequest, **kw) -> PullService:
    async def go():
        svc = lite_fetcher(c, **kw)
        svc.start()
        await svc.pull(req)
        return svc

    return asyncio.run(go())


def test_a_lite_pull_carries_its_subscription_and_never_the_offset():
    c = FakeConsumer(answer(ResponseCode.PULL_NOT_FOUND, 9))
    c.offset_store.update(MQ, 42)
    req = PullRequest(MQ, ProcessQueue(), -1)  # assigned without a seek: where start_offset says
    lite_pull_once(c, req)
    [cmd] = c.instance.sent
    ext = cmd.ext_fields
    flags = PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION | PullSysFlag.LITE_PULL
    assert (ext["sysFlag"], ext["commitOffset"], ext["subscription"]) == (str(flags), "0", "TagA")
    assert ext["queueOffset"] == "9" and req.next_offset == 9


def test_a_lite_pull_goes_on_at_once_after_an_illegal_offset():
    c = FakeConsumer(answer(ResponseCode.PULL_OFFSET_MOVED, 50))
    req = PullRequest(MQ, ProcessQueue(), 20)
    lite_pull_once(c, req)
    assert not req.pq.dropped and req.next_offset == 50 and c.tasks.spawned == 1
    assert c.offset_store.read_memory(MQ) == 50 and c.later_calls == []


def test_without_long_polling_an_empty_answer_is_not_pulled_again_at_once():
    c = FakeConsumer(answer(ResponseCode.PULL_NOT_FOUND, 20))
    lite_pull_once(c, PullRequest(MQ, ProcessQueue(), 20), suspend_ms=0)
    assert c.later_calls == [ps.IDLE_DELAY]


def test_a_held_request_goes_back_on_wake_and_failures_last_until_a_pull_succeeds():
    c = FakeConsumer(MQConnectionError("connection refused"))
    req = PullRequest(MQ, ProcessQueue(), 0)

    async def go():
        svc = lite_fetcher(c)
        svc.start()
        c.state.pause(MQ)
        await svc.pull(req)  # paused: held back
        assert c.later_calls == [ps.PAUSED_DELAY] and c.tasks.spawned == 0 and svc.held == {MQ: req}
        c.state.resume(MQ)
        svc.wake(MQ)
        svc.wake(MQ)  # nothing held any more: no second copy of the request
        assert c.tasks.spawned == 1 and svc.held == {}
        await svc.pull(req)
        failed = MQ in svc.failures
        c.instance.answer = answer(ResponseCode.PULL_NOT_FOUND, 0)
        await svc.pull(req)
        return failed, svc

    failed, svc = asyncio.run(go())
    assert failed and svc.failures == {}
