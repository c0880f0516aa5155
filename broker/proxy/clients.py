"""The 5.x clients a broker knows: one :class:`ClientSession` per ``x-mq-client-id``.

A session holds the client's last Settings and its Telemetry stream (the only way the broker can
speak first: transaction check-backs). For the broker's 4.x machinery a session is a
:class:`ProxyChannel`, a connection whose ``invoke_oneway`` turns a CHECK_TRANSACTION_STATE into a
``recover_orphaned_transaction_command`` on that stream, so the transaction check service asks
5.x producers exactly as it asks 4.x ones.
"""

from __future__ import annotations

import asyncio
import logging
import time

from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import MessageDecodeError, decode_message
from pyrocketmq.remoting.transport import Connection, RemotingError

from .convert import incoming
from .pb import definition_pb2 as pb, service_pb2 as spb

log = logging.getLogger("pyrocketmq.broker.proxy")

TELEMETRY_QUEUE = 1024
"""Commands waiting for a slow client's Telemetry stream before new ones are dropped."""


class ProxyChannel(Connection):
    """A 5.x client seen by the 4.x processors: its address, and check-backs sent over Telemetry."""

    holds_answers = False  # the proxy awaits each handler's result: answers come as results or futures

    def __init__(self, session: ClientSession) -> None:
        super().__init__({}, name="grpc")
        self.session = session
        self.remote_addr = session.peer

    def invoke_oneway(self, cmd: RemotingCommand) -> None:
        if cmd.code != RequestCode.CHECK_TRANSACTION_STATE:
            raise RemotingError(f"a 5.x client takes no request code {cmd.code}")
        try:
            msg, _ = decode_message(cmd.payload)
        except MessageDecodeError as e:
            raise RemotingError(f"the check-back message does not decode: {e}") from None
        transaction_id = cmd.ext_fields.get("offsetMsgId") or msg.offset_msg_id
        command = spb.TelemetryCommand(
            recover_orphaned_transaction_command=spb.RecoverOrphanedTransactionCommand(
                message=incoming(msg), transaction_id=transaction_id
            )
        )
        if not self.session.push(command):
            raise RemotingError(f"the 5.x client {self.session.client_id} has no open Telemetry stream")

    @property
    def is_open(self) -> bool:
        return self.session.stream is not None

    def close(self, reason: str | None = None) -> None:
        self.session.end_stream()


class ClientSession:
    def __init__(self, client_id: str, peer: str) -> None:
        self.client_id = client_id
        self.peer = peer
        self.settings: pb.Settings | None = None
        self.stream: asyncio.Queue[spb.TelemetryCommand | None] | None = None
        self.last_seen = time.monotonic()
        self._channel: ProxyChannel | None = None

    @property
    def channel(self) -> ProxyChannel:
        if self._channel is None:
            self._channel = ProxyChannel(self)
        return self._channel

    def open_stream(self) -> asyncio.Queue[spb.TelemetryCommand | None]:
        """A new Telemetry stream replaces the previous one (the client reconnected)."""
        self.end_stream()
        self.stream = asyncio.Queue(TELEMETRY_QUEUE)
        return self.stream

    def end_stream(self, stream: asyncio.Queue[spb.TelemetryCommand | None] | None = None) -> None:
        """Close the open stream (or only ``stream``, if it is still the open one)."""
        current = self.stream
        if current is None or (stream is not None and stream is not current):
            return
        self.stream = None
        try:
            current.put_nowait(None)
        except asyncio.QueueFull:
            pass

    def push(self, command: spb.TelemetryCommand) -> bool:
        """Queue a server command on the open stream; False when there is none or it is full."""
        stream = self.stream
        if stream is None:
            return False
        try:
            stream.put_nowait(command)
        except asyncio.QueueFull:
            log.warning("5.x client %s is not reading its Telemetry stream: command dropped", self.client_id)
            return False
        return True

    @property
    def publishing_topics(self) -> list[str]:
        s = self.settings
        if s is None or not s.HasField("publishing"):
            return []
        return [t.name for t in s.publishing.topics]


class ClientRegistry:
    """Sessions by client id; forgotten once silent for ``expiry`` seconds with no stream open."""

    def __init__(self, expiry: float = 120.0) -> None:
        self.sessions: dict[str, ClientSession] = {}
        self.expiry = expiry

    def touch(self, client_id: str, peer: str) -> ClientSession:
        session = self.sessions.get(client_id)
        if session is None:
            session = self.sessions[client_id] = ClientSession(client_id, peer)
        session.peer = peer
        session.last_seen = time.monotonic()
        return session

    def drop(self, client_id: str) -> ClientSession | None:
        session = self.sessions.pop(client_id, None)
        if session is not None:
            session.end_stream()
        return session

    def expired(self, now: float | None = None) -> list[ClientSession]:
        """Remove and return the sessions silent past the expiry (their streams are closed)."""
        t = time.monotonic() if now is None else now
        gone = [s for s in self.sessions.values() if s.stream is None and t - s.last_seen > self.expiry]
        for s in gone:
            del self.sessions[s.client_id]
        return gone
