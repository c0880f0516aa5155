"""How much one peer may make a server hold: connections, requests in flight, unread answers, the
time a frame may take and the bytes held for connections that have proven nothing yet."""

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
    - ``frame_timeout_s``: seconds from a frame's first byte to its last; a connection past it is
      closed. It is counted per frame, so a peer trickling a byte now and then is not kept alive
      by it (the idle timeout would be).
    - ``max_unproven_bytes``: bytes of partial frames held, all together, for the connections that
      have had no request accepted yet (none decoded, or none past the access check); the one
      whose bytes would pass it is closed.
    """

    max_connections: int = 10_000
    max_in_flight: int = 65_536
    max_queued_bytes: int = 64 * 1024 * 1024
    frame_timeout_s: float = 30.0
    max_unproven_bytes: int = 64 * 1024 * 1024


NO_LIMITS = ConnectionLimits(0, 0, 0, 0.0, 0)


class UnprovenBytes:
    """The bytes held for a server's unproven connections, against ``ConnectionLimits.max_unproven_bytes``.

    >>> pool = UnprovenBytes(100)
    >>> pool.resize(0, 60), pool.resize(0, 60), pool.held
    (True, False, 60)
    """

    __slots__ = ("cap", "held")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.held = 0

    def resize(self, old: int, new: int) -> bool:
        """One connection holds ``new`` bytes instead of ``old``; False, and nothing changed, when
        growing to ``new`` would pass the cap."""
        total = self.held - old + new
        if new > old and self.cap and total > self.cap:
            return False
        self.held = total
        return True
