"""How much one peer may make a server hold: connections, requests in flight, unread answers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What one peer may make a server hold (0: no limit). Beyond a per-connection limit the
    connection is closed with a logged reason; beyond ``max_connections`` new ones are refused.

    - ``max_in_flight``: requests read and not yet answered (held pulls, sends waiting on a flush).
      A Java client allows itself 65535 asynchronous requests per client instance.
    - ``max_queued_bytes``: answers written and not yet taken by the peer (while it is not reading).
    - ``max_connections``: connections open at once.
    """

    max_connections: int = 10_000
    max_in_flight: int = 65_536
    max_queued_bytes: int = 64 * 1024 * 1024


NO_LIMITS = ConnectionLimits(0, 0, 0)
