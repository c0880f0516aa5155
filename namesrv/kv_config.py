"""Name-server KV config (Java ``KVConfigManager``): namespace → key → value.

The one namespace RocketMQ itself reads is ``ORDER_TOPIC_CONFIG`` (topic → ``"brokerName:num;…"``,
the queues an ordered topic publishes to). The table is kept in memory; when a path is given it
is loaded at start and rewritten after every change, in Java's file shape
(``{"configTable":{"ns":{"k":"v"}}}``), atomically: a temporary file is written and fsynced, then
renamed over the old one, so a crash leaves either the old or the new table, never half of one.
"""

from __future__ import annotations

import logging
import os
import tempfile

import orjson

from pyrocketmq.remoting.body import KVTable
from pyrocketmq.remoting.lenient_json import loads
from pyrocketmq.remoting.log_limit import RateLimitedLog
from pyrocketmq.remoting.names import ORDER_TOPIC_CONFIG_NAMESPACE

log = logging.getLogger("pyrocketmq.namesrv")

NAMESPACE_ORDER_TOPIC_CONFIG = ORDER_TOPIC_CONFIG_NAMESPACE


class KVConfigError(Exception):
    """The KV config file exists but cannot be read as a config table."""


class KVConfigManager:
    """KV config of one name server.

    >>> kv = KVConfigManager()
    >>> kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4")
    >>> kv.get("ORDER_TOPIC_CONFIG", "T")
    'broker-a:4'
    """

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.table: dict[str, dict[str, str]] = {}
        self._events = RateLimitedLog(log)  # what PUT/DELETE_KV_CONFIG make us log

    def load(self) -> None:
        """Read the file if there is one (a missing file is an empty table)."""
        if not self.path:
            return
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return
        if not raw.strip():
            return
        try:
            doc = loads(raw)
            table = doc.get("configTable") or {}
            self.table = {str(ns): {str(k): str(v) for k, v in kv.items()} for ns, kv in table.items()}
        except (ValueError, AttributeError, TypeError) as e:
            raise KVConfigError(f"{self.path}: not a KV config table: {e}") from None
        log.info("loaded KV config from %s: %d namespaces", self.path, len(self.table))

    def persist(self) -> None:
        if not self.path:
            return
        data = orjson.dumps({"configTable": self.table}, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kvConfig.", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        try:  # make the rename itself durable
            dfd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass

    def put(self, namespace: str, key: str, value: str) -> None:
        ns = self.table.setdefault(namespace, {})
        old = ns.get(key)
        if old == value:
            return
        ns[key] = value
        self._events.info("KV config %.127s: %.127s=%.255s%s", namespace, key, value,
                          "" if old is None else f" (was {old[:255]})")
        self.persist()

    def get(self, namespace: str, key: str) -> str | None:
        return self.table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> bool:
        ns = self.table.get(namespace)
        if ns is None or key not in ns:
            return False
        del ns[key]
        if not ns:
            del self.table[namespace]
        self._events.info("KV config %.127s: %.127s deleted", namespace, key)
        self.persist()
        return True

    def namespace(self, namespace: str) -> dict[str, str] | None:
        ns = self.table.get(namespace)
        return None if ns is None else dict(ns)

    def namespace_body(self, namespace: str) -> bytes | None:
        """The namespace as a KVTable body, or ``None`` when it has no entry (Java answers null)."""
        ns = self.table.get(namespace)
        return KVTable(dict(ns)).to_json() if ns else None
