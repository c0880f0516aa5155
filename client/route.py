"""From a topic's route (``TopicRouteData``) to the queues a client writes and reads, and queue choice.

Rules (Apache RocketMQ 4.9, ``MQClientInstance.topicRouteData2TopicPublishInfo``):

- **Publishing** uses, for every queue data (sorted by broker name) whose ``perm`` has the WRITE bit
  and whose broker has a master (broker id 0), queues ``0 .. writeQueueNums-1``.
  If the route carries ``orderTopicConf`` (``"broker-a:4;broker-b:4"``), that list replaces the
  queue data and the topic is *ordered*.
- **Subscribing** uses every queue data with the READ bit: queues ``0 .. readQueueNums-1``.
- **Queue choice** for a send is round-robin per topic, skipping brokers the latency fault
  tolerance marks unavailable and, on a retry, the broker that just failed; when every broker is
  to be avoided it still picks one (sending somewhere beats not sending).
- **Sharding**: a key picks ``abs(javaHash(key)) % len(queues)`` — the same queue the Java client's
  ``SelectMessageQueueByHash`` picks, so Java and Python producers keep one key's messages in order.

Everything here is pure (no I/O, no awaits).
"""

from __future__ import annotations

import copy
import itertools
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyrocketmq.remoting.body import BrokerData, MessageQueue, TopicRouteData
from pyrocketmq.remoting.message import tags_code
from pyrocketmq.remoting.names import PERM_INHERIT, PERM_READ, PERM_WRITE

MASTER_ID = 0


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


def perm_to_string(perm: int) -> str:
    """``6`` → ``"RW-"`` (as mqadmin prints perms)."""
    return (
        ("R" if perm & PERM_READ else "-")
        + ("W" if perm & PERM_WRITE else "-")
        + ("X" if perm & PERM_INHERIT else "-")
    )


class _Counter:
    """A thread-safe round-robin counter starting at a random point (as Java's ``ThreadLocalIndex``)."""

    __slots__ = ("_it", "_lock")

    def __init__(self, start: int | None = None) -> None:
        self._it = itertools.count(random.randrange(1 << 16) if start is None else start)
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            return next(self._it)


@dataclass(slots=True)
class TopicPublishInfo:
    """The queues a producer may write to for one topic, and the round-robin position."""

    topic: str
    queues: list[MessageQueue] = field(default_factory=list)
    order_topic: bool = False
    #: The route it was computed from (None: built by hand or from the default topic's route).
    route: TopicRouteData | None = None
    counter: _Counter = field(default_factory=_Counter, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return bool(self.queues)

    def broker_names(self) -> list[str]:
        return sorted({q.broker_name for q in self.queues})

    def select_queue(
        self,
        last_broker: str | None = None,
        is_available: Callable[[str], bool] | None = None,
    ) -> MessageQueue:
        """The next queue, round-robin; see :func:`select_queue`."""
        return select_queue(self.queues, self.counter.next(), last_broker, is_available)


def select_queue(
    queues: Sequence[MessageQueue],
    start: int,
    last_broker: str | None = None,
    is_available: Callable[[str], bool] | None = None,
) -> MessageQueue:
    """Pick a queue round-robin from position ``start``.

    Preference, first match wins: available and not ``last_broker``; available; not
    ``last_broker``; any (plain round-robin).

    >>> from pyrocketmq.remoting.body import MessageQueue
    >>> qs = [MessageQueue(topic="T", broker_name=b, queue_id=0) for b in "ab"]
    >>> select_queue(qs, 0, last_broker="a").broker_name
    'b'
    """
    n = len(queues)
    if n == 0:
        raise ValueError("no queue to choose from")
    order = [queues[(start + i) % n] for i in range(n)]
    avail = is_available or (lambda _b: True)
    for q in order:
        if q.broker_name != last_broker and avail(q.broker_name):
            return q
    for q in order:
        if avail(q.broker_name):
            return q
    for q in order:
        if q.broker_name != last_broker:
            return q
    return order[0]


def java_hash(key: str) -> int:
    """Java ``String.hashCode()`` (signed 32-bit)."""
    return tags_code(key)


def select_by_key(queues: Sequence[MessageQueue], key: str | int | bytes) -> MessageQueue:
    """The queue for a sharding key: stable for a given queue list, same as Java's hash selector.

    >>> from pyrocketmq.remoting.body import MessageQueue
    >>> qs = [MessageQueue(topic="T", broker_name="a", queue_id=i) for i in range(4)]
    >>> select_by_key(qs, "order-42").queue_id == select_by_key(qs, "order-42").queue_id
    True
    """
    if not queues:
        raise ValueError("no queue to choose from")
    if isinstance(key, bytes):
        key = key.decode("utf-8", "replace")
    h = java_hash(key) if isinstance(key, str) else int(key)
    return queues[abs(h) % len(queues)]


def publish_info_from_route(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    """The queues a producer writes to, by the rules in the module docstring."""
    info = TopicPublishInfo(topic=topic, route=route)
    conf = getattr(route, "order_topic_conf", None)
    if conf:
        for item in conf.split(";"):
            name, sep, num = item.partition(":")
            if not sep or not name.strip():
                continue
            try:
                count = int(num)
            except ValueError:
                continue
            info.queues.extend(
                MessageQueue(topic=topic, broker_name=name.strip(), queue_id=i) for i in range(count)
            )
        info.order_topic = True
        return info
    brokers = {b.broker_name: b for b in route.broker_datas}
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if not is_writeable(qd.perm):
            continue
        bd = brokers.get(qd.broker_name)
        if bd is None or MASTER_ID not in _addrs(bd):
            continue
        info.queues.extend(
            MessageQueue(topic=topic, broker_name=qd.broker_name, queue_id=i)
            for i in range(qd.write_queue_nums)
        )
    return info


def subscribe_queues_from_route(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """The queues a consumer reads: every readable queue data, ``readQueueNums`` queues each."""
    out: list[MessageQueue] = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if is_readable(qd.perm):
            out.extend(
                MessageQueue(topic=topic, broker_name=qd.broker_name, queue_id=i)
                for i in range(qd.read_queue_nums)
            )
    return out


def limit_default_route(route: TopicRouteData, queue_nums: int) -> TopicRouteData:
    """The default topic's (TBW102) route as a stand-in for a topic that does not exist yet.

    Each queue data is cut to ``min(queue_nums, readQueueNums)`` read and write queues: the broker
    creates the new topic with that many, so a send to a higher queue id would fail.
    """
    out = copy.deepcopy(route)
    for qd in out.queue_datas:
        n = min(queue_nums, qd.read_queue_nums)
        qd.read_queue_nums = n
        qd.write_queue_nums = n
    return out


def _addrs(broker_data: BrokerData) -> dict[int, str]:
    return {int(k): v for k, v in broker_data.broker_addrs.items()}


def broker_addr_table(routes: Sequence[TopicRouteData]) -> dict[str, dict[int, str]]:
    """broker name → {broker id → address}, merged over routes (later routes win)."""
    table: dict[str, dict[int, str]] = {}
    for route in routes:
        for bd in route.broker_datas:
            addrs = _addrs(bd)
            if addrs:
                table[bd.broker_name] = addrs
    return table


def choose_broker_addr(
    addrs: dict[int, str] | None, broker_id: int = MASTER_ID, *, only_this: bool = False
) -> tuple[str, int] | None:
    """``(address, id)`` of ``broker_id`` in ``addrs``; without ``only_this``, any other if it is missing.

    A slave answers pulls when the master is gone (``suggestWhichBrokerId``); the fallback picks the
    master first, then the lowest slave id.
    """
    if not addrs:
        return None
    if broker_id in addrs:
        return addrs[broker_id], broker_id
    if only_this:
        return None
    for bid in sorted(addrs):
        return addrs[bid], bid
    return None
