"""Operator settings: small groups, one docstring per field, loadable from the environment.

The Helm chart sets these through environment variables (``PYROCKETMQ_OPERATOR_*``); the command line
(``python -m pyrocketmq.operator``) overrides the watch scope and the resync interval.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

FIELD_MANAGER = "pyrocketmq-operator"
DEFAULT_IMAGE = "ghcr.io/pyrocketmq/pyrocketmq:0.1.0"
DEFAULT_LIVENESS = "http://0.0.0.0:8080/healthz"


@dataclass(frozen=True, slots=True)
class RenderSettings:
    """What the renderers need besides the resource itself."""

    default_image: str = DEFAULT_IMAGE
    """The image of name servers and brokers whose spec names none (the chart passes its own image)."""
    image_pull_policy: str = "IfNotPresent"
    """Pull policy when a spec names none."""
    cluster_domain: str = ""
    """Empty: DNS names end in ``.<namespace>.svc`` (resolved by the pods' search path); else they are
    fully qualified, ``.<namespace>.svc.<cluster_domain>``."""


@dataclass(frozen=True, slots=True)
class ReconcileSettings:
    resync_interval: float = 30.0
    """Seconds between level-based resyncs of every resource (repairs drift, refreshes status)."""
    resync_initial_delay: float = 5.0
    """Seconds after an object is first seen before its resync timer starts."""
    admin_timeout: float = 5.0
    """Seconds a name server or broker has to answer an admin request."""
    backoff_base: float = 2.0
    """First retry delay (seconds) after a failed reconcile; doubles per attempt."""
    backoff_max: float = 60.0
    """Longest retry delay (seconds)."""

    def backoff(self, retry: int) -> float:
        """Delay before retry number ``retry`` (0-based): base * 2**retry, capped."""
        return min(self.backoff_max, self.backoff_base * (2.0 ** max(0, min(retry, 16))))


@dataclass(frozen=True, slots=True)
class WatchSettings:
    namespaces: tuple[str, ...] = ()
    """Namespaces to serve; empty means every namespace (cluster-wide)."""
    liveness_endpoint: str | None = DEFAULT_LIVENESS
    """kopf's liveness probe endpoint; ``None`` disables it."""
    metrics_port: int | None = 8081
    """Port of the Prometheus ``/metrics`` endpoint (reconcile counts and durations); ``None`` disables it."""


@dataclass(frozen=True, slots=True)
class OperatorSettings:
    render: RenderSettings = field(default_factory=RenderSettings)
    reconcile: ReconcileSettings = field(default_factory=ReconcileSettings)
    watch: WatchSettings = field(default_factory=WatchSettings)
    field_manager: str = FIELD_MANAGER
    """The server-side apply field manager of everything the operator writes."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorSettings:
        """Read ``PYROCKETMQ_OPERATOR_*`` variables (unset ones keep their defaults).

        >>> OperatorSettings.from_env({"PYROCKETMQ_OPERATOR_NAMESPACES": "a, b"}).watch.namespaces
        ('a', 'b')
        """
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            value = env.get(f"PYROCKETMQ_OPERATOR_{name}")
            return value.strip() if value is not None and value.strip() else None

        def port(name: str, default: int | None) -> int | None:
            raw = get(name)
            if raw is None:
                return default
            return None if raw in ("0", "off", "none") else int(raw)

        render = RenderSettings(
            default_image=get("IMAGE") or DEFAULT_IMAGE,
            image_pull_policy=get("IMAGE_PULL_POLICY") or "IfNotPresent",
            cluster_domain=get("CLUSTER_DOMAIN") or "",
        )
        reconcile = ReconcileSettings(
            resync_interval=float(get("RESYNC_INTERVAL") or 30.0),
            resync_initial_delay=float(get("RESYNC_INITIAL_DELAY") or 5.0),
            admin_timeout=float(get("ADMIN_TIMEOUT") or 5.0),
            backoff_base=float(get("BACKOFF_BASE") or 2.0),
            backoff_max=float(get("BACKOFF_MAX") or 60.0),
        )
        namespaces = tuple(n.strip() for n in (get("NAMESPACES") or "").split(",") if n.strip())
        liveness = get("LIVENESS_ENDPOINT")
        watch = WatchSettings(
            namespaces=namespaces,
            liveness_endpoint=None if liveness in ("off", "none") else (liveness or DEFAULT_LIVENESS),
            metrics_port=port("METRICS_PORT", 8081),
        )
        return cls(render=render, reconcile=reconcile, watch=watch)
