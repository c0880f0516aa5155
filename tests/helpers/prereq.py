"""The one rule for missing test prerequisites (a JDK, Go, Prometheus, PySpark …): skip the test on a
developer's machine, fail it when ``CI=true`` — a CI run must never go green by skipping a suite."""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def missing_prerequisite(suite: str, reason: str) -> None:
    """Skip the test, or fail it on CI; ``suite`` names what needed it (``"k8s"``, ``"Spark"`` …)."""
    if in_ci():
        pytest.fail(f"{suite} prerequisite missing (CI=true, so this fails): {reason}", pytrace=False)
    pytest.skip(f"{suite} prerequisite missing: {reason}")
