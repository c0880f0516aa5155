"""The controller over remoting: heartbeats in, group views out, elections on a timer and on a
closed connection; its state replicated among the controller instances by :mod:`.raft`.

Requests from brokers and tools (bodies are JSON objects; every answer's body is the group's view,
see ``state.Group.view``), served by the leading instance only (the others answer
CONTROLLER_NOT_LEADER naming the leader, and the caller tries the next address):

- CONTROLLER_BROKER_HEARTBEAT ``{clusterName, brokerName, replicaId, addr, haAddr, epoch,
  maxOffset, epochStart}`` — every replica, every second, to every instance: a follower refuses it
  but notes when it heard each replica, so when it takes over it knows how long a master has been
  silent (a master frozen with the leader is replaced once the expiry since its last heartbeat ran
  out, not a full expiry after the new leader was elected);
- CONTROLLER_ALTER_SYNC_STATE_SET ``{brokerName, replicaId, epoch, syncStateSetEpoch,
  syncStateSet}`` — the master only; refused (SYSTEM_ERROR, the reason) when stale;
- CONTROLLER_ELECT_MASTER ``{brokerName, replicaId}`` — a switchover to that replica;
- CONTROLLER_GET_METADATA_INFO ``{brokerName?}`` — ``{"groups": [view, ...]}``; with ``{"heard":
  true}`` answered by every instance, leading or not: ``{"heard": {group: {replica id: ms since
  this instance last heard it}}}`` (while no leader answers, the operator still learns that a
  master fell silent).

A change of the state (an election, a new in-sync set, a new replica) is answered only once a
majority of the instances holds it; a leader that cannot reach a majority within
``COMMIT_TIMEOUT`` steps down and forgets the change, so an isolated instance elects nobody.
A leader answers only while it holds a **lease**: a majority acknowledged it less than the
shortest election timeout ago, counted from when it asked (no other leader can be elected sooner).
So an instance that was frozen or cut off while leading, and comes back still believing it leads,
answers CONTROLLER_NOT_LEADER instead of its stale view until it hears the newer leader.
Between instances: CONTROLLER_RAFT_VOTE and CONTROLLER_RAFT_APPEND (bodies: :mod:`.raft`'s), on the
name servers' remoting port: with ``tls.server.mode=enforcing`` over TLS both ways (the port accepts
nothing else; this instance connects with its server certificate, see
:meth:`pyrocketmq.remoting.tls.ServerTls.peer_client`), so a plain instance can neither reach the
others nor be reached by them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.log_limit import RateLimitedLog
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import Connection, Handler, HandlerResult, RemotingError
from pyrocketmq.service import Service

from .raft import LEADER, RaftNode
from .state import ControllerState, Group

log = logging.getLogger("pyrocketmq.controller")

HEARTBEAT_S = 0.3
"""How often a leader sends its entry to the other instances."""
ELECTION_TIMEOUT_S = (1.5, 3.0)
"""A follower that heard no leader for a random time in this range stands for election."""
COMMIT_TIMEOUT = 2.0
RPC_TIMEOUT = 1.0


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
    """Embedded in a name server (``enableControllerInNamesrv=true``); see the module docstring.

    ``peers`` maps every instance's id to its name server address (``controllerPeers``); alone,
    ``{self_id: ""}``."""

    def __init__(self, store_path: str | None, *, timeout_ms: int = 3000, scan_interval_ms: int = 500,
                 self_id: str = "n0", peers: dict[str, str] | None = None, clock: Callable[[], int] = _ms,
                 sign: Callable[[RemotingCommand], None] | None = None,
                 tls_context: ssl.SSLContext | None = None) -> None:
        self.state = ControllerState(timeout_ms)
        self._events = RateLimitedLog(log, burst=50)  # what brokers' requests make the controller log
        self.store_path = store_path
        self.clock = clock
        self.self_id = self_id
        self.peers = dict(peers or {self_id: ""})
        self.raft = RaftNode(self_id, list(self.peers))
        self.client = RemotingClient(connect_timeout=RPC_TIMEOUT, sign=sign, ssl=tls_context)
        """To the other instances: TLS (``tls_context``) when this name server enforces it."""
        self._conns: dict[Connection, set[tuple[str, int]]] = {}
        self._committed = ""
        self._waiters: dict[int, asyncio.Future[bool]] = {}
        self._busy: set[str] = set()
        """Peers with a request of this instance's still unanswered (not asked again meanwhile)."""
        self._reported: dict[tuple[str, int], int] = {}
        """When this instance last heard each replica's heartbeat (group, replica id → clock ms), leading
        or not: the silence a new leader counts from (see the module docstring)."""
        self._heard = time.monotonic()
        """Follower: when a leader (or a granted vote) was last heard."""
        self._lease_from = float("-inf")
        """Leader: when it asked in the newest round a majority acknowledged (its lease runs from there)."""
        self._timeout = random.uniform(*ELECTION_TIMEOUT_S)
        self._lock = asyncio.Lock()
        self.scan = Service("controller election scan", self.scan_round, scan_interval_ms / 1000, logger=log)
        self.consensus = Service("controller consensus", self._consensus_round, HEARTBEAT_S / 3, logger=log)

    @property
    def leading(self) -> bool:
        """Leader, with a committed entry and a lease (see the module docstring)."""
        return self.raft.role == LEADER and self.raft.committed is not None and self._leased()

    def _leased(self) -> bool:
        return len(self.peers) == 1 or time.monotonic() - self._lease_from < ELECTION_TIMEOUT_S[0]

    def load(self) -> None:
        if self.store_path and os.path.exists(self.store_path):
            with open(self.store_path, encoding="utf-8") as f:
                self.raft = RaftNode(self.self_id, list(self.peers), json.load(f))
            log.info("controller %s: term %d, entry %d loaded from %s", self.self_id, self.raft.term,
                     self.raft.entry.index, self.store_path)

    def _persist(self) -> None:
        """Raft's hard state, durably, before any message leaves."""
        if not self.raft.dirty:
            return
        self.raft.dirty = False
        if not self.store_path:
            return
        os.makedirs(os.path.dirname(self.store_path) or ".", exist_ok=True)
        tmp = self.store_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.raft.hard, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.store_path)

    async def start(self) -> None:
        if len(self.peers) == 1:  # alone: its own majority, leading from the start
            await self._stand()
        self.consensus.start()
        self.scan.start()

    async def stop(self) -> None:
        await self.scan.stop()
        await self.consensus.stop()
        for fut in self._waiters.values():
            if not fut.done():
                fut.set_result(False)
        await self.client.close()

    # -- consensus ------------------------------------------------------------------------------
    async def _consensus_round(self) -> None:
        if self.raft.role == LEADER:
            await self._replicate()
        elif time.monotonic() - self._heard > self._timeout:
            await self._stand()

    async def _stand(self) -> None:
        self._heard, self._timeout = time.monotonic(), random.uniform(*ELECTION_TIMEOUT_S)
        if len(self.peers) > 1:  # pre-vote first: raise the term only when it would win
            pre = await self._broadcast(RequestCode.CONTROLLER_RAFT_VOTE, self.raft.pre_vote_request(),
                                        enough=self._granted_by_majority)
            won_pre = self.raft.pre_vote_won([rep for _, rep in pre])
            self._persist()
            if not won_pre:
                return
        asked = time.monotonic()
        req = self.raft.start_election()
        self._persist()
        won = self.raft.role == LEADER
        replies = await self._broadcast(RequestCode.CONTROLLER_RAFT_VOTE, req,
                                        enough=self._granted_by_majority)
        for peer, rep in replies:
            won = self.raft.handle_vote_reply(peer, rep) or won
        self._persist()
        if won and self.raft.role == LEADER:
            self._lease_from = asked  # the voters reset their election timers when they granted
            log.info("controller %s leads at term %d", self.self_id, self.raft.term)
            self._load_state(self.raft.entry.state)
            self.raft.propose(self._state_text())  # Raft's no-op: commits what earlier leaders left
            self._persist()
            await self._replicate()
            self.scan.wakeup()  # a master that went silent with the old leader is replaced now

    async def _replicate(self) -> None:
        asked, acks = time.monotonic(), 1

        def on_reply(peer: str, rep: dict[str, Any]) -> None:  # as each arrives: a dead peer delays nothing
            nonlocal acks
            acks += bool(rep.get("ok"))
            if acks >= self.raft.majority:
                self._lease_from = max(self._lease_from, asked)
            self._on_commit(self.raft.handle_append_reply(peer, rep))
            self._persist()

        await self._broadcast(RequestCode.CONTROLLER_RAFT_APPEND, self.raft.append_request(), on_reply,
                              enough=lambda _: acks >= self.raft.majority)
        if acks < self.raft.majority and not self._leased() and self.raft.role == LEADER:
            # a leader cut off from its majority stops answering before another can be elected
            log.warning(
                "controller %s: no majority heard for %.1f s; stepping down",
                self.self_id,
                ELECTION_TIMEOUT_S[0],
            )
            self.raft.role, self.raft.leader = "follower", None
            self._heard = time.monotonic()
            return
        self._on_commit(self.raft.committed)

    def _on_commit(self, entry: Any) -> None:
        if entry is None:
            return
        self._committed = entry.state
        for index in [i for i in self._waiters if i <= entry.index]:
            fut = self._waiters.pop(index)
            if not fut.done():
                fut.set_result(True)

    async def _broadcast(
        self,
        code: RequestCode,
        body: dict[str, Any],
        on_reply: Callable[[str, dict[str, Any]], None] | None = None,
        enough: Callable[[list[dict[str, Any]]], bool] | None = None,
    ) -> list[tuple[str, dict[str, Any]]]:
        """The peers' answers, once every peer asked answered (or failed), or as soon as ``enough`` says
        the answers so far decide (a frozen peer then costs nothing: its answer, if any, is left to
        ``on_reply``). A peer still busy with an earlier request is not asked again until it answers."""
        peers = [p for p in self.peers if p != self.self_id and p not in self._busy]
        data = json.dumps(body).encode()

        async def one(peer: str) -> tuple[str, dict[str, Any]] | None:
            self._busy.add(peer)
            try:
                resp = await self.client.invoke(
                    self.peers[peer], RemotingCommand.request(code, {}, data), RPC_TIMEOUT
                )
            except RemotingError:
                return None
            finally:
                self._busy.discard(peer)
            if resp.code != ResponseCode.SUCCESS:
                return None
            rep: dict[str, Any] = json.loads(bytes(resp.payload))
            if on_reply is not None:
                on_reply(peer, rep)
            return peer, rep

        answers: list[tuple[str, dict[str, Any]]] = []
        for next_answer in asyncio.as_completed([asyncio.ensure_future(one(p)) for p in peers]):
            answer = await next_answer
            if answer is not None:
                answers.append(answer)
                if enough is not None and enough([rep for _, rep in answers]):
                    break
        return answers

    def _granted_by_majority(self, replies: list[dict[str, Any]]) -> bool:
        return 1 + sum(1 for rep in replies if rep.get("granted")) >= self.raft.majority

    def handle_raft_vote(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        if self.raft.role == LEADER:
            heard = self._leased()
        else:
            heard = self.raft.leader is not None and time.monotonic() - self._heard < ELECTION_TIMEOUT_S[0]
        rep = self.raft.handle_vote(_body(cmd), leader_heard=heard)
        if rep["granted"] and not rep.get("pre"):
            self._heard = time.monotonic()
        self._persist()
        return cmd.response(ResponseCode.SUCCESS, body=json.dumps(rep).encode())

    def handle_raft_append(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        was_leading = self.raft.role == LEADER
        rep = self.raft.handle_append(_body(cmd))
        if rep["ok"]:
            self._heard = time.monotonic()
            if was_leading:
                log.warning(
                    "controller %s: a leader of term %d exists; stepping down", self.self_id, self.raft.term
                )
        self._persist()
        return cmd.response(ResponseCode.SUCCESS, body=json.dumps(rep).encode())

    # -- the state ------------------------------------------------------------------------------
    def _state_text(self) -> str:
        return json.dumps(self.state.to_json(), sort_keys=True)

    def _load_state(self, text: str) -> None:
        self.state.load_json(json.loads(text) if text else {}, self.clock(), self._reported)
        self._committed = text

    async def _commit(self) -> bool:
        """Replicate the state if it changed; False (and the change forgotten) without a majority."""
        for e in self.state.events:
            self._events.log(logging.WARNING if "no master" in e else logging.INFO, "%s", e)
        self.state.events = []
        text = self._state_text()
        if text == self._committed or self.raft.role != LEADER:
            return self.raft.role == LEADER
        entry = self.raft.propose(text)
        self._persist()
        self._on_commit(self.raft.committed)
        if self._committed == text:
            return True
        fut = self._waiters.setdefault(entry.index, asyncio.get_running_loop().create_future())
        self.consensus.wakeup()
        try:
            if await asyncio.wait_for(asyncio.shield(fut), COMMIT_TIMEOUT):
                return True
        except TimeoutError:
            pass
        if self.raft.role == LEADER:
            log.warning("controller %s: no majority for %.0f s; stepping down, the change forgotten",
                        self.self_id, COMMIT_TIMEOUT)
            self.raft.role, self.raft.leader = "follower", None
        self._load_state(self._committed)
        return False

    # -- requests -------------------------------------------------------------------------------
    def handlers(self) -> dict[int, Handler]:
        table: dict[int, Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand]]] = {
            RequestCode.CONTROLLER_BROKER_HEARTBEAT: self.handle_heartbeat,
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET: self.handle_alter_sync_set,
            RequestCode.CONTROLLER_ELECT_MASTER: self.handle_elect,
            RequestCode.CONTROLLER_GET_METADATA_INFO: self.handle_metadata,
        }
        out: dict[int, Handler] = {int(code): self._guarded(fn) for code, fn in table.items()}
        heartbeat = int(RequestCode.CONTROLLER_BROKER_HEARTBEAT)
        metadata = int(RequestCode.CONTROLLER_GET_METADATA_INFO)
        out[heartbeat] = self._noting(out[heartbeat])
        out[metadata] = self._hearing(out[metadata])
        out[int(RequestCode.CONTROLLER_RAFT_VOTE)] = self._raw(self.handle_raft_vote)
        out[int(RequestCode.CONTROLLER_RAFT_APPEND)] = self._raw(self.handle_raft_append)
        return out

    def _noting(self, handle: Handler) -> Handler:
        """``handle``, after noting the heartbeat's replica as heard now (by every instance)."""
        def noted(conn: Connection, cmd: RemotingCommand) -> HandlerResult:
            try:
                d = _body(cmd)
                self._reported[(_str(d, "brokerName"), _int(d, "replicaId"))] = self.clock()
            except _BadRequest:
                pass  # ``handle`` says what is wrong with it
            return handle(conn, cmd)

        return noted

    def _hearing(self, handle: Handler) -> Handler:
        """``handle``, unless the request asks what this instance heard (see the module docstring)."""
        def heard(conn: Connection, cmd: RemotingCommand) -> HandlerResult:
            try:
                wanted = _body(cmd).get("heard") is True
            except _BadRequest:
                wanted = False
            if not wanted:
                return handle(conn, cmd)
            now, out = self.clock(), dict[str, dict[str, int]]()
            for (group, rid), ms in self._reported.items():
                out.setdefault(group, {})[str(rid)] = max(0, now - ms)
            return cmd.response(ResponseCode.SUCCESS, body=json.dumps({"heard": out}).encode())

        return heard

    @staticmethod
    def _raw(fn: Callable[[Connection, RemotingCommand], RemotingCommand]) -> Handler:
        def handle(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            try:
                return fn(conn, cmd)
            except (_BadRequest, KeyError, ValueError, TypeError) as e:
                return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad consensus message: {e}")

        return handle

    def _guarded(self, fn: Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand]]) -> Handler:
        async def handle(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            if not self.leading:
                leader = self.peers.get(self.raft.leader or "", "") if self.raft.role != LEADER else ""
                return cmd.response(
                    ResponseCode.CONTROLLER_NOT_LEADER,
                    f"not the controller leader{'; the leader is ' + leader if leader else ''}",
                )
            try:
                async with self._lock:
                    return await fn(conn, cmd)
            except _BadRequest as e:
                self._events.warning("bad controller request %d from %s: %.300s", cmd.code,
                                     getattr(conn, "remote_addr", "?"), e)
                return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))

        handle.__name__ = fn.__name__
        return handle

    async def _answer(self, cmd: RemotingCommand, name: str) -> RemotingCommand:
        if not await self._commit():
            return cmd.response(ResponseCode.CONTROLLER_NOT_LEADER, "the controller lost its majority")
        g: Group | None = self.state.groups.get(name)
        return cmd.response(ResponseCode.SUCCESS, body=json.dumps(g.view() if g else {}).encode())

    async def handle_heartbeat(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        d = _body(cmd)
        name, rid = _str(d, "brokerName"), _int(d, "replicaId")
        if rid < 1:
            raise _BadRequest(f"replicaId {rid}: controller-mode replicas are numbered from 1 (brokerId)")
        self.state.report(
            _str(d, "clusterName"), name, rid, addr=_str(d, "addr"), ha_addr=_str(d, "haAddr"),
            epoch=_int(d, "epoch", 0), max_offset=_int(d, "maxOffset", 0), now_ms=self.clock(),
            epoch_start=_int(d, "epochStart", -1),
        )
        if conn is not None:
            self._conns.setdefault(conn, set()).add((name, rid))
        return await self._answer(cmd, name)

    async def handle_alter_sync_set(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        d = _body(cmd)
        name = _str(d, "brokerName")
        members = d.get("syncStateSet")
        if not isinstance(members, list) or not all(isinstance(x, int) for x in members):
            raise _BadRequest("syncStateSet must be a list of replica ids")
        why = self.state.alter_sync_set(
            name, _int(d, "replicaId"), _int(d, "epoch"), _int(d, "syncStateSetEpoch"), set(members)
        )
        if why is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, why)
        return await self._answer(cmd, name)

    async def handle_elect(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        d = _body(cmd)
        name = _str(d, "brokerName")
        why = self.state.switchover(name, _int(d, "replicaId"), self.clock())
        if why is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, why)
        return await self._answer(cmd, name)

    async def handle_metadata(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        name = _body(cmd).get("brokerName")
        now = self.clock()
        groups = [g.view(now) for g in self.state.groups.values() if name in (None, "", g.name)]
        return cmd.response(ResponseCode.SUCCESS, body=json.dumps({"groups": groups}).encode())

    # -- elections ------------------------------------------------------------------------------
    def connection_closed(self, conn: Connection) -> None:
        """A replica's connection closed: a dead master is replaced now, not after the timeout."""
        closed = self._conns.pop(conn, set())
        if not closed or self.raft.role != LEADER:
            return
        for name, rid in closed:
            self.state.closed(name, rid)
        asyncio.ensure_future(self.scan_round())

    async def scan_round(self) -> None:
        if not self.leading:
            return
        async with self._lock:
            if self.state.expire(self.clock()) or self.state.events:
                await self._commit()
