"""The timer's book of recalls: keys kept until no message due at or before theirs can still come,
saved and read back with the timer's progress; and the timer service reading every recall marker
before it delivers anything (on a real store with an injected clock)."""

from __future__ import annotations

import pytest

from pyrocketmq.broker import timer_service
from pyrocketmq.broker.store import message_store as ms_module
from pyrocketmq.broker.store.values import MessageInner
from pyrocketmq.broker.timer_recall import RECALL_QUEUE, RecallBook, recall_marker
from pyrocketmq.broker.timer_service import TimerService
from pyrocketmq.remoting.names import TIMER_TOPIC

from .store.storekit import make_settings, open_store

T0 = 1_700_000_000_000


def test_a_key_stays_until_nothing_due_at_or_before_it_is_pending():
    book = RecallBook()
    book.add("T+a", 100)
    book.add("T+b", 200)
    book.add("T+a", 50)  # a second marker for the same message: the later time holds
    assert book.prune(100) == 0  # a message due at 100 may still be pending
    assert book.prune(101) == 1 and "T+a" not in book and "T+b" in book
    assert book.prune(None) == 1 and len(book) == 0  # nothing pending at all
    book.add("T+c", 300)
    book.add("T+c", 400)  # a second marker naming a later time: kept until past it
    assert book.prune(350) == 0 and book.prune(401) == 1


def test_the_book_round_trips_through_the_checkpoint():
    book = RecallBook(7, {"T+a": 100})
    assert RecallBook.from_json(book.as_json()) == book
    assert RecallBook.from_json(None) == RecallBook() == RecallBook.from_json({})
    for bad in ([1], {"keys": [1]}, {"scan": "x"}, {"keys": {"k": "soon"}}):
        with pytest.raises((TypeError, ValueError)):
            RecallBook.from_json(bad)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(ms_module, "_now_ms", lambda: T0)
    s = open_store(make_settings(tmp_path / "store"))
    yield s
    s.shutdown()


def _timer_message(store, uniq: str, due: int) -> None:
    props = {"UNIQ_KEY": uniq, "TIMER_DELIVER_MS": str(due)}
    assert store.put_message(MessageInner.build("T", uniq.encode(), props, queue_id=0)).timer_due_ms == due


def test_no_delivery_before_every_marker_is_read(store, tmp_path, monkeypatch):
    monkeypatch.setattr(timer_service, "BATCH", 1)
    for uniq in ("a", "b", "c"):
        _timer_message(store, uniq, T0 + 1_000)
    for uniq in ("a", "b"):
        assert store.put_message(recall_marker("T", uniq, T0 + 1_000, producer_group=None, now_ms=T0)).ok
    assert store.get_max_offset_in_queue(TIMER_TOPIC, RECALL_QUEUE) == 2
    timer = TimerService(store, str(tmp_path / "timerCheckpoint.json"), clock=lambda: T0 + 5_000)
    timer.load()
    assert timer.turn() == 0 and timer.delivered_count + timer.recalled_count == 0  # one marker of two read
    for _ in range(8):
        timer.turn()
    assert (timer.recalled_count, timer.delivered_count) == (2, 1)
    assert timer.progress_json()["recall"] == {"scan": 2, "keys": {}}
