"""The controller over remoting: heartbeats in, group views out, elections on a timer and on a
closed connection, the state kept in one JSON file (written whenever it changes, atomically).

Requests (bodies are JSON objects; every answer's body is the group's view, see ``state.Group.view``):

- CONTROLLER_BROKER_HEARTBEAT ``{clusterName, brokerName, replicaId, addr, haAddr, epoch,
  maxOffset, epochStart}`` — every replica, every second;
- CONTROLLER_ALTER_SYNC_STATE_SET ``{brokerName, replicaId, epoch, syncStateSetEpoch,
  syncStateSet}`` — the master only; refused (SYSTEM_ERROR, the reason) when stale;
- CONTROLLER_ELECT_MASTER ``{brokerName, replicaId}`` — a switchover to that replica;
- CONTROLLER_GET_METADATA_INFO ``{brokerName?}`` — ``{"groups": [view, ...]}``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.transport import Connection, Handler
from pyrocketmq.service import Service

from .state import ControllerState, Group

log = logging.getLogger("pyrocketmq.controller")


def _ms() -> int:
    return time.time_ns() // 1_000_000


class _BadRequest(Exception):
    pass


def _body(cmd: RemotingCommand) -> dict[str, Any]:
    try:
        data = json.loads(bytes(cmd.payload or b"{}"))
    except (ValueError, UnicodeDecodeError) as e:
        raise _BadRequest(f"body is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise _BadRequest("body must be a JSON object")
    return data


def _int(d: dict[str, Any], key: str, default: int | None = None) -> int:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise _BadRequest(f"{key} must be an integer, got {v!r}")
    return v


def _str(d: dict[str, Any], key: str, default: str | None = None) -> str:
    v = d.get(key, default)
    if not isinstance(v, str) or (default is None and not v):
        raise _BadRequest(f"{key} must be a non-empty string, got {v!r}")
    return v


class Controller:
    """Embedded in a name server (``enableControllerInNamesrv=true``) or alone; see the module docstring."""

    def __init__(self, store_path: str | None, *, timeout_ms: int = 3000, scan_interval_ms: int = 500,
                 clock: Callable[[], int] = _ms) -> None:
        self.state = ControllerState(timeout_ms)
        self.store_path = store_path
        self.clock = clock
        self._conns: dict[Connection, set[tuple[str, int]]] = {}
        self._saved: str | None = None
        self.scan = Service("controller election scan", self.scan_round, scan_interval_ms / 1000, logger=log)

    def load(self) -> None:
        if not self.store_path or not os.path.exists(self.store_path):
            return
        with open(self.store_path, encoding="utf-8") as f:
            text = f.read()
        self.state.load_json(json.loads(text), self.clock())
        self._saved = text
        log.info("controller state loaded from %s: %d group(s)", self.store_path, len(self.state.groups))

    def handlers(self) -> dict[int, Handler]:
        table: dict[int, Callable[[Connection, RemotingCommand], RemotingCommand]] = {
            RequestCode.CONTROLLER_BROKER_HEARTBEAT: self.handle_heartbeat,
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET: self.handle_alter_sync_set,
            RequestCode.CONTROLLER_ELECT_MASTER: self.handle_elect,
            RequestCode.CONTROLLER_GET_METADATA_INFO: self.handle_metadata,
        }
        return {int(code): self._guarded(fn) for code, fn in table.items()}

    def _guarded(self, fn: Callable[[Connection, RemotingCommand], RemotingCommand]) -> Handler:
        def handle(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            try:
                return fn(conn, cmd)
            except _BadRequest as e:
                log.warning("bad controller request %d from %s: %s", cmd.code, getattr(conn, "remote_addr", "?"), e)
                return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
            finally:
                self._settle()

        handle.__name__ = fn.__name__
        return handle

    @staticmethod
    def _answer(cmd: RemotingCommand, g: Group) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, body=json.dumps(g.view()).encode())

    # -- handlers -------------------------------------------------------------------------------
    def handle_heartbeat(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        d = _body(cmd)
        name, rid = _str(d, "brokerName"), _int(d, "replicaId")
        if rid < 1:
            raise _BadRequest(f"replicaId {rid}: controller-mode replicas are numbered from 1 (brokerId)")
        g = self.state.report(
            _str(d, "clusterName"), name, rid, addr=_str(d, "addr"), ha_addr=_str(d, "haAddr"),
            epoch=_int(d, "epoch", 0), max_offset=_int(d, "maxOffset", 0), now_ms=self.clock(),
            epoch_start=_int(d, "epochStart", -1),
        )
        if conn is not None:
            self._conns.setdefault(conn, set()).add((name, rid))
        return self._answer(cmd, g)

    def handle_alter_sync_set(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        d = _body(cmd)
        name = _str(d, "brokerName")
        members = d.get("syncStateSet")
        if not isinstance(members, list) or not all(isinstance(x, int) for x in members):
            raise _BadRequest("syncStateSet must be a list of replica ids")
        why = self.state.alter_sync_set(name, _int(d, "replicaId"), _int(d, "epoch"), _int(d, "syncStateSetEpoch"),
                                        set(members))
        if why is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, why)
        return self._answer(cmd, self.state.groups[name])

    def handle_elect(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        d = _body(cmd)
        name = _str(d, "brokerName")
        why = self.state.switchover(name, _int(d, "replicaId"), self.clock())
        if why is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, why)
        return self._answer(cmd, self.state.groups[name])

    def handle_metadata(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        d = _body(cmd)
        name = d.get("brokerName")
        groups = [g.view() for g in self.state.groups.values() if name in (None, "", g.name)]
        return cmd.response(ResponseCode.SUCCESS, body=json.dumps({"groups": groups}).encode())

    # -- elections ------------------------------------------------------------------------------
    def connection_closed(self, conn: Connection) -> None:
        """A replica's connection closed: a dead master is replaced now, not after the timeout."""
        for name, rid in self._conns.pop(conn, set()):
            self.state.closed(name, rid)
        self.scan_round()

    def scan_round(self) -> None:
        self.state.expire(self.clock())
        self._settle()

    def _settle(self) -> None:
        """Log what happened and write the state if it changed."""
        events, self.state.events = self.state.events, []
        for e in events:
            log.warning("%s", e) if "no master" in e else log.info("%s", e)
        if not self.store_path:
            return
        text = json.dumps(self.state.to_json(), sort_keys=True)
        if text == self._saved:
            return
        os.makedirs(os.path.dirname(self.store_path) or ".", exist_ok=True)
        tmp = self.store_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.store_path)
        self._saved = text
