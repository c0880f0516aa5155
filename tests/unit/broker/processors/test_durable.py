"""SYNC_FLUSH answers: DurableWaiters on the loop, FlushService.flush_to on the flush thread."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from pyrocketmq.broker.processors.durable import DurableWaiters
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand

from ..store.storekit import make_settings, open_store, put


def _response(n: int) -> RemotingCommand:
    return RemotingCommand(code=ResponseCode.SUCCESS, remark=str(n))


class _Asked:
    def __init__(self) -> None:
        self.offsets: list[int] = []

    def __call__(self, offset: int) -> None:
        self.offsets.append(offset)


async def _from_thread(fn) -> None:  # type: ignore[no-untyped-def]
    t = threading.Thread(target=fn)
    t.start()
    await asyncio.to_thread(t.join)


def test_a_sync_answers_every_send_it_covers_in_order_and_no_other() -> None:
    async def main() -> None:
        asked = _Asked()
        w = DurableWaiters(asked, timeout=5)
        futs = [w.wait(end, _response(end)) for end in (100, 200, 300)]
        assert asked.offsets == [100, 200, 300] and len(w) == 3
        await _from_thread(lambda: w.on_durable(250, True, 300))
        await asyncio.sleep(0.01)
        assert [f.done() for f in futs] == [True, True, False]
        assert [f.result().code for f in futs[:2]] == [ResponseCode.SUCCESS] * 2
        await _from_thread(lambda: w.on_durable(300, True, 300))
        assert (await futs[2]).remark == "300" and len(w) == 0
        # already durable when it asks: answered at once, nothing queued
        late = w.wait(280, _response(280))
        assert late.done() and late.result().code == ResponseCode.SUCCESS and len(w) == 0

    asyncio.run(main())


def test_a_failed_sync_answers_what_it_was_meant_to_cover_with_flush_disk_timeout() -> None:
    async def main() -> None:
        w = DurableWaiters(_Asked(), timeout=5)
        futs = [w.wait(end, _response(end)) for end in (100, 200, 300)]
        await _from_thread(lambda: w.on_durable(100, False, 200))
        await asyncio.sleep(0.01)
        assert futs[0].result().code == ResponseCode.SUCCESS
        assert futs[1].result().code == ResponseCode.FLUSH_DISK_TIMEOUT
        assert futs[1].result().remark == "flush disk timeout"
        assert not futs[2].done(), "a send after the failed sync's target still waits for the next"
        await _from_thread(lambda: w.on_durable(300, True, 300))
        assert (await futs[2]).code == ResponseCode.SUCCESS

    asyncio.run(main())


def test_a_send_not_flushed_in_time_is_answered_flush_disk_timeout_by_one_timer() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        w = DurableWaiters(_Asked(), timeout=0.05)
        first = w.wait(100, _response(100))
        await asyncio.sleep(0.03)
        second = w.wait(200, _response(200))
        assert (await asyncio.wait_for(first, 1)).code == ResponseCode.FLUSH_DISK_TIMEOUT
        assert not second.done(), "its own deadline is later"
        started = loop.time()
        assert (await asyncio.wait_for(second, 1)).code == ResponseCode.FLUSH_DISK_TIMEOUT
        assert loop.time() - started < 0.5 and len(w) == 0

    asyncio.run(main())


class _Heard:
    def __init__(self) -> None:
        self.durable: list[tuple[int, bool, int]] = []
        self.cuts: list[int] = []

    def on_durable(self, offset: int, ok: bool, attempted: int) -> None:
        self.durable.append((offset, ok, attempted))

    def on_cut(self, offset: int) -> None:
        self.cuts.append(offset)


def test_a_cut_fails_the_sends_past_it_and_rewinds_what_counts_as_durable() -> None:
    async def main() -> None:
        w = DurableWaiters(_Asked(), timeout=5)
        futs = [w.wait(end, _response(end)) for end in (100, 200, 300)]
        w.on_durable(250, True, 300)  # the drain it schedules has not run yet
        w.on_cut(150)
        assert [f.result().code for f in futs] == [ResponseCode.SUCCESS, ResponseCode.SUCCESS,
                                                  ResponseCode.FLUSH_DISK_TIMEOUT]
        again = w.wait(180, _response(180))
        assert not again.done(), "written again after the cut: it waits for a sync"
        await asyncio.sleep(0.01)  # the drain scheduled before the cut runs and answers nothing more
        assert not again.done()
        w.on_durable(180, True, 180)
        assert (await asyncio.wait_for(again, 1)).code == ResponseCode.SUCCESS

    asyncio.run(main())


def test_the_store_tells_the_listener_about_a_cut(tmp_path: Path) -> None:
    store = open_store(make_settings(tmp_path, sync=True))
    heard = _Heard()
    try:
        ends = [put(store, body=b"m" * 50).end_offset for _ in range(3)]
        store.watch_durable(heard)
        store.flush_to(ends[-1])
        store.flush_service.run_once()
        assert store.flush_service.flushed_offset >= ends[-1]
        store.truncate_to(ends[0], whole=True)
        assert heard.cuts == [ends[0]] and store.flush_service.flushed_offset == ends[0]
    finally:
        store.shutdown()


def test_flush_to_syncs_once_for_many_and_tells_the_listener_once(tmp_path: Path) -> None:
    store = open_store(make_settings(tmp_path, sync=True))
    listener = _Heard()
    heard = listener.durable
    try:
        ends = [put(store, body=b"m" * 50).end_offset for _ in range(10)]
        store.watch_durable(listener)
        for end in ends:
            store.flush_to(end)
        before = store.commit_log.queue.sync_count
        store.flush_service.run_once()
        assert store.commit_log.queue.sync_count == before + 1
        assert heard == [(store.commit_log.queue.flushed_where, True, ends[-1])]
        assert heard[0][0] >= ends[-1]
        store.flush_service.run_once(now_ms=0)  # nothing asked since: the listener hears nothing
        assert len(heard) == 1
    finally:
        store.shutdown()


def test_sends_from_the_loop_are_answered_by_the_flush_thread_in_few_syncs(tmp_path: Path) -> None:
    store = open_store(make_settings(tmp_path, sync=True))
    store.start()

    async def main() -> list[RemotingCommand]:
        w = DurableWaiters(store.flush_to, timeout=5)
        store.watch_durable(w)
        futs = [w.wait(put(store, body=b"x" * 100).end_offset, _response(i)) for i in range(300)]
        return list(await asyncio.wait_for(asyncio.gather(*futs), 10))

    try:
        before = store.commit_log.queue.sync_count
        answers = asyncio.run(main())
        assert [a.remark for a in answers] == [str(i) for i in range(300)]
        assert all(a.code == ResponseCode.SUCCESS for a in answers)
        syncs = store.commit_log.queue.sync_count - before
        assert 1 <= syncs < 300, syncs
    finally:
        store.shutdown()


def test_held_requests_are_answered_on_their_connection_by_sync_cut_and_timer() -> None:
    """The future-less form: the connection keeps each request and the waiters answer it there."""
    from pyrocketmq.remoting.command import FrameDecoder
    from pyrocketmq.remoting.transport import Connection
    from tests.helpers.transport import RecordingTransport

    async def main() -> None:
        conn = Connection({}, name="test")
        transport = RecordingTransport()
        conn.connection_made(transport)  # type: ignore[arg-type]
        w = DurableWaiters(_Asked(), timeout=0.2)
        cmds = [RemotingCommand.request(10, {}) for _ in range(4)]
        for i, c in enumerate(cmds):
            c.opaque = 1000 + i
        assert [
            w.hold(end, conn, c, _response(end)) for end, c in zip((100, 200, 300, 400), cmds, strict=True)
        ] == [True] * 4
        assert conn.in_flight == 4
        await _from_thread(lambda: w.on_durable(200, True, 200))
        await asyncio.sleep(0.02)
        w.on_cut(300)  # 400 is gone with the cut
        await asyncio.sleep(0.4)  # 300 is never synced: its timer answers it
        answers = {a.opaque: a for a in FrameDecoder().feed(bytes(transport.written))}
        codes = [answers[c.opaque].code for c in cmds]
        assert codes == [ResponseCode.SUCCESS, ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT,
                         ResponseCode.FLUSH_DISK_TIMEOUT]
        assert conn.in_flight == 0 and len(w) == 0
        assert w.hold(150, conn, RemotingCommand.request(10, {}), _response(150)) is False, "already durable"

    asyncio.run(main())


def test_a_send_already_covered_by_a_periodic_flush_is_still_answered(tmp_path: Path) -> None:
    """The periodic flush can sync a message between its put and its flush_to: the listener must
    still hear that it is durable (else the send waits for its timeout and gets FLUSH_DISK_TIMEOUT)."""
    store = open_store(make_settings(tmp_path, sync=True))
    listener = _Heard()
    try:
        store.watch_durable(listener)
        end = put(store, body=b"p" * 40).end_offset
        store.flush_service.run_once()  # due: syncs the message; nobody asked yet
        assert store.flush_service.flushed_offset >= end and listener.durable == []
        store.flush_to(end)
        store.flush_service.run_once()
        assert listener.durable and listener.durable[-1][0] >= end and listener.durable[-1][1] is True
    finally:
        store.shutdown()
