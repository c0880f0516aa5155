"""One dispatch path: a live put, a batch put, a replica append and crash recovery all hand each
record to the same DispatchChain, so one extra dispatcher sees the same records from all four."""

from __future__ import annotations

from pathlib import Path

from pyrocketmq.broker.store.dispatch import DispatchBatch, DispatchRequest
from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.values import MessageInner
from pyrocketmq.remoting.message import SysFlag

from .storekit import HOST, crash, make_settings, open_store, put, put_batch


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int, int, int, int]] = []

    def dispatch(self, req: DispatchRequest) -> None:
        self.seen.append((req.topic, req.queue_id, req.queue_offset, req.phys, req.size, req.tags_code))

    def dispatch_batch(self, batch: DispatchBatch) -> None:
        for req in batch.requests():
            self.dispatch(req)


def fill(store: MessageStore) -> None:
    for i in range(5):
        put(store, "T", i % 2, b"m%d" % i, tags="a" if i % 2 else "b", KEYS=f"k{i}")
    assert put_batch(store, "B", 1, [(b"b%d" % i, {"KEYS": f"bk{i}"}) for i in range(3)]).ok
    half = MessageInner.build("T", b"half", {}, sys_flag=SysFlag.TRANSACTION_PREPARED)
    assert store.put_message(half).ok  # stored, never dispatched


def test_live_batch_replica_and_recovery_dispatch_the_same_records(tmp_path: Path) -> None:
    master = open_store(make_settings(tmp_path / "master"))
    live = Recorder()
    master.dispatch.add(live)
    fill(master)
    assert [s[:3] for s in live.seen] == [
        ("T", 0, 0),
        ("T", 1, 0),
        ("T", 0, 1),
        ("T", 1, 1),
        ("T", 0, 2),
        ("B", 1, 0),
        ("B", 1, 1),
        ("B", 1, 2),
    ]

    replica = open_store(make_settings(tmp_path / "slave"))
    copied = Recorder()
    replica.dispatch.add(copied)
    data = master.get_commit_log_data(0, master.get_max_phy_offset())
    assert data is not None
    half_way = len(data) // 2 + 3  # records split between two frames dispatch once, when whole
    assert replica.append_replica(0, data[:half_way]) and replica.append_replica(half_way, data[half_way:])
    assert copied.seen == live.seen
    replica.shutdown()

    crash(master)
    reopened = MessageStore(make_settings(tmp_path / "master"), HOST)
    recovered = Recorder()
    reopened.dispatch.add(recovered)
    reopened.load()
    try:
        assert recovered.seen == live.seen
        assert reopened.get_max_offset_in_queue("B", 1) == 3
    finally:
        reopened.shutdown()


def test_the_listener_hook_is_one_more_dispatcher(tmp_path: Path) -> None:
    store = open_store(make_settings(tmp_path))
    calls = []
    store.on_dispatch = lambda *a: calls.append(a[:3])
    put(store, "T", 3)
    store.on_dispatch = None
    put(store, "T", 3)
    try:
        assert calls == [("T", 3, 1)]
        assert store.dispatch.last_timestamp > 0
    finally:
        store.shutdown()
