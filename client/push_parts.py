"""The plain objects a push consumer's parts share.

A push consumer is a composition (see :mod:`.push_consumer`): the rebalance service
(:mod:`.rebalance_service`) decides which queues it owns, the fetcher (:mod:`.pull_service`) pulls
them, a consume service (:mod:`.consume_service`) runs the listener. They meet in a
:class:`~.subscription_state.SubscriptionState` and talk through the few callbacks each is
constructed with; what else they need is in :class:`ConsumerParts`. None of them holds the
consumer, so none imports :mod:`.push_consumer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyrocketmq.remoting.body import MessageQueue

from .consumer_stats import ConsumerStats
from .instance import ClientInstance
from .offset_store import OffsetStore
from .settings import PushConsumerSettings
from .subscription_state import SubscriptionState


@dataclass(frozen=True, slots=True)
class ConsumerParts:
    """One started push consumer's group, settings, client instance, offsets, statistics and state."""

    group: str
    settings: PushConsumerSettings
    instance: ClientInstance
    offset_store: OffsetStore
    stats: ConsumerStats
    state: SubscriptionState
    orderly: bool
    tracer: Any = None
    """A :class:`~.trace_dispatch.TraceDispatcher` when ``settings.trace``: listener calls are traced."""

    @property
    def clustering(self) -> bool:
        return self.state.clustering

    async def persist_offset(self, mq: MessageQueue, offset: int, *, sync: bool) -> None:
        """Store ``offset`` of ``mq`` where the group keeps it: on the broker (clustering; oneway
        unless ``sync``) or in the local offsets file (broadcasting)."""
        if self.clustering:
            await self.instance.update_consumer_offset(self.group, mq, offset, oneway=not sync)
        else:
            await self.offset_store.persist(mq)
