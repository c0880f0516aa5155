from __future__ import annotations

import pytest

from .procs import start_broker, start_namesrv


@pytest.fixture
def namesrv(tmp_path):
    proc = start_namesrv(tmp_path)
    yield proc
    proc.stop()


@pytest.fixture
def broker(tmp_path, namesrv):
    proc = start_broker(tmp_path, namesrv.addr, maxMessageSize=64 * 1024)
    yield proc
    proc.stop()
