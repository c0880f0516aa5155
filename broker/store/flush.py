"""Background threads of the store: the flush service (durability) and the retention timer.

Both have one shape, :class:`ServiceThread`: ``start()``, ``wakeup()``, ``shutdown()``, and a
``run_once()`` that the thread calls after each wait (tests call it directly, with no thread).

The flush service owns every disk sync of the commitlog and the consume queues::

                  put (event loop)                       flush thread
    ASYNC_FLUSH   append ─────────────────────────────▶  every flushIntervalCommitLog ms: fdatasync
    SYNC_FLUSH    append, request_flush(end, cb) ─────▶  wake; swap the pending list; ONE fdatasync
                  or flush_to(end)                       covers them all (and every flush_to end);
                                                         cb(True) for each; listener.on_durable once
    both                                                 every flushIntervalConsumeQueue ms: consume
                                                         queues, then the checkpoint

``flush_to`` is the cheap form for a caller that keeps its own waiters (the broker's send path):
it raises the wanted offset and sets the wake-up event only when it is not set already, and the
thread reports each sync once through ``listener.on_durable`` instead of once per request.

Invariants: a callback gets ``True`` only when the bytes up to its offset are durable; callbacks
run on the flush thread (the broker hops back to its loop with ``call_soon_threadsafe``); a request
made before ``shutdown()`` is always answered; timeouts are the caller's business.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("pyrocketmq.broker.store")

FlushCallback = Callable[[bool], None]


class DurableListener(Protocol):
    """Who keeps the waiters of ``flush_to`` (the broker's send path)."""

    def on_durable(self, offset: int, ok: bool, attempted: int) -> None:
        """After a sync a ``flush_to`` asked for (flush thread): durable up to ``offset``; ``ok`` False
        when the sync meant to reach ``attempted`` failed."""

    def on_cut(self, offset: int) -> None:
        """The log was cut at ``offset`` while running (failover, on the caller's thread)."""


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class Wake:
    """``threading.Event``'s set / is_set / clear / wait for one waiting thread, with a ``set`` that
    never blocks: a lock that stays held while nothing is asked, released to wake the waiter.

    ``Event.set`` takes the condition lock the woken thread holds while it leaves ``wait``; with the
    GIL that is a hand-over in both directions, and a SYNC_FLUSH send sets the event about once per
    group commit. A release is one call. Two racing ``set`` calls release once (the second finds
    the lock free and is ignored); a ``set`` after the waiter left ``wait`` but before ``clear`` is
    lost as with an Event, so the waiter reads what it was woken for *after* ``clear``.
    """

    __slots__ = ("_lock", "_set")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._set = False

    def set(self) -> None:
        if not self._set:
            self._set = True
            try:
                self._lock.release()
            except RuntimeError:  # another set released it first
                pass

    def is_set(self) -> bool:
        return self._set

    def clear(self) -> None:
        self._set = False

    def wait(self, timeout: float) -> bool:
        """Until :meth:`set` or ``timeout`` seconds; True when set."""
        if self._lock.acquire(timeout=max(timeout, 0.0)):
            return True
        return self._set


class ServiceThread:
    """A daemon thread that runs :meth:`run_once` every ``interval_ms`` or when woken."""

    def __init__(self, name: str, interval_ms: int) -> None:
        self.name = name
        self.interval_ms = interval_ms
        self._event = Wake()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stopped.clear()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def wakeup(self) -> None:
        self._event.set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait_interval_ms(self) -> int:
        return self.interval_ms

    def _loop(self) -> None:
        log.info("%s started", self.name)
        while not self._stopped.is_set():
            self._event.wait(self.wait_interval_ms() / 1000)
            self._event.clear()
            if self._stopped.is_set():
                break
            try:
                self.run_once()
            except Exception:
                log.exception("%s: iteration failed", self.name)
        log.info("%s stopped", self.name)

    def run_once(self) -> None:
        raise NotImplementedError

    def shutdown(self) -> None:
        """Stop the thread and wait for it (the current iteration finishes first)."""
        self._stopped.set()
        self._event.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


class FlushService(ServiceThread):
    """Flushes the commitlog (periodically, or by group commit) and the consume queues.

    ``flush_commit_log()`` must sync everything appended so far and return the durable offset;
    ``flush_logics()`` syncs the consume queues and writes the checkpoint.
    """

    def __init__(
        self,
        *,
        flush_commit_log: Callable[[], int],
        flush_logics: Callable[[], None],
        sync: bool,
        interval_ms: int,
        logics_interval_ms: int,
        group_wait_ms: int = 10,
    ) -> None:
        super().__init__("FlushService", interval_ms)
        self._flush_commit_log = flush_commit_log
        self._flush_logics = flush_logics
        self.sync = sync
        self.logics_interval_ms = logics_interval_ms
        self.group_wait_ms = group_wait_ms
        self._lock = threading.Lock()
        self._pending: list[tuple[int, FlushCallback]] = []
        self._last_commit_log_flush = 0
        self._last_logics_flush = 0
        self.flushed_offset = 0
        """Durable commitlog offset after the last flush."""
        self._wanted = 0
        self._told = 0  # the highest offset the listener has been answered for (durable, or failed)
        self.listener: DurableListener | None = None
        """Told about each commitlog sync a ``flush_to`` asked for, and about cuts."""
        self.on_flush: Callable[[str, float], None] | None = None
        """Told ``("commitlog" | "consumequeue", seconds)`` after each flush (metrics), on this thread."""

    def wait_interval_ms(self) -> int:
        return self.group_wait_ms if self.sync else self.interval_ms

    def request_flush(self, offset: int, callback: FlushCallback) -> None:
        """Ask for the commitlog to be durable up to ``offset``; ``callback(ok)`` runs on the flush thread.

        Cheap and thread-safe: it queues the request and wakes the thread. A request for an offset
        already durable is answered at the next iteration, like the others (no sync needed then).
        """
        with self._lock:
            self._pending.append((offset, callback))
        self._event.set()

    def flush_to(self, offset: int) -> None:
        """Ask for the commitlog to be durable up to ``offset``; the answer is ``on_durable``.

        Called from one thread (the event loop): the flush thread clears the event *before* it
        reads the wanted offset, and this raises the offset *before* it looks at the event, so a
        request is never left unseen.
        """
        if offset > self._wanted:
            self._wanted = offset
        if not self._event.is_set():
            self._event.set()

    def rewind(self, offset: int) -> None:
        """The commitlog was cut at ``offset`` while running: nothing past it is durable or wanted,
        and the listener fails the sends waiting past it."""
        self.flushed_offset = min(self.flushed_offset, offset)
        self._wanted = min(self._wanted, offset)
        self._told = min(self._told, offset)
        if self.listener is not None:
            self.listener.on_cut(offset)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def run_once(self, now_ms: int | None = None) -> None:
        now = _now_ms() if now_ms is None else now_ms
        with self._lock:
            requests, self._pending = self._pending, []
        wanted = self._wanted
        # a flush_to not answered yet, even when a flush already covers it (a periodic one that ran
        # while the send was being queued): the listener must hear of it, or the send waits in vain
        asked = wanted > self._told
        due = now - self._last_commit_log_flush >= self.interval_ms
        if requests or due or asked:
            ok = True
            target = max(max((off for off, _ in requests), default=0), wanted)
            try:
                if not (requests or asked) or target > self.flushed_offset:
                    started = time.perf_counter()
                    self.flushed_offset = self._flush_commit_log()
                    self._observe("commitlog", started)
                self._last_commit_log_flush = now
            except Exception:
                log.exception("commitlog flush failed")
                ok = False
            for off, cb in requests:
                try:
                    cb(ok and self.flushed_offset >= off)
                except Exception:
                    log.exception("flush callback failed")
            listener = self.listener
            if asked:
                self._told = max(self._told, self.flushed_offset if ok else target)
            if asked and listener is not None:
                try:
                    listener.on_durable(self.flushed_offset, ok, target)
                except Exception:
                    log.exception("durable listener failed")
        if now - self._last_logics_flush >= self.logics_interval_ms:
            try:
                started = time.perf_counter()
                self._flush_logics()
                self._observe("consumequeue", started)
            except Exception:
                log.exception("consume queue flush failed")
            self._last_logics_flush = now

    def _observe(self, what: str, started: float) -> None:
        hook = self.on_flush
        if hook is not None:
            try:
                hook(what, time.perf_counter() - started)
            except Exception:
                log.exception("flush observer failed")

    def shutdown(self) -> None:
        """Stop the thread, then flush everything and answer every pending request."""
        super().shutdown()
        self._last_commit_log_flush = self._last_logics_flush = -(10**12)
        self.run_once()


class CleanService(ServiceThread):
    """Runs ``task`` every ``interval_ms`` (retention: the store decides whether anything is due)."""

    def __init__(self, task: Callable[[], object], interval_ms: int) -> None:
        super().__init__("CleanService", interval_ms)
        self._task = task

    def run_once(self) -> None:
        self._task()
