"""Fixtures for store tests (helpers live in ``storekit``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pyrocketmq.broker.store import message_store as ms_module
from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.settings import StoreSettings

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
