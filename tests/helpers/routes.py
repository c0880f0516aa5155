"""Waiting, through an admin client, until the name servers route a topic just created."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyrocketmq.client import SyncAdmin


def wait_for_route(admin: SyncAdmin, topic: str, timeout: float = 30.0) -> None:
    """Return once ``admin`` finds a route for ``topic``; the last lookup's error after ``timeout``
    seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin.topic_route(topic)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
