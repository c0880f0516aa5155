from __future__ import annotations

import asyncio

from pyrocketmq.broker.long_poll import PullHoldService
from pyrocketmq.broker.processors.pull import parse_tag_expression, tag_filter
from pyrocketmq.remoting.message import tags_code


def test_tag_expressions():
    assert parse_tag_expression("*") is None
    assert parse_tag_expression("") is None
    assert parse_tag_expression(None) is None
    codes = parse_tag_expression("TagA || TagB ||")
    assert codes == {tags_code("TagA"), tags_code("TagB")}
    match = tag_filter(codes)
    assert match(tags_code("TagA")) and not match(tags_code("TagC"))


def test_hold_woken_by_matching_dispatch_only():
    async def run():
        svc = PullHoldService()
        only_a = tag_filter(parse_tag_expression("A"))
        waiter = svc.hold("T", 0, 5, only_a, 5.0)
        assert svc.held_count == 1  # held from the call on, before the loop turns
        svc.notify("T", 1, 10, tags_code("A"))  # other queue
        svc.notify("T", 0, 5, tags_code("A"))  # not past the offset asked for
        svc.notify("T", 0, 6, tags_code("B"))  # other tag
        await asyncio.sleep(0.01)
        assert not waiter.done()
        svc.notify("T", 0, 6, tags_code("A"))
        assert await waiter is True
        await asyncio.sleep(0)
        assert svc.held_count == 0

    asyncio.run(run())


def test_hold_times_out_and_is_forgotten():
    async def run():
        svc = PullHoldService()
        assert await svc.hold("T", 0, 0, None, 0.05) is False
        await asyncio.sleep(0)
        assert svc.held_count == 0

    asyncio.run(run())


def test_a_cancelled_hold_is_forgotten_and_a_later_message_is_harmless():
    async def run():
        svc = PullHoldService()
        waiter = svc.hold("T", 0, 0, None, 5.0)
        waiter.cancel()
        await asyncio.sleep(0)
        assert svc.held_count == 0
        svc.notify("T", 0, 1, None)

    asyncio.run(run())


def test_shutdown_answers_every_held_pull():
    async def run():
        svc = PullHoldService()
        held = [svc.hold("T", q, 0, None, 5.0) for q in range(3)]
        svc.wake_all()
        assert [await h for h in held] == [True, True, True]

    asyncio.run(run())


def test_strip_property_removes_only_that_pair():
    from pyrocketmq.remoting.message import strip_property

    assert strip_property(b"WAIT\x01true\x02TAGS\x01a", b"WAIT") == b"TAGS\x01a"
    assert strip_property(b"TAGS\x01a\x02WAIT\x01true", b"WAIT") == b"TAGS\x01a"
    assert strip_property(b"TAGS\x01a\x02WAIT\x01true\x02KEYS\x01k", b"WAIT") == b"TAGS\x01a\x02KEYS\x01k"
    assert strip_property(b"XWAIT\x01true\x02TAGS\x01a", b"WAIT") == b"XWAIT\x01true\x02TAGS\x01a"
    assert strip_property(b"WAIT\x01true", b"WAIT") == b""
    assert strip_property(b"", b"WAIT") == b""
