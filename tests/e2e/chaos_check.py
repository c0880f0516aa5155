"""What a chaos run checks, from what the clients recorded (pure: no cluster, no clock).

OpenChaos's checks, on what producers saw acknowledged and what the log holds afterwards:

- **lost**: acknowledged (SEND_OK) and not in the log;
- **duplicated**: in the log more than once (a send retried after a failover is stored twice:
  allowed, counted);
- **reordered**: on the orderly topic, a message of a sharding key stored after a later message of
  the same key (by the producer's per-key sequence), counted on first appearances only;
- **unavailability** of each fault, per client: the longest time without a SEND_OK from the moment
  the fault began until the client's first SEND_OK once the cluster was whole again.

Example::

    >>> v = verdict([Msg("b1", "k", 1), Msg("b2", "k", 2)], [Msg("b2", "k", 2), Msg("b1", "k", 1)])
    >>> (v.acknowledged, v.lost, v.duplicated, v.reordered)
    (2, 0, 0, 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Msg:
    """A message as a producer sent it (acknowledged) or as it was read back (in queue order)."""

    body: str
    key: str | None = None
    seq: int = 0


@dataclass(frozen=True, slots=True)
class Verdict:
    acknowledged: int
    lost: int
    duplicated: int
    reordered: int
    missing: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.reordered == 0


def verdict(acked: Iterable[Msg], stored: Sequence[Msg]) -> Verdict:
    """Lost, duplicated and (per key) reordered, for one topic's acknowledged sends and its log."""
    acked = list(acked)
    seen: dict[str, int] = {}
    reordered = 0
    high: dict[str, int] = {}
    for m in stored:
        seen[m.body] = seen.get(m.body, 0) + 1
        if m.key is None or seen[m.body] > 1:
            continue
        if m.seq < high.get(m.key, -1):
            reordered += 1
        high[m.key] = max(high.get(m.key, -1), m.seq)
    missing = tuple(sorted(s.body for s in acked if s.body not in seen))
    duplicated = sum(n - 1 for n in seen.values() if n > 1)
    return Verdict(len(acked), len(missing), duplicated, reordered, missing[:20])


def longest_gap(ok_times: Sequence[float], start: float, end: float) -> float:
    """The longest stretch inside ``[start, end]`` with no acknowledgement (``ok_times`` sorted).

    >>> longest_gap([0.0, 1.0, 5.0, 5.5], 0.5, 6.0)
    4.0
    """
    inside = [t for t in ok_times if start <= t <= end]
    marks = [start, *inside, end]
    return max(b - a for a, b in zip(marks, marks[1:], strict=False)) if end > start else 0.0


@dataclass(frozen=True, slots=True)
class FaultRecord:
    kind: str
    target: str
    began: float
    recovered: float
    """When the group was whole again (master elected, every replica in sync)."""


def unavailable(ok_times: Sequence[float], fault: FaultRecord) -> float:
    """A client's unavailability through ``fault``: the longest stretch without an acknowledgement
    from the fault's start until its first one once the group was whole again (a client that only
    learns of the new master at its next route refresh is unavailable past the recovery).

    >>> unavailable([0.0, 2.0, 9.0, 31.0], FaultRecord("node-freeze", "n1", 1.0, 20.0))
    22.0
    """
    end = next((t for t in ok_times if t >= fault.recovered), fault.recovered)
    return longest_gap(ok_times, fault.began, end)


def report(
    faults: Sequence[FaultRecord],
    ok_times: Mapping[str, Sequence[float]],
    verdicts: dict[str, Verdict],
    failed: int,
) -> str:
    """The table a run prints: each fault's unavailability as each client saw it (``ok_times``:
    client -> its sorted SEND_OK times), then the totals per topic."""
    clients = list(ok_times)
    head = "".join(f" {c + ' unavailable s':>20}" for c in clients)
    lines = [f"{'#':>3} {'fault':<16} {'target':<22}{head} {'whole again s':>13}"]
    for i, f in enumerate(faults, 1):
        gaps = "".join(f" {unavailable(ok_times[c], f):>20.1f}" for c in clients)
        lines.append(f"{i:>3} {f.kind:<16} {f.target:<22}{gaps} {f.recovered - f.began:>13.1f}")
    lines.append(f"{'topic':<12} {'acknowledged':>12} {'lost':>6} {'duplicated':>10} {'reordered':>9}")
    for topic, v in verdicts.items():
        lines.append(f"{topic:<12} {v.acknowledged:>12} {v.lost:>6} {v.duplicated:>10} {v.reordered:>9}")
    lines.append(f"failed sends (not acknowledged, allowed): {failed}")
    return "\n".join(lines)
