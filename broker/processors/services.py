"""The broker services that the send, send-back, pull, consumer, admin and tools processors hold,
declared once.

Such a processor is a keyword-only dataclass subclassing :class:`BrokerServices` and adding its own
fields; ``broker/app.py`` passes every field by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..client_manager import ConsumerManager
    from ..consumer_offset import ConsumerOffsetManager
    from ..settings import BrokerSettings
    from ..stats import BrokerStats
    from ..store.message_store import MessageStore
    from ..subscription_group import SubscriptionGroupManager
    from ..topic_config import TopicConfigManager


@dataclass(kw_only=True, eq=False, repr=False)
class BrokerServices:
    settings: BrokerSettings
    topics: TopicConfigManager
    groups: SubscriptionGroupManager
    offsets: ConsumerOffsetManager
    """The consumer groups' committed offsets."""
    consumers: ConsumerManager
    """The consumer connections of each group."""
    store: MessageStore
    stats: BrokerStats
    """The traffic counters (``VIEW_BROKER_STATS_DATA``, the metrics)."""
