"""The push consumer's parts alone: the subscription state (no I/O), the task set, and the
rebalance service against a scripted client instance (no sockets).

The parts meet only in the state and the callbacks they are built with; the last tests check that
none of them reaches back into :mod:`pyrocketmq.client.push_consumer` and that the state never awaits.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from pyrocketmq.client.allocate import strategy_for
from pyrocketmq.client.consumer_stats import ConsumerStats
from pyrocketmq.client.offset_store import RemoteOffsetStore
from pyrocketmq.client.process_queue import ProcessQueue
from pyrocketmq.client.pull_service import PullRequest
from pyrocketmq.client.pulling import parse_expression
from pyrocketmq.client.push_parts import ConsumerParts
from pyrocketmq.client.rebalance_service import RebalanceService
from pyrocketmq.client.settings import PushConsumerSettings
from pyrocketmq.client.subscription_state import SubscriptionState
from pyrocketmq.client.tasks import TaskSet
from pyrocketmq.remoting.body import ConsumerIdList, LockBatchResponseBody, MessageQueue
from pyrocketmq.remoting.code import RequestCode

CLIENT = Path(__file__).resolve().parents[3] / "client"
QUEUES = [MessageQueue("T", "broker-a", i) for i in range(4)]


# -- subscription state ------------------------------------------------------------------------------
def test_state_subscriptions_include_the_retry_topic_only_when_clustering():
    st = SubscriptionState("cg", "CLUSTERING")
    st.subscribe("T", parse_expression("TagA || TagB"))
    assert sorted(st.subscriptions()) == ["%RETRY%cg", "T"]
    assert st.subscription("T").tags == {"TagA", "TagB"} and st.subscription("X") is None
    assert st.subscription("%RETRY%cg").expression == "*"
    st.unsubscribe("T")
    assert sorted(st.subscriptions()) == ["%RETRY%cg"]
    bc = SubscriptionState("cg", "BROADCASTING")
    bc.subscribe("T", parse_expression("*"))
    assert list(bc.subscriptions()) == ["T"] and not bc.clustering


def test_state_assignment_parking_and_unlockable():
    st = SubscriptionState("cg")
    a, b = ProcessQueue(), ProcessQueue()
    st.assign(QUEUES[0], a)
    st.assign(QUEUES[1], b)
    assert st.owns(QUEUES[0], a) and not st.owns(QUEUES[0], b) and st.assignment() == QUEUES[:2]
    assert st.unassign(QUEUES[0], park=True) is a and a.dropped and not st.owns(QUEUES[0], a)
    assert st.owned() == {QUEUES[0], QUEUES[1]} and QUEUES[0] in st.parked
    a.consume_locked = True  # its last listener call still runs: not unlockable yet
    assert st.unlockable() == []
    a.consume_locked = False
    assert st.unlockable() == [QUEUES[0]] and st.parked == {}
    assert st.unassign(QUEUES[2]) is None
    st.assign(QUEUES[3], ProcessQueue())
    st.unassign(QUEUES[3], park=True)
    st.assign(QUEUES[3], c := ProcessQueue())  # owned again before it was unlocked: no longer parked
    assert QUEUES[3] not in st.parked and st.owns(QUEUES[3], c)
    st.clear()
    assert st.table == {} and b.dropped and c.dropped


def test_state_stalled_and_of_topic():
    st = SubscriptionState("cg")
    fresh, old = ProcessQueue(), ProcessQueue()
    old.last_pull_ms -= 200_000
    st.assign(QUEUES[0], fresh)
    st.assign(QUEUES[1], old)
    st.assign(MessageQueue("U", "broker-a", 0), ProcessQueue())
    assert st.stalled(120_000) == [QUEUES[1]]
    assert sorted(st.of_topic("T")) == QUEUES[:2]


# -- task set -----------------------------------------------------------------------------------------
def test_task_set_close_cancels_timers_and_waits_then_cancels_tasks():
    async def go():
        tasks = TaskSet()
        fired: list[str] = []
        done: list[str] = []

        async def quick():
            await asyncio.sleep(0.01)
            done.append("quick")

        async def slow():
            await asyncio.sleep(30)
            done.append("slow")

        tasks.later(0.0, fired.append, "now")
        tasks.later(5.0, fired.append, "late")
        tasks.spawn(quick())
        tasks.spawn(slow())
        await asyncio.sleep(0.05)
        await tasks.close(grace=0.05)
        late = slow()
        tasks.spawn(late)  # closed: not run (and closed, so no "never awaited" warning)
        tasks.later(0.0, fired.append, "after close")
        await asyncio.sleep(0.02)
        return fired, done, tasks._tasks

    fired, done, left = asyncio.run(go())
    assert fired == ["now"] and done == ["quick"] and not left


# -- rebalance service ----------------------------------------------------------------------------------
class ScriptedInstance:
    """Two members in the group; locks granted for queues in ``lockable``; offsets scripted."""

    client_id = "10.0.0.1@a"

    def __init__(self, lockable=frozenset(QUEUES)) -> None:
        self.lockable = set(lockable)
        self.sent: list[int] = []
        self.unlocked: list[MessageQueue] = []
        self.heartbeats = 0
        self.persisted: list[tuple[int, int]] = []
        self.routes = {
            "T": SimpleNamespace(broker_datas=[SimpleNamespace(select_broker_addr=lambda: "127.0.0.1:1")])
        }

    async def subscribe_queues(self, topic):
        if topic == "T":
            return list(QUEUES)
        raise _no_route(topic)

    async def send_heartbeat_to_all(self):
        self.heartbeats += 1

    async def master_addr_of(self, topic, broker_name):
        return "127.0.0.1:1"

    async def query_consumer_offset(self, group, mq):
        return 7 if mq.queue_id == 1 else -1  # queue 1 has a stored offset, the others none

    async def update_consumer_offset(self, group, mq, offset, *, oneway=False):
        self.persisted.append((mq.queue_id, offset))

    async def max_offset(self, mq):
        return 100 + mq.queue_id

    async def invoke(self, addr, cmd, timeout=None):
        self.sent.append(cmd.code)
        if cmd.code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            return cmd.response(
                0, None, {}, ConsumerIdList(consumer_id_list=[self.client_id, "10.0.0.2@b"]).to_json()
            )
        if cmd.code == RequestCode.LOCK_BATCH_MQ:
            body = LockBatchResponseBody(lock_ok_mq_set=sorted(self.lockable))
            return cmd.response(0, None, {}, body.to_json())
        if cmd.code == RequestCode.UNLOCK_BATCH_MQ:
            self.unlocked.append(cmd.code)
            return cmd.response(0, None, {})
        raise AssertionError(f"unexpected request {cmd.code}")


def _no_route(topic):
    from pyrocketmq.client.errors import MQClientError

    return MQClientError(f"no route for {topic}")


def make_service(*, orderly=False, lockable=frozenset(QUEUES)):
    state = SubscriptionState("cg")
    state.subscribe("T", parse_expression("*"))
    inst = ScriptedInstance(lockable)
    parts = ConsumerParts(
        "cg", PushConsumerSettings(), inst, RemoteOffsetStore("cg", inst), ConsumerStats(), state, orderly
    )  # type: ignore[arg-type]  # a scripted instance
    fetched: list[PullRequest] = []
    svc = RebalanceService(parts, strategy_for("averagely"), TaskSet(), fetch=fetched.append)
    return svc, state, inst, fetched


def test_rebalance_takes_this_members_share_and_hands_each_queue_to_the_fetcher():
    async def go():
        svc, state, inst, fetched = make_service()
        changed = await svc.rebalance()
        again = await svc.rebalance()
        return changed, again, state, inst, fetched

    changed, again, state, inst, fetched = asyncio.run(go())
    assert changed and not again
    assert state.assignment() == QUEUES[:2]  # first of two members, averagely: queues 0 and 1
    assert [(r.mq, r.next_offset) for r in fetched] == [
        (QUEUES[0], 100),
        (QUEUES[1], 7),
    ]  # none stored: the end; stored: there
    assert all(state.owns(r.mq, r.pq) for r in fetched)
    assert inst.heartbeats >= 1 and RequestCode.LOCK_BATCH_MQ not in inst.sent


def test_orderly_rebalance_pulls_only_locked_queues_and_parks_removed_ones_until_their_batch_ends():
    async def go():
        svc, state, inst, fetched = make_service(orderly=True, lockable={QUEUES[0]})
        await svc.rebalance()
        owned = state.assignment()
        pq = state.table[QUEUES[0]]
        pq.consume_locked = True  # a listener call runs on it
        await svc.remove_queue(QUEUES[0])
        parked_while_running = QUEUES[0] in state.parked
        svc.parts.offset_store.update(QUEUES[0], 42)
        pq.consume_locked = False
        svc.batch_done(QUEUES[0], pq)
        await asyncio.sleep(0.01)
        await svc.tasks.close()
        return owned, fetched, parked_while_running, state, inst

    owned, fetched, parked_while_running, state, inst = asyncio.run(go())
    assert owned == [QUEUES[0]] and [r.mq for r in fetched] == [QUEUES[0]]  # queue 1's lock is another's
    assert fetched[0].pq.locked
    assert parked_while_running and state.parked == {} and inst.unlocked == [RequestCode.UNLOCK_BATCH_MQ]
    assert inst.persisted == [(0, 42)]  # its offset stored before the lock was given back


def test_offset_moved_removes_the_queue_only_if_its_process_queue_is_current():
    async def go():
        svc, state, _, fetched = make_service()
        await svc.rebalance()
        old = fetched[0]
        await svc.offset_moved(old.mq, ProcessQueue())  # a stale process queue: nothing removed
        kept = state.owns(old.mq, old.pq)
        await svc.offset_moved(old.mq, old.pq)
        return kept, state, old

    kept, state, old = asyncio.run(go())
    assert kept and old.mq not in state.table and old.pq.dropped


# -- shape ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("module", ["subscription_state", "push_parts", "pull_service", "consume_service",
                                    "rebalance_service", "tasks"])
def test_parts_never_import_the_consumer(module):
    tree = ast.parse((CLIENT / f"{module}.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "push_consumer" not in imported and "pyrocketmq.client.push_consumer" not in imported


def test_subscription_state_never_awaits():
    tree = ast.parse((CLIENT / "subscription_state.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.AsyncFunctionDef, ast.Await))]
    imported = {
        (n.module or "").split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.level == 0
    }
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not imported & {"asyncio", "socket", "threading"}
