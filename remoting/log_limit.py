"""Log lines a peer can cause, rate-limited: a hostile client that sends bad frames in a loop
must not be able to fill the disk. At most ``burst`` lines per ``window`` seconds go out; the
rest are counted and reported in one line when the next window opens."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable


class RateLimitedLog:
    def __init__(
        self,
        logger: logging.Logger,
        *,
        burst: int = 10,
        window: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger
        self._burst = burst
        self._window = window
        self._clock = clock
        self._lock = threading.Lock()
        self._started = clock()
        self._sent = 0
        self.suppressed = 0
        """Lines dropped in the current window."""

    def warning(self, msg: str, *args: object) -> None:
        self.log(logging.WARNING, msg, *args)

    def info(self, msg: str, *args: object) -> None:
        self.log(logging.INFO, msg, *args)

    def log(self, level: int, msg: str, *args: object) -> None:
        """``msg % args`` at ``level``, unless this window's ``burst`` lines are out already."""
        with self._lock:
            now = self._clock()
            dropped = 0
            if now - self._started >= self._window:
                dropped, self.suppressed = self.suppressed, 0
                self._started, self._sent = now, 0
            allowed = self._sent < self._burst
            if allowed:
                self._sent += 1
            else:
                self.suppressed += 1
        if dropped:
            self._log.warning(
                "%d more lines like the next were suppressed in the last %.0f s", dropped, self._window
            )
        if allowed:
            self._log.log(level, msg, *args)
