"""Store test helpers: tiny segments (4 KiB commitlog, 10 units per consume-queue file)."""

from __future__ import annotations

import os
from pathlib import Path

from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.settings import FlushDiskType, StoreSettings
from pyrocketmq.broker.store.values import MessageInner, PutResult
from pyrocketmq.remoting.batch import encode_batch
from pyrocketmq.remoting.message import MessageExt, decode_messages

HOST = ("10.0.0.9", 10911)
SEGMENT = 4096
UNITS = 10


def make_settings(root: Path | str, **kw: object) -> StoreSettings:
    s = StoreSettings(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=SEGMENT,
        mapped_file_size_consume_queue=UNITS * 20,
        physical_memory_bytes=1 << 40,
    )
    for k, v in kw.items():
        if k == "sync":
            s.flush.flush_disk_type = FlushDiskType.SYNC_FLUSH if v else FlushDiskType.ASYNC_FLUSH
        else:
            setattr(s, k, v)
    return s


def open_store(settings: StoreSettings) -> MessageStore:
    store = MessageStore(settings, HOST)
    store.load()
    return store


def crash(store: MessageStore) -> None:
    """Abandon the store like a killed process: no flush, no checkpoint, the abort file stays.

    (Written bytes are in the page cache, as after a process crash; tests then damage files to
    stand for what a power loss would leave.)"""
    store.clean_service.shutdown()
    store.flush_service._stopped.set()
    store.flush_service._event.set()
    if store.flush_service._thread is not None:
        store.flush_service._thread.join()
    store.commit_log.close()
    for cq in store.consume_queues():
        cq.close()


def put(
    store: MessageStore,
    topic: str = "T",
    queue_id: int = 0,
    body: bytes = b"x",
    tags: str | None = None,
    **props: str,
) -> PutResult:
    p = dict(props)
    if tags is not None:
        p["TAGS"] = tags
    r = store.put_message(MessageInner.build(topic, body, p, queue_id=queue_id, born_timestamp=1))
    assert r.ok, r
    return r


def put_batch(
    store: MessageStore, topic: str, queue_id: int, items: list[tuple[bytes, dict[str, str]]]
) -> PutResult:
    """A batch send of ``items`` (body, properties) into one queue, as the send processor hands it over."""
    body = encode_batch([(b, 0, p) for b, p in items])
    return store.put_batch(
        MessageInner(topic, body, properties_bytes=b"", queue_id=queue_id, born_timestamp=1)
    )


def read_queue(
    store: MessageStore, topic: str = "T", queue_id: int = 0, start: int | None = None
) -> list[MessageExt]:
    """Every message of a queue, pulled the way a consumer does."""
    offset = store.get_min_offset_in_queue(topic, queue_id) if start is None else start
    out: list[MessageExt] = []
    for _ in range(10_000):
        g = store.get_message("g", topic, queue_id, offset, 32)
        if not g.found:
            if g.next_begin_offset > offset and g.status.name in (
                "NO_MATCHED_MESSAGE",
                "MESSAGE_WAS_REMOVING",
            ):
                offset = g.next_begin_offset
                continue
            return out
        out += decode_messages(b"".join(bytes(b) for b in g.buffers))
        offset = g.next_begin_offset
    raise AssertionError("queue never ended")


def check_queue_consistent(store: MessageStore, topic: str, queue_id: int) -> list[MessageExt]:
    """Units are dense, point at distinct records that carry the right queue, offset and position."""
    cq = store.find_consume_queue(topic, queue_id)
    if cq is None:
        return []
    seen: set[int] = set()
    msgs = []
    for off in range(cq.min_offset, cq.max_offset):
        unit = cq.get(off)
        assert unit is not None, off
        phys, size, _ = unit
        assert phys not in seen, f"duplicate unit for commitlog offset {phys}"
        seen.add(phys)
        m = store.look_message(phys)
        assert m is not None, f"unit {off} points at nothing ({phys})"
        assert (m.topic, m.queue_id, m.queue_offset, m.commitlog_offset, m.store_size) == (
            topic,
            queue_id,
            off,
            phys,
            size,
        )
        msgs.append(m)
    return msgs


def segment_paths(settings: StoreSettings) -> list[str]:
    d = settings.commit_log_dir
    return [os.path.join(d, n) for n in sorted(os.listdir(d))]
