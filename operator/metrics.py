"""Prometheus metrics of the operator: reconcile counts by result and durations, per kind.

One :class:`OperatorMetrics` per operator run, with its own registry (no process-global state), served
on ``/metrics`` by :meth:`OperatorMetrics.serve`.
"""

from __future__ import annotations

import threading
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server


class OperatorMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.reconciles = Counter(
            "pyrocketmq_operator_reconcile_total",
            "Reconciles run, by kind, trigger and result (ok, retry, failed).",
            ["kind", "trigger", "result"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "pyrocketmq_operator_reconcile_duration_seconds",
            "How long a reconcile took, by kind.",
            ["kind"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=self.registry,
        )
        self.errors = Counter(
            "pyrocketmq_operator_reconcile_errors_total",
            "Failed reconciles by kind and reason (the Ready condition's reason).",
            ["kind", "reason"],
            registry=self.registry,
        )
        self.last_success = Gauge(
            "pyrocketmq_operator_last_successful_reconcile_timestamp_seconds",
            "Unix time of the last successful reconcile, by kind.",
            ["kind"],
            registry=self.registry,
        )
        self._server: Any = None

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        """Serve ``/metrics`` on ``port`` from a daemon thread."""
        result = start_http_server(port, addr=addr, registry=self.registry)
        self._server = result[0] if isinstance(result, tuple) else None

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            threading.Thread(target=server.shutdown, daemon=True).start()
