"""The background-service shape every periodic loop uses."""

from __future__ import annotations

import asyncio
import logging

from pyrocketmq.service import Service, Services


def test_rounds_repeat_at_the_interval_and_stop_ends_them():
    async def main():
        calls = []
        s = Service("ticker", lambda: calls.append(1), 0.01)
        s.start()
        await asyncio.sleep(0.1)
        await s.stop()
        n = len(calls)
        await asyncio.sleep(0.05)
        return n, len(calls), s.running

    n, after, running = asyncio.run(main())
    assert 3 <= n == after and not running


def test_wakeup_runs_the_next_round_at_once():
    async def main():
        calls = []
        s = Service("lazy", lambda: calls.append(1), 60.0, first_wait=False)
        s.start()
        await s.wait_running()
        s.wakeup()
        await asyncio.sleep(0.05)
        await s.stop()
        return len(calls)

    assert asyncio.run(main()) == 2


def test_a_failing_round_is_logged_and_the_loop_goes_on(caplog):
    async def main():
        calls = []

        async def flaky():
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("boom")

        s = Service("flaky", flaky, 0.01, first_wait=False)
        s.start()
        await asyncio.sleep(0.08)
        await s.stop()
        return len(calls)

    with caplog.at_level(logging.ERROR, logger="pyrocketmq.service"):
        assert asyncio.run(main()) >= 3
    assert "flaky: round failed" in caplog.text and "boom" in caplog.text


def test_a_round_result_is_not_a_wait_unless_asked():
    async def main():
        calls = []
        s = Service("counting", lambda: calls.append(1) or 0, 60.0, first_wait=False)  # returns 0: not a wait
        s.start()
        await asyncio.sleep(0.05)
        await s.stop()
        return len(calls)

    assert asyncio.run(main()) == 1


def test_a_round_may_choose_the_next_wait():
    async def main():
        waits = iter([0.0, 0.0, 30.0])
        calls = []

        def adaptive():
            calls.append(1)
            return next(waits, 30.0)

        s = Service("adaptive", adaptive, 60.0, first_wait=False, chooses_wait=True)
        s.start()
        await asyncio.sleep(0.05)
        await s.stop()
        return len(calls)

    assert asyncio.run(main()) == 3


def test_stop_cancels_a_long_round_and_waits_for_it():
    async def main():
        ended = asyncio.Event()

        async def long_round():
            try:
                await asyncio.sleep(60)
            finally:
                ended.set()

        s = Service("long", long_round, 1.0, first_wait=False)
        s.start()
        await s.wait_running()
        await asyncio.wait_for(s.stop(), 1)
        return ended.is_set()

    assert asyncio.run(main())


def test_services_stop_in_reverse_order():
    async def main():
        order = []

        class Recorded(Service):
            async def stop(self):
                order.append(self.name)
                await super().stop()

        group = Services([Recorded("first", lambda: None, 1), Recorded("second", lambda: None, 1)])
        group.start()
        await group.stop()
        return order

    assert asyncio.run(main()) == ["second", "first"]


def test_a_wakeup_during_a_round_skips_the_next_wait():
    async def main():
        calls = []
        s: Service

        def round_() -> None:
            calls.append(1)
            if len(calls) == 1:
                s.wakeup()  # no wait in progress: the next one is skipped

        s = Service("self-waking", round_, 60.0, first_wait=False)
        s.start()
        await asyncio.sleep(0.05)
        await s.stop()
        return len(calls)

    assert asyncio.run(main()) == 2


def test_stop_during_a_wait_leaves_no_timer_behind():
    async def main():
        s = Service("sleeper", lambda: None, 60.0, first_wait=False)
        s.start()
        await s.wait_running()
        await asyncio.sleep(0.01)
        await s.stop()
        loop = asyncio.get_running_loop()
        return [h for h in getattr(loop, "_scheduled", []) if not h.cancelled()]

    assert asyncio.run(main()) == []
