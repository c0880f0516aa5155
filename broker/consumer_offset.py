"""Committed consumer offsets: ``topic@group`` → queue id → next offset to consume.

Kept in memory, written to ``config/consumerOffset.json`` (``{"offsetTable":{"T@g":{"0":12}}}``,
RocketMQ's shape) by the broker every few seconds and at shutdown. Offsets only come from
clients; the broker never invents one.
"""

from __future__ import annotations

from pyrocketmq.server.config_file import load_json_file, write_json_file


class ConsumerOffsetManager:
    def __init__(self, path: str) -> None:
        self.path = path
        self.table: dict[str, dict[int, int]] = {}
        self.pulled: dict[str, dict[int, int]] = {}
        """Where each group's last pull of a queue ended (``nextBeginOffset``), as the table is keyed;
        not persisted (Apache's pull offsets): what was pulled and not committed is in flight."""
        self._dirty = False

    def load(self) -> None:
        doc = load_json_file(self.path) or {}
        for key, queues in (doc.get("offsetTable") or {}).items():
            self.table[key] = {int(q): int(o) for q, o in queues.items()}

    def persist(self, force: bool = False) -> None:
        if not (self._dirty or force):
            return
        self._dirty = False
        doc = {"offsetTable": {k: {str(q): o for q, o in v.items()} for k, v in self.table.items()}}
        write_json_file(self.path, doc)

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.table.setdefault(f"{topic}@{group}", {})[queue_id] = offset
        self._dirty = True

    def note_pull(self, group: str, topic: str, queue_id: int, next_offset: int) -> None:
        queues = self.pulled.get(key := f"{topic}@{group}")
        if queues is None:
            queues = self.pulled[key] = {}
        queues[queue_id] = next_offset

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group has none for that queue."""
        return self.table.get(f"{topic}@{group}", {}).get(queue_id, -1)

    def groups_of_topic(self, topic: str) -> set[str]:
        return {k.split("@", 1)[1] for k in self.table if k.split("@", 1)[0] == topic}

    def topics_of_group(self, group: str) -> set[str]:
        return {k.split("@", 1)[0] for k in self.table if k.split("@", 1)[1] == group}

    def offsets(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(f"{topic}@{group}", {}))

    def remove_topic(self, topic: str) -> None:
        for key in [k for k in self.table if k.split("@", 1)[0] == topic]:
            del self.table[key]
            self._dirty = True
