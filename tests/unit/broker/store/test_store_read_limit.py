"""Controller mode's confirm offset: :attr:`MessageStore.read_limit` caps what a pull reads and the
max offset consumers see at the last record that ends within it."""

from __future__ import annotations

from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.reads import readable_end
from pyrocketmq.broker.store.values import GetMessageStatus as S, MessageInner
from pyrocketmq.remoting.message import decode_messages


def _put(store: MessageStore, n: int, queue_id: int = 0) -> list[int]:
    """Ends (commitlog offsets) of ``n`` new records of queue ``queue_id`` of topic T."""
    ends = []
    for i in range(n):
        r = store.put_message(MessageInner.build("T", f"m{i}".encode(), {}, queue_id=queue_id))
        assert r.ok
        ends.append(r.end_offset)
    return ends


def _bodies(store: MessageStore, offset: int) -> list[bytes]:
    g = store.get_message("g", "T", 0, offset, 32)
    return [m.body for b in g.buffers for m in decode_messages(bytes(b))]


def test_a_pull_reads_only_records_within_the_limit(store: MessageStore) -> None:
    ends = _put(store, 5)
    limit: list[int | None] = [ends[2]]
    store.read_limit = lambda: limit[0]
    g = store.get_message("g", "T", 0, 0, 32)
    assert (g.status, g.message_count, g.next_begin_offset, g.max_offset) == (S.FOUND, 3, 3, 3)
    assert store.get_max_offset_in_queue("T", 0) == 3
    # past the limit but written: the end for now (a long-polling pull waits), not an overflow
    for offset in (3, 4, 5):
        g = store.get_message("g", "T", 0, offset, 32)
        assert (g.status, g.next_begin_offset) == (S.OFFSET_OVERFLOW_ONE, offset)
    assert store.get_message("g", "T", 0, 6, 32).status == S.OFFSET_OVERFLOW_BADLY
    limit[0] = ends[3] - 1  # a record ending one byte past the limit is not readable
    assert _bodies(store, 3) == []
    limit[0] = ends[4]
    assert _bodies(store, 3) == [b"m3", b"m4"]
    limit[0] = None  # not a controller-mode master: everything
    assert len(_bodies(store, 0)) == 5 and store.get_max_offset_in_queue("T", 0) == 5


def test_a_limit_before_every_record_reads_nothing(store: MessageStore) -> None:
    _put(store, 2)
    _put(store, 3, queue_id=1)
    store.read_limit = lambda: 0
    assert store.get_message("g", "T", 0, 0, 32).status == S.OFFSET_OVERFLOW_ONE
    assert store.get_max_offset_in_queue("T", 0) == 0 == store.get_max_offset_in_queue("T", 1)


def test_readable_end_is_the_first_record_ending_past_the_limit() -> None:
    units = {i: (i * 100, 100, 0) for i in range(10)}  # offset i ends at (i + 1) * 100
    at = units.get
    assert readable_end(at, 0, 10, 10_000) == 10
    assert readable_end(at, 0, 10, 99) == 0
    assert [readable_end(at, 0, 10, end) for end in (100, 150, 500, 999, 1000)] == [1, 1, 5, 9, 10]
    assert readable_end(at, 7, 10, 300) == 7  # never before where the search starts
    units[3] = (0, 0x7FFFFFFF, 0)  # a filler keeps the numbering and counts as readable
    assert readable_end(at, 0, 10, 500) == 5
