"""Fixtures for store tests (helpers live in ``storekit``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pyrocketmq.broker.store import message_store as ms_module, native
from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.settings import StoreSettings
from tests.helpers.prereq import missing_prerequisite

from .storekit import make_settings, open_store


@pytest.fixture
def settings(tmp_path: Path) -> StoreSettings:
    return make_settings(tmp_path / "store")


@pytest.fixture
def store(settings: StoreSettings) -> Iterator[MessageStore]:
    s = open_store(settings)
    yield s
    s.shutdown()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Store time under the test's control: set ``clock[0]`` (ms)."""
    now = [1_700_000_000_000]
    monkeypatch.setattr(ms_module, "_now_ms", lambda: now[0])
    return now


@pytest.fixture
def compiled_store() -> object:
    """The compiled store module (``_native``); a machine without it skips the test (CI fails)."""
    if native.NATIVE is None:
        missing_prerequisite(
            "compiled store",
            "pyrocketmq.broker.store._native is not built (pip install -e . "
            "with a C compiler and Python's headers)",
        )
    return native.NATIVE
