"""Applying ``ConsumerGroup.spec.autoscale``: read the workload's ``scale`` subresource, decide with
:mod:`.autoscale`, write ``spec.replicas`` back and say so in an Event and the group's status."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .autoscale import Autoscale, history_of, recommend, stabilize
from .kubeapi import KubeClient, KubeError

MAX_HISTORY = 64


async def scale_on_lag(
    kube: KubeClient,
    event: Callable[[str, str, str], None],
    namespace: str,
    spec: Autoscale,
    lag: int,
    queues: int,
    previous: Mapping[str, Any] | None,
    now_ms: int,
    now: str,
) -> dict[str, Any]:
    """One evaluation; returns ``status.autoscale``. A missing or forbidden target is reported in
    the status and an Event (once per change of reason), not raised: the group itself is fine."""
    rec = recommend(lag, queues, spec)
    base: dict[str, Any] = {"target": spec.target, "lag": lag, "queues": queues, "recommended": rec.replicas}
    before = previous or {}
    try:
        scale = await kube.get_scale("apps/v1", spec.kind, namespace, spec.name)
        if scale is None:
            return _trouble(event, before, base, "ScaleTargetNotFound",
                            f"{spec.target} not found in namespace {namespace}: nothing to scale")
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        decision = stabilize(current, rec.replicas, history_of(before), now_ms, spec.scale_down_window_s)
        last = before.get("lastScaleTime")
        if decision.replicas != current:
            await kube.set_scale("apps/v1", spec.kind, namespace, spec.name, decision.replicas)
            event("Normal", "Scaled", f"{spec.target}: {current} → {decision.replicas} replicas (lag {lag}, "
                  f"{spec.lag_per_replica} per replica, {rec.reason})")
            last = now
    except KubeError as e:
        return _trouble(event, before, base, "ScaleForbidden" if e.status == 403 else "ScaleFailed",
                        f"cannot scale {spec.target}: {e.status} {e.message}")
    return {
        **base,
        "replicas": int((scale.get("status") or {}).get("replicas") or 0),
        "desiredReplicas": decision.replicas,
        "reason": "ScaleDownStabilizing" if decision.held else rec.reason,
        **({"lastScaleTime": last} if last else {}),
        "recommendations": [{"time": t, "replicas": r} for t, r in decision.history[-MAX_HISTORY:]],
    }


def _trouble(event: Callable[[str, str, str], None], before: Mapping[str, Any], base: dict[str, Any],
             reason: str, message: str) -> dict[str, Any]:
    if before.get("reason") != reason:
        event("Warning", reason, message)
    return {**base, "reason": reason, "message": message,
            "recommendations": list(before.get("recommendations") or ())[-MAX_HISTORY:]}
