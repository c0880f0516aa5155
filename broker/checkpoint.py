"""The shape of a broker loop whose progress is a JSON file (the delay levels' ``delayOffset.json``,
the timer's ``timerCheckpoint.json``).

A subclass names its loops (:meth:`CheckpointedService.loops`) and its progress as a document
(:meth:`CheckpointedService.progress_json`) and sets ``_dirty`` when the progress moves;
``start()`` runs the loops plus one that writes the file every ``flush_interval_ms`` when it
changed, and ``stop()`` ends them all and writes it once more. Writes are atomic
(:func:`~.store.config_file.write_json_file`); after a crash the loops replay at most what the last
write missed.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Iterable

from pyrocketmq.server.config_file import write_json_file
from pyrocketmq.service import Service, Services

log = logging.getLogger("pyrocketmq.broker")


class CheckpointedService(abc.ABC):
    """See the module docstring."""

    def __init__(self, path: str, flush_interval_ms: int) -> None:
        self.path = path
        self.flush_interval_ms = flush_interval_ms
        self._dirty = False
        self._services = Services()

    @abc.abstractmethod
    def loops(self) -> Iterable[Service]:
        """The services that do the work, started in this order."""

    @abc.abstractmethod
    def progress_json(self) -> dict[str, object]:
        """The progress as the file holds it."""

    def persist(self, force: bool = False) -> None:
        """Write the progress if it moved since the last write (always with ``force``)."""
        if not (self._dirty or force):
            return
        self._dirty = False
        write_json_file(self.path, self.progress_json())

    def start(self) -> None:
        for service in self.loops():
            self._services.add(service)
        self._services.add(
            Service(f"{self.path} persist", self.persist, self.flush_interval_ms / 1000, logger=log)
        )
        self._services.start()

    async def stop(self) -> None:
        await self._services.stop()
        self.persist(force=True)
