"""The users' quotas (:mod:`.quota`) kept in the broker's config directory: ``config/quotas.json``,
written atomically (:mod:`.store.config_file`) after every change and read at start::

    {"quotas": [{"username": "alice", "producedBytesPerSecond": 51200, "consumedBytesPerSecond": 0,
                 "requestsPerSecond": 0}, ...]}
"""

from __future__ import annotations

import logging
import os
from typing import Any

from pyrocketmq.remoting.properties import ConfigError
from pyrocketmq.server.config_file import load_json, save_json

from .quota import Quota, QuotaError, QuotaTable, quotas_from_doc, quotas_to_doc

log = logging.getLogger("pyrocketmq.broker.quota")
QUOTAS_FILE = "quotas.json"


class QuotaStore:
    """The quota table of one broker and its file.

    Example::

        quotas = QuotaStore("/store/config")
        quotas.load()                                          # QuotaError when the file is wrong
        quotas.update("alice", {"producedBytesPerSecond": 51200})
    """

    def __init__(self, config_dir: str, table: QuotaTable | None = None) -> None:
        self.path = os.path.join(config_dir, QUOTAS_FILE)
        self.table = table if table is not None else QuotaTable()

    def load(self) -> None:
        try:
            quotas = quotas_from_doc(load_json(self.path))
        except QuotaError as e:
            raise QuotaError(f"{self.path}: {e}") from None
        for name, quota in quotas.items():
            self.table.set(name, quota)
        if quotas:
            log.info("quotas of %d user(s) from %s", len(quotas), self.path)

    def persist(self) -> None:
        save_json(self.path, quotas_to_doc(self.table))

    def update(self, username: str, info: dict[str, Any]) -> Quota:
        """Set the limits ``info`` names (the others kept; 0 removes one); the quota now in force."""
        quota = (self.table.get(username) or Quota()).merged(info)
        self.table.set(username, quota)
        self.persist()
        return quota

    def delete(self, username: str) -> bool:
        """Remove the user's quota; whether it had one."""
        had = self.table.remove(username)
        if had:
            self.persist()
        return had


def load_quotas(config_dir: str) -> QuotaStore:
    """The quotas of the broker whose config directory this is; :class:`ConfigError` when its file
    is not usable (the broker does not start)."""
    store = QuotaStore(config_dir)
    try:
        store.load()
    except QuotaError as e:
        raise ConfigError(str(e)) from None
    return store
