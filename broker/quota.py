"""Per-user quotas (beyond Apache RocketMQ, which has none): Kafka's client quotas for ACL 2.0 users.

A user's :class:`Quota` limits its produced bytes (the bodies of its sends, batches whole), its
consumed bytes (the bodies of its pull answers) and its requests, each per second; 0 is no limit.
Each limit is a token bucket (:class:`Bucket`) holding at most one second of the rate
(``burst_seconds``): a user may go that far ahead of its rate at once, and what it takes beyond
it is a debt, paid back at the rate. :meth:`QuotaTable.charge` takes what one request cost and
answers how long its answer must wait for the user's debt to be paid, at most ``max_delay``; the
rest of the debt stays in the bucket and delays the next requests. A throttled client is slowed,
never refused: a client waiting for each answer ends up at its rate.

Pure: no I/O, no event loop; the clock is given (``time.monotonic`` by default). The broker keeps
quotas in ``config/quotas.json`` (:mod:`.quota_store`) and delays answers in
:mod:`.processors.quota`.

>>> t = [0.0]
>>> table = QuotaTable({"alice": Quota(requests_per_second=2)}, clock=lambda: t[0])
>>> [table.charge("alice") for _ in range(4)]   # 2 at once (a second's burst), then 0.5 s each
[0.0, 0.0, 0.5, 1.0]
>>> table.charge("bob")                         # no quota: counted, never delayed
0.0
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

FIELDS = ("producedBytesPerSecond", "consumedBytesPerSecond", "requestsPerSecond")
"""A quota's keys, as its JSON (``QuotaInfo``) names them."""
MAX_DELAY = 1.0
"""Seconds one answer waits at most (below the Java client's 3 s default send timeout); the debt
beyond it delays the next answers."""
BURST_SECONDS = 1.0
"""How far ahead of its rate a user may go at once: one second of it."""


class QuotaError(ValueError):
    """A quota that is not well formed (its message says what is wrong)."""


@dataclass(frozen=True, slots=True)
class Quota:
    """One user's limits per second; 0 is none."""

    produced_bytes_per_second: float = 0.0
    consumed_bytes_per_second: float = 0.0
    requests_per_second: float = 0.0

    @property
    def unlimited(self) -> bool:
        return not (self.produced_bytes_per_second or self.consumed_bytes_per_second
                    or self.requests_per_second)

    def to_info(self) -> dict[str, float]:
        """The JSON form: every limit, 0 for none (integers stay integers)."""
        return {k: _number(v) for k, v in zip(FIELDS, self._values(), strict=True)}

    def _values(self) -> tuple[float, float, float]:
        return self.produced_bytes_per_second, self.consumed_bytes_per_second, self.requests_per_second

    def merged(self, info: Mapping[str, Any]) -> Quota:
        """This quota with the limits ``info`` names replaced (the others kept); :class:`QuotaError`
        when ``info`` names something else or a limit that is not a number ≥ 0."""
        if not isinstance(info, Mapping):
            raise QuotaError("a quota is a JSON object")
        unknown = sorted(k for k in info if k not in FIELDS and k != "username")
        if unknown:
            raise QuotaError(f"unknown quota field {str(unknown[0])[:64]!r} (known: {', '.join(FIELDS)})")
        values = list(self._values())
        for i, key in enumerate(FIELDS):
            if key in info:
                values[i] = _limit(key, info[key])
        return Quota(*values)

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> Quota:
        """The quota a QuotaInfo names (an absent limit is 0)."""
        return cls().merged(info)


def _limit(key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise QuotaError(f"{key} must be a number, not {str(value)[:40]!r}")
    if not math.isfinite(value) or value < 0:
        raise QuotaError(f"{key} must be 0 (no limit) or more, not {value}")
    return float(value)


def _number(value: float) -> float:
    return int(value) if float(value).is_integer() else value


class Bucket:
    """A token bucket that may go into debt: ``rate`` tokens a second, at most ``capacity`` held.

    >>> b = Bucket(rate=10, capacity=10, now=0.0)
    >>> b.charge(25, now=0.0)      # 15 tokens owed: 1.5 s at 10 a second
    1.5
    >>> b.charge(0, now=1.0)       # a second later: 5 still owed
    0.5
    """

    __slots__ = ("capacity", "rate", "stamp", "tokens")

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate, self.capacity = rate, capacity
        self.tokens = capacity
        self.stamp = now

    def charge(self, cost: float, now: float) -> float:
        """Take ``cost`` tokens; the seconds until the bucket is out of debt (0 when it is not)."""
        tokens = self.tokens
        if now > self.stamp:
            tokens += (now - self.stamp) * self.rate
            if tokens > self.capacity:
                tokens = self.capacity
            self.stamp = now
        tokens -= cost
        self.tokens = tokens
        return -tokens / self.rate if tokens < 0 else 0.0


@dataclass(slots=True, eq=False)
class UserMeter:
    """What one user did (counters since start) and, with a quota, its buckets."""

    produced: Bucket | None = None
    consumed: Bucket | None = None
    requests: Bucket | None = None
    produced_bytes: int = 0
    consumed_bytes: int = 0
    request_count: int = 0
    throttled: int = 0
    """Requests whose answer was delayed."""
    throttle_seconds: float = 0.0
    """The delays those answers were given, summed."""
    limited: bool = field(default=False)
    """True when any bucket is set (the user has a quota)."""


class QuotaTable:
    """The users' quotas and what each user did against them.

    Example::

        table = QuotaTable({"alice": Quota(produced_bytes_per_second=50 * 1024)})
        delay = table.charge("alice", produced=len(body))   # seconds to hold the answer back
    """

    def __init__(self, quotas: Mapping[str, Quota] | None = None, *,
                 clock: Callable[[], float] = time.monotonic, burst_seconds: float = BURST_SECONDS,
                 max_delay: float = MAX_DELAY) -> None:
        self.clock = clock
        self.burst_seconds = burst_seconds
        self.max_delay = max_delay
        self.quotas: dict[str, Quota] = {}
        self.meters: dict[str, UserMeter] = {}
        """By username: every user seen (a quota or not), for the per-user counters."""
        for name, quota in (quotas or {}).items():
            self.set(name, quota)

    def get(self, username: str) -> Quota | None:
        return self.quotas.get(username)

    def items(self) -> Iterator[tuple[str, Quota]]:
        """The quotas by username, sorted."""
        return iter(sorted(self.quotas.items()))

    def set(self, username: str, quota: Quota) -> None:
        """Give ``username`` this quota (an unlimited one removes it); its buckets start full."""
        if quota.unlimited:
            self.remove(username)
            return
        self.quotas[username] = quota
        meter = self.meters.setdefault(username, UserMeter())
        now = self.clock()
        meter.produced = self._bucket(quota.produced_bytes_per_second, now)
        meter.consumed = self._bucket(quota.consumed_bytes_per_second, now)
        meter.requests = self._bucket(quota.requests_per_second, now)
        meter.limited = True

    def remove(self, username: str) -> bool:
        """Drop the user's quota (its counters stay); whether it had one."""
        meter = self.meters.get(username)
        if meter is not None:
            meter.produced = meter.consumed = meter.requests = None
            meter.limited = False
        return self.quotas.pop(username, None) is not None

    def _bucket(self, rate: float, now: float) -> Bucket | None:
        return Bucket(rate, rate * self.burst_seconds, now) if rate > 0 else None

    def charge(self, username: str, *, produced: int = 0, consumed: int = 0, requests: int = 1) -> float:
        """Count one request of ``username`` that cost ``produced`` bytes in, ``consumed`` bytes out
        and ``requests`` requests; the seconds its answer must wait (0 without a quota or within it),
        at most ``max_delay``: the longest debt among the limits it cost something against (a pull
        is not held back by its user's sends)."""
        meter = self.meters.get(username)
        if meter is None:
            meter = self.meters[username] = UserMeter()
        meter.produced_bytes += produced
        meter.consumed_bytes += consumed
        meter.request_count += requests
        if not meter.limited:
            return 0.0
        now = self.clock()
        delay = 0.0  # the longest debt among the limits it cost something against
        bucket = meter.produced
        if bucket is not None and produced:
            delay = bucket.charge(produced, now)
        bucket = meter.consumed
        if bucket is not None and consumed:
            owed = bucket.charge(consumed, now)
            if owed > delay:
                delay = owed
        bucket = meter.requests
        if bucket is not None and requests:
            owed = bucket.charge(requests, now)
            if owed > delay:
                delay = owed
        if delay <= 0.0:
            return 0.0
        if delay > self.max_delay:
            delay = self.max_delay
        meter.throttled += 1
        meter.throttle_seconds += delay
        return delay


def quotas_to_doc(table: QuotaTable) -> dict[str, Any]:
    """``quotas.json``: ``{"quotas": [{"username": ..., <QuotaInfo>}, ...]}``."""
    return {"quotas": [{"username": name, **quota.to_info()} for name, quota in table.items()]}


def quotas_from_doc(doc: object) -> dict[str, Quota]:
    """The quotas of a ``quotas.json`` document; :class:`QuotaError` naming the entry that is wrong."""
    if doc is None:
        return {}
    entries = doc.get("quotas") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise QuotaError('expected {"quotas": [...]}')
    out: dict[str, Quota] = {}
    for i, info in enumerate(entries):
        name = info.get("username") if isinstance(info, dict) else None
        if not isinstance(name, str) or not name:
            raise QuotaError(f"quotas[{i}]: no username")
        try:
            out[name] = Quota.from_info(info)
        except QuotaError as e:
            raise QuotaError(f"quotas[{i}] ({name[:64]}): {e}") from None
    return out
