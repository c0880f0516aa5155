"""Who is connected: consumer groups (members, subscriptions) and producer groups, from heartbeats.

State only: nothing here awaits. A heartbeat registers a connection under its groups; a closed
connection, an UNREGISTER_CLIENT or ``channel_expiry_ms`` of silence removes it. Methods report
whether a group's membership or subscriptions changed so the caller can notify the members
(NOTIFY_CONSUMER_IDS_CHANGED).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pyrocketmq.remoting.body import ConsumerData, SubscriptionData


@dataclass(slots=True)
class ClientChannel:
    client_id: str
    conn: Any
    language: int
    version: int
    last_update_ms: int


@dataclass(slots=True)
class ConsumerGroupInfo:
    group: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    channels: dict[Any, ClientChannel] = field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)
    last_update_ms: int = 0

    def client_ids(self) -> list[str]:
        return sorted({c.client_id for c in self.channels.values()})


class ConsumerManager:
    def __init__(self, channel_expiry_ms: int = 120_000) -> None:
        self.groups: dict[str, ConsumerGroupInfo] = {}
        self.channel_expiry_ms = channel_expiry_ms

    def register(self, client_id: str, conn: Any, language: int, version: int, data: ConsumerData) -> bool:
        """Record a consumer's heartbeat; True when the group's members or subscriptions changed."""
        now = int(time.time() * 1000)
        info = self.groups.get(data.group_name)
        if info is None:
            info = self.groups[data.group_name] = ConsumerGroupInfo(group=data.group_name)
        info.consume_type = data.consume_type
        info.message_model = data.message_model
        info.consume_from_where = data.consume_from_where
        info.last_update_ms = now
        changed = False
        channel = info.channels.get(conn)
        if channel is None:
            info.channels[conn] = ClientChannel(client_id, conn, language, version, now)
            changed = True
        else:
            channel.last_update_ms = now
        new_subs = {s.topic: s for s in data.subscription_data_set}
        old = info.subscriptions
        if set(new_subs) != set(old) or any(old[t].sub_version < s.sub_version for t, s in new_subs.items()):
            changed = changed or set(new_subs) != set(old)
            info.subscriptions = new_subs
        return changed

    def unregister(self, conn: Any, group: str) -> bool:
        info = self.groups.get(group)
        if info is None or info.channels.pop(conn, None) is None:
            return False
        if not info.channels:
            del self.groups[group]
        return True

    def remove_connection(self, conn: Any) -> list[str]:
        """Forget a closed connection; the groups that lost a member."""
        changed = []
        for group, info in list(self.groups.items()):
            if info.channels.pop(conn, None) is not None:
                changed.append(group)
                if not info.channels:
                    del self.groups[group]
        return changed

    def scan_expired(self, now_ms: int | None = None) -> list[tuple[str, Any]]:
        """Drop channels silent for longer than the expiry; (group, conn) pairs removed."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        removed = []
        for group, info in list(self.groups.items()):
            for conn, ch in list(info.channels.items()):
                if now - ch.last_update_ms > self.channel_expiry_ms:
                    del info.channels[conn]
                    removed.append((group, conn))
            if not info.channels:
                del self.groups[group]
        return removed

    def find(self, group: str) -> ConsumerGroupInfo | None:
        return self.groups.get(group)

    def subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.groups.get(group)
        return None if info is None else info.subscriptions.get(topic)


class ProducerManager:
    def __init__(self, channel_expiry_ms: int = 120_000) -> None:
        self.groups: dict[str, dict[Any, ClientChannel]] = {}
        self.channel_expiry_ms = channel_expiry_ms

    def register(self, client_id: str, conn: Any, language: int, version: int, group: str) -> None:
        now = int(time.time() * 1000)
        channels = self.groups.setdefault(group, {})
        ch = channels.get(conn)
        if ch is None:
            channels[conn] = ClientChannel(client_id, conn, language, version, now)
        else:
            ch.last_update_ms = now

    def unregister(self, conn: Any, group: str) -> None:
        channels = self.groups.get(group)
        if channels is not None:
            channels.pop(conn, None)
            if not channels:
                del self.groups[group]

    def remove_connection(self, conn: Any) -> None:
        for group in list(self.groups):
            self.unregister(conn, group)

    def scan_expired(self, now_ms: int | None = None) -> int:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        n = 0
        for group, channels in list(self.groups.items()):
            for conn, ch in list(channels.items()):
                if now - ch.last_update_ms > self.channel_expiry_ms:
                    del channels[conn]
                    n += 1
            if not channels:
                del self.groups[group]
        return n
