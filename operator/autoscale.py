"""Lag-driven scaling of a group's consumers: ``ConsumerGroup.spec.autoscale`` (pure decisions).

The operator sizes a workload (anything with a ``scale`` subresource: a Deployment, a StatefulSet,
a ReplicaSet) so that each replica has at most ``lagPerReplica`` messages of the group's lag to
work through, as the HorizontalPodAutoscaler would with an external metric, without needing a
metrics adapter:

* desired = ceil(total lag / lagPerReplica), within [minReplicas, maxReplicas];
* never more than the queues the group reads: in RocketMQ a queue has one consumer per group, so a
  replica beyond the queue count would sit idle (the status says ``QueueBound``);
* scaling up happens at once; scaling down only to the highest recommendation of the last
  ``scaleDownStabilizationSeconds`` (the HPA's stabilization window), so a drained backlog that
  refills a minute later does not make the workload flap.

The recommendations of the window are kept in the status, so an operator restart keeps them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SCALABLE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")


@dataclass(frozen=True, slots=True)
class Autoscale:
    kind: str
    name: str
    lag_per_replica: int
    min_replicas: int = 1
    max_replicas: int = 10
    scale_down_window_s: int = 300

    @property
    def target(self) -> str:
        return f"{self.kind}/{self.name}"

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> Autoscale | None:
        """``spec.autoscale`` → Autoscale; ValueError saying what to fix."""
        if not spec:
            return None
        ref = spec.get("scaleTargetRef") or {}
        kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        if kind not in SCALABLE_KINDS:
            raise ValueError(
                f"spec.autoscale.scaleTargetRef.kind {kind!r}: use one of {', '.join(SCALABLE_KINDS)}"
            )
        if not name:
            raise ValueError("spec.autoscale.scaleTargetRef.name: name the workload to scale")
        per = int(spec.get("lagPerReplica") or 0)
        low, high = int(spec.get("minReplicas", 1)), int(spec.get("maxReplicas", 10))
        window = int(spec.get("scaleDownStabilizationSeconds", 300))
        if per < 1:
            raise ValueError(
                "spec.autoscale.lagPerReplica: give the lag one replica should carry (at least 1)"
            )
        if low < 0 or high < 1 or low > high:
            raise ValueError(
                f"spec.autoscale: minReplicas ({low}) must be between 0 and maxReplicas ({high}), "
                "and maxReplicas at least 1"
            )
        if window < 0:
            raise ValueError("spec.autoscale.scaleDownStabilizationSeconds: must not be negative")
        return cls(kind, name, per, low, high, window)


@dataclass(frozen=True, slots=True)
class Recommendation:
    replicas: int
    reason: str
    """``LagBound`` (ceil(lag / lagPerReplica)), ``MinReplicas``, ``MaxReplicas`` or ``QueueBound``."""


def recommend(lag: int, queues: int, spec: Autoscale) -> Recommendation:
    """What the lag alone asks for, bounded by the spec and by the queues the group reads."""
    want = math.ceil(max(0, lag) / spec.lag_per_replica)
    if want < spec.min_replicas:
        return Recommendation(spec.min_replicas, "MinReplicas")
    if want > spec.max_replicas:
        want, reason = spec.max_replicas, "MaxReplicas"
    else:
        reason = "LagBound"
    if queues > 0 and want > max(queues, spec.min_replicas):
        return Recommendation(max(queues, spec.min_replicas), "QueueBound")
    return Recommendation(want, reason)


@dataclass(frozen=True, slots=True)
class Decision:
    replicas: int
    history: tuple[tuple[int, int], ...]
    """(time ms, recommended replicas) within the stabilization window, oldest first."""
    held: bool
    """A scale-down held back by the window."""


def stabilize(current: int, recommended: int, history: Sequence[tuple[int, int]], now_ms: int,
              window_s: int) -> Decision:
    """Scale up at once; scale down no lower than the highest recommendation of the window."""
    kept = tuple((t, r) for t, r in history if now_ms - t < window_s * 1000 and t <= now_ms)
    kept = (*kept, (now_ms, recommended))
    if recommended >= current:
        return Decision(recommended, kept, False)
    floor = max(r for _, r in kept)
    target = min(current, max(recommended, floor))
    return Decision(target, kept, target > recommended)


def history_of(status: Mapping[str, Any] | None) -> list[tuple[int, int]]:
    """The recommendations kept in ``status.autoscale.recommendations``; bad entries are dropped."""
    out = []
    for item in (status or {}).get("recommendations") or ():
        try:
            out.append((int(item["time"]), int(item["replicas"])))
        except (KeyError, TypeError, ValueError):
            continue
    return out
