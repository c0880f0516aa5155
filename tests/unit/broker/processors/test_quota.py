"""Quotas in the broker's request path (:class:`QuotaGate`) and their administration
(:class:`QuotaProcessor`, 3101-3104): a user over its quota is answered late, a send held back
before it is stored; others, and requests with no user, go through untouched."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from pyrocketmq.broker.processors.quota import QuotaGate, QuotaProcessor, body_size
from pyrocketmq.broker.quota import Quota, QuotaTable
from pyrocketmq.broker.quota_store import QuotaStore
from pyrocketmq.remoting.code import RequestCode as C, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.server.acl_service import CALLER, USER, UserCaller


class Conn:
    holds_answers = True

    def __init__(self, user: str | None = None) -> None:
        self.attrs: dict[str, object] = {}
        self.closed = False
        if user is not None:
            self.attrs[USER] = UserCaller(None, user, "127.0.0.1")  # type: ignore[arg-type]  # no access needed


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def gate_on(handlers: dict, **quotas: Quota) -> tuple[QuotaGate, list[float]]:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    gate = QuotaGate(QuotaTable(quotas, clock=Clock()), sleep=sleep, skip=frozenset({C.HEART_BEAT}))
    gate.install(handlers)
    return gate, slept


def send(size: int, oneway: bool = False) -> RemotingCommand:
    return RemotingCommand.request(C.SEND_MESSAGE_V2, {"b": "T"}, b"x" * size, oneway=oneway)


def answer(result):
    return asyncio.run(result) if asyncio.iscoroutine(result) else result


def test_within_the_quota_or_without_one_the_handler_answers_at_once() -> None:
    calls = []

    def handler(conn, cmd):
        calls.append(cmd)
        return cmd.response(ResponseCode.SUCCESS)

    handlers = {C.SEND_MESSAGE_V2: handler}
    gate, slept = gate_on(handlers, alice=Quota(produced_bytes_per_second=1000))
    for conn in (Conn("alice"), Conn("bob"), Conn(None)):
        result = handlers[C.SEND_MESSAGE_V2](conn, send(500))
        assert isinstance(result, RemotingCommand) and result.code == ResponseCode.SUCCESS
    assert len(calls) == 3 and slept == []
    meters = gate.table.meters
    assert meters["alice"].produced_bytes == 500 and meters["bob"].produced_bytes == 500
    assert set(meters) == {"alice", "bob"}  # no user: not counted


def test_over_the_quota_a_send_waits_then_is_stored_with_the_acl_record_it_came_with() -> None:
    seen = []

    def handler(conn, cmd):
        seen.append((conn.holds_answers, conn.attrs[USER].username, conn.attrs.get(CALLER)))
        return cmd.response(ResponseCode.SUCCESS)

    handlers = {C.SEND_MESSAGE_V2: handler}
    gate, slept = gate_on(handlers, alice=Quota(produced_bytes_per_second=1000))
    conn = Conn("alice")
    conn.attrs[CALLER] = "alice's account"
    assert handlers[C.SEND_MESSAGE_V2](conn, send(1000)).code == ResponseCode.SUCCESS  # the burst
    pending = handlers[C.SEND_MESSAGE_V2](conn, send(500))
    assert asyncio.iscoroutine(pending) and len(seen) == 1  # not stored yet
    conn.attrs[USER] = UserCaller(None, "root", "127.0.0.1")  # type: ignore[arg-type]  # a later request
    del conn.attrs[CALLER]
    assert answer(pending).code == ResponseCode.SUCCESS
    assert slept == [0.5]
    # run as the request was let in, not holding its answer (the coroutine's result is the answer)
    assert seen[1] == (False, "alice", "alice's account")
    assert conn.holds_answers is True and conn.attrs[USER].username == "root" and CALLER not in conn.attrs
    assert gate.table.meters["alice"].throttled == 1


def test_a_held_send_is_answered_by_its_future() -> None:
    async def run() -> RemotingCommand | None:
        loop = asyncio.get_running_loop()

        def handler(conn, cmd):
            fut = loop.create_future()
            loop.call_soon(fut.set_result, cmd.response(ResponseCode.SUCCESS, "flushed"))
            return fut

        handlers = {C.SEND_MESSAGE: handler}
        _, slept = gate_on(handlers, alice=Quota(produced_bytes_per_second=10))
        result = await handlers[C.SEND_MESSAGE](Conn("alice"), send(100))
        assert slept == [1.0]  # 9 s owed: capped
        return result

    result = asyncio.run(run())
    assert result is not None and result.remark == "flushed"


def test_a_oneway_send_is_counted_never_held() -> None:
    def handler(conn, cmd):
        return None

    handlers = {C.SEND_MESSAGE: handler}
    gate, slept = gate_on(handlers, alice=Quota(produced_bytes_per_second=10))
    for _ in range(3):
        assert handlers[C.SEND_MESSAGE](Conn("alice"), send(100, oneway=True)) is None
    assert slept == [] and gate.table.meters["alice"].produced_bytes == 300


def test_a_pull_counts_its_answers_body_and_its_answer_waits() -> None:
    body = [memoryview(b"m" * 400), memoryview(b"n" * 400)]

    def handler(conn, cmd):
        r = cmd.response(ResponseCode.SUCCESS)
        r.body = list(body)
        return r

    async def held(conn, cmd):
        await asyncio.sleep(0)
        return handler(conn, cmd)

    handlers = {C.PULL_MESSAGE: handler, C.QUERY_MESSAGE: held}
    gate, slept = gate_on(handlers, alice=Quota(consumed_bytes_per_second=1000))
    pull = RemotingCommand.request(C.PULL_MESSAGE, {})
    first = handlers[C.PULL_MESSAGE](Conn("alice"), pull)
    assert isinstance(first, RemotingCommand) and body_size(first) == 800  # within the burst
    later = handlers[C.PULL_MESSAGE](Conn("alice"), pull)
    assert answer(later).body == body and slept == [pytest.approx(0.6)]  # 600 B owed
    assert gate.table.meters["alice"].consumed_bytes == 1600
    assert isinstance(handlers[C.PULL_MESSAGE](Conn("bob"), pull), RemotingCommand) and len(slept) == 1


def test_a_long_polled_pull_is_counted_when_answered() -> None:
    def handler(conn, cmd):
        async def later():
            await asyncio.sleep(0)
            r = cmd.response(ResponseCode.SUCCESS)
            r.body = [memoryview(b"x" * 3000)]
            return r
        return later()

    handlers = {C.PULL_MESSAGE: handler}
    gate, slept = gate_on(handlers, alice=Quota(consumed_bytes_per_second=1000))
    result = answer(handlers[C.PULL_MESSAGE](Conn("alice"), RemotingCommand.request(C.PULL_MESSAGE, {})))
    assert body_size(result) == 3000 and slept == [1.0]


def test_requests_count_on_every_code_but_the_skipped() -> None:
    def handler(conn, cmd):
        return cmd.response(ResponseCode.SUCCESS)

    handlers = {C.GET_MAX_OFFSET: handler, C.HEART_BEAT: handler}
    gate, slept = gate_on(handlers, alice=Quota(requests_per_second=2))
    assert handlers[C.HEART_BEAT] is handler  # skipped (not authenticated): not wrapped
    conn = Conn("alice")
    ask = RemotingCommand.request(C.GET_MAX_OFFSET, {})
    results = [handlers[C.GET_MAX_OFFSET](conn, ask) for _ in range(4)]
    assert [isinstance(r, RemotingCommand) for r in results] == [True, True, False, False]
    for r in results[2:]:
        answer(r)
    assert slept == [0.5, 1.0]


# -- administration -----------------------------------------------------------------------------------
def admin(code: int, body: object = None) -> RemotingCommand:
    return RemotingCommand.request(code, {}, None if body is None else orjson.dumps(body))


@pytest.fixture
def processor(tmp_path) -> QuotaProcessor:
    store = QuotaStore(str(tmp_path))
    return QuotaProcessor(quotas=store, super_caller=lambda conn: conn.attrs.get("super") is True)


def test_a_super_user_sets_reads_lists_and_removes_quotas(processor: QuotaProcessor, tmp_path) -> None:
    root = Conn("root")
    root.attrs["super"] = True
    handlers: dict = {}

    class Registry:
        def register(self, code, handler) -> None:
            handlers[int(code)] = handler

    processor.register(Registry())
    assert set(handlers) == {3101, 3102, 3103, 3104}
    r = processor.handle(root, admin(C.UPDATE_USER_QUOTA, {"username": "alice",
                                                           "producedBytesPerSecond": 51200}))
    assert r.code == ResponseCode.SUCCESS
    assert orjson.loads(r.body) == {"producedBytesPerSecond": 51200, "consumedBytesPerSecond": 0,
                                    "requestsPerSecond": 0}
    processor.handle(root, admin(C.UPDATE_USER_QUOTA, {"username": "alice", "requestsPerSecond": 100}))
    processor.handle(root, admin(C.UPDATE_USER_QUOTA, {"username": "bob", "consumedBytesPerSecond": 1}))
    got = processor.handle(root, admin(C.GET_USER_QUOTA, {"username": "alice"}))
    assert orjson.loads(got.body) == {"username": "alice", "producedBytesPerSecond": 51200,
                                      "consumedBytesPerSecond": 0, "requestsPerSecond": 100}
    listed = orjson.loads(processor.handle(root, admin(C.LIST_USER_QUOTA)).body)
    assert [q["username"] for q in listed] == ["alice", "bob"]
    deleted = processor.handle(root, admin(C.DELETE_USER_QUOTA, {"username": "bob"}))
    assert deleted.code == ResponseCode.SUCCESS
    assert processor.handle(root, admin(C.GET_USER_QUOTA, {"username": "bob"})).body is None
    assert orjson.loads((tmp_path / "quotas.json").read_bytes())["quotas"][0]["username"] == "alice"
    assert processor.quotas.table.get("alice") == Quota(51200, 0, 100)  # in force at once


def test_only_a_super_user_and_only_well_formed_bodies(processor: QuotaProcessor) -> None:
    r = processor.handle(Conn("alice"), admin(C.UPDATE_USER_QUOTA, {"username": "alice"}))
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION,
                                  "only a super user may manage quotas (request code 3101)")
    root = Conn("root")
    root.attrs["super"] = True
    for body, why in [(b"{", "the body is not JSON"), (b"[1]", "the body is not a JSON object"),
                      (orjson.dumps({"requestsPerSecond": 1}), "The username is blank"),
                      (orjson.dumps({"username": "a", "requestsPerSecond": -1}), "requestsPerSecond must be"),
                      (orjson.dumps({"username": "a", "rps": 1}), "unknown quota field 'rps'")]:
        r = processor.handle(root, RemotingCommand.request(C.UPDATE_USER_QUOTA, {}, body))
        assert r.code == ResponseCode.INVALID_PARAMETER and r.remark.startswith(why), r.remark
    assert processor.quotas.table.get("a") is None
