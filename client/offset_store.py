"""Consumer offsets of a push consumer: on the brokers (clustering) or in a local file (broadcasting).

Both stores keep a table queue → *next offset to consume* in memory; the consume services update
it as messages are done (never backwards unless asked), and :meth:`persist_all` writes it out
every ``persist_interval`` seconds, on rebalance (for queues given away) and at shutdown.

- :class:`RemoteOffsetStore` (Java ``RemoteBrokerOffsetStore``): reads with QUERY_CONSUMER_OFFSET
  and writes with UPDATE_CONSUMER_OFFSET to the queue's master. A pull also carries the memory
  offset (sysFlag COMMIT_OFFSET), so the broker usually knows it before the periodic persist.
- :class:`LocalOffsetStore` (Java ``LocalFileOffsetStore``): ``<folder>/<group>/offsets.json`` in
  Java's layout ``{"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:123}}``, written
  atomically (temporary file, fsync, rename; the previous version kept as ``offsets.json.bak``).

Reads: ``memory`` answers the table (-1 when absent); ``store`` asks the broker or the file
(-1 when it holds nothing for the queue; errors other than "not found" propagate, so a queue is
not started at a guessed position).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Protocol

from pyrocketmq.remoting.body import MessageQueue, ResetOffsetBody

from .errors import MQError

log = logging.getLogger("pyrocketmq.client")


class OffsetBackend(Protocol):
    """What a remote store needs from the client instance."""

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int: ...

    async def update_consumer_offset(
        self, group: str, mq: MessageQueue, offset: int, *, oneway: bool = False
    ) -> None: ...


class OffsetStore:
    """The in-memory table both stores share."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool = False) -> None:
        """Set ``mq``'s next offset; with ``increase_only`` a smaller value is ignored.

        >>> s = OffsetStore("g"); mq = MessageQueue("T", "b", 0)
        >>> s.update(mq, 10); s.update(mq, 7, increase_only=True); s.read_memory(mq)
        10
        """
        if offset < 0:
            return
        old = self.table.get(mq)
        if old is None or not increase_only or offset > old:
            self.table[mq] = offset

    def read_memory(self, mq: MessageQueue) -> int:
        return self.table.get(mq, -1)

    def remove(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)

    async def load(self) -> None:
        """Read what is persisted (the local file); nothing to do for the remote store."""

    async def read_store(self, mq: MessageQueue) -> int:
        raise NotImplementedError

    async def persist(self, mq: MessageQueue) -> None:
        raise NotImplementedError

    async def persist_all(self, mqs: set[MessageQueue]) -> None:
        raise NotImplementedError


class RemoteOffsetStore(OffsetStore):
    """Offsets kept by the brokers (clustering).

    Example::

        store = RemoteOffsetStore("my-group", client_instance)
        store.update(mq, 42, increase_only=True)
        await store.persist_all({mq})
    """

    def __init__(self, group: str, backend: OffsetBackend) -> None:
        super().__init__(group)
        self.backend = backend

    async def read_store(self, mq: MessageQueue) -> int:
        offset = await self.backend.query_consumer_offset(self.group, mq)
        if offset >= 0:
            self.table[mq] = offset
        return offset

    async def persist(self, mq: MessageQueue) -> None:
        offset = self.table.get(mq)
        if offset is not None:
            await self.backend.update_consumer_offset(self.group, mq, offset, oneway=True)

    async def persist_all(self, mqs: set[MessageQueue]) -> None:
        for mq in sorted(mqs):
            offset = self.table.get(mq)
            if offset is None:
                continue
            try:
                await self.backend.update_consumer_offset(self.group, mq, offset, oneway=True)
            except MQError as e:
                log.warning("group %s: persisting offset %d of %s failed: %s", self.group, offset, mq, e)
        for mq in [m for m in self.table if m not in mqs]:
            del self.table[mq]  # queues given away: their offsets are the new owner's business


class LocalOffsetStore(OffsetStore):
    """Offsets kept in ``<folder>/<group>/offsets.json`` (broadcasting).

    Example::

        store = LocalOffsetStore("my-group", "/var/lib/app/offsets")
        await store.load()
        store.update(mq, 42)
        await store.persist_all({mq})
    """

    def __init__(self, group: str, folder: str | os.PathLike[str]) -> None:
        super().__init__(group)
        self.path = Path(folder) / group / "offsets.json"
        self._persisted: dict[MessageQueue, int] = {}

    def _read_file(self) -> dict[MessageQueue, int]:
        for path in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            try:
                return dict(ResetOffsetBody.from_json(data).offset_table)
            except ValueError as e:
                log.warning("offset file %s is unreadable (%s); trying its backup", path, e)
        return {}

    async def load(self) -> None:
        self._persisted = self._read_file()
        for mq, off in self._persisted.items():
            self.table.setdefault(mq, off)

    async def read_store(self, mq: MessageQueue) -> int:
        self._persisted = self._read_file()
        offset = self._persisted.get(mq, -1)
        if offset >= 0:
            self.table[mq] = offset
        return offset

    async def persist(self, mq: MessageQueue) -> None:
        await self.persist_all(set(self.table) | {mq})

    async def persist_all(self, mqs: set[MessageQueue]) -> None:
        table = dict(self._persisted)
        table.update({mq: off for mq, off in self.table.items() if mq in mqs})
        if table == self._persisted and self.path.exists():
            return
        write_atomically(self.path, ResetOffsetBody(table).to_json())
        self._persisted = table


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` so that a crash leaves the old or the new content (plus ``.bak``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if path.exists():
        os.replace(path, path.with_name(path.name + ".bak"))
    os.replace(tmp, path)
