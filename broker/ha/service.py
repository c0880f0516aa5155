"""The sockets of replication: the master's HA server and the slave's HA client.

Master (``HAServer``, on ``listenPort + 1``): per slave connection one reader loop takes the
slave's 8-byte offset reports into the ``AckTable`` (waking SYNC_MASTER senders), and one writer
loop sends the commitlog from where the slave stands (from the start of the last segment when it
reports 0) in frames of at most 32 KiB, waiting on ``notify()`` for new data and sending an empty
frame after 5 s without one. SYNC_MASTER waits are futures in the table, expired by one timer.

Slave (``HAClient``): connects to the master's HA address (``haMasterAddress``, else the one the
name server returned), reports its commitlog max offset at once, after each batch and every 5 s,
appends each frame at exactly its offset (``MessageStore.append_replica``; a gap closes the
connection) and reconnects after any error. The layout is drawn in ``frame``.

TLS (see :mod:`pyrocketmq.remoting.tls`): a master whose ``tls.server.mode`` is ``enforcing`` serves
the HA port over TLS only (a plain slave's connection fails its handshake and is closed), one in
``permissive`` mode serves TLS to a slave whose first byte is a handshake record and plain to the
others (an offset report never starts with 0x16); a slave connects over TLS when its own mode is
``enforcing``, presenting its certificate. The servers of one deployment share the mode.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Callable
from typing import Any

from pyrocketmq.broker.store.message_store import MessageStore
from pyrocketmq.broker.store.values import PutMessageStatus
from pyrocketmq.remoting.listener import Listener
from pyrocketmq.remoting.tls import ServerTls

from .ack_table import AckTable
from .frame import (
    TRANSFER_BATCH_SIZE,
    FrameError,
    FrameReader,
    OffsetReader,
    encode_frame,
    encode_identity,
    encode_offset,
    master_start_offset,
)

log = logging.getLogger("pyrocketmq.broker.ha")

HEARTBEAT_INTERVAL = 5.0
"""``haSendHeartbeatInterval``: seconds of silence after which either side sends a heartbeat."""
HOUSEKEEPING_INTERVAL = 20.0
"""``haHousekeepingInterval``: seconds without a byte from the peer before the link is dropped."""
SLAVE_FALL_BEHIND_MAX = 256 * 1024 * 1024
"""``haSlaveFallbehindMax``: a slave further behind than this does not count for SYNC_MASTER."""
RECONNECT_DELAY = 1.0
SNIFF_TIMEOUT = 10.0
"""Permissive TLS: how long an accepted connection may stay silent before its first byte decides."""


class HAServer:
    """The master side. ``wait_for_slave(end_offset, timeout)`` is the SYNC_MASTER hook."""

    def __init__(self, store: MessageStore, *, min_in_sync: int = 1, tls: ServerTls | None = None) -> None:
        self.store = store
        self.tls = tls or ServerTls()
        ssl_context = self.tls.peer_context()
        self._listener = None if ssl_context is None else Listener(  # with TLS, connections are accepted here
            "HA port", self._stream_protocol, ssl_context, self.tls.mode, refused=_refused, log=log,
            backlog=128, sniff_timeout=SNIFF_TIMEOUT, sniff_enforcing=False,
        )
        self.min_in_sync = min_in_sync
        """Controller mode: the smallest in-sync set (master included) a SYNC_MASTER writes with."""
        self.table = AckTable()
        self._server: asyncio.Server | None = None
        self._data = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._conns: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        if self._listener is None:
            self._server = await asyncio.start_server(self._serve, host, port)
            bound: int = self._server.sockets[0].getsockname()[1]
            return bound
        return self._listener.start(host, port)

    def _stream_protocol(self) -> asyncio.StreamReaderProtocol:
        """One slave's connection as the streams :meth:`_serve` reads and writes (``start_server``'s own)."""
        return asyncio.StreamReaderProtocol(asyncio.StreamReader(), self._serve)

    def notify(self) -> None:
        """New commitlog data: wake the writer loops."""
        self._data.set()

    @property
    def lag_bytes(self) -> int | None:
        """Master max offset minus the best slave acknowledgement (None with no slave)."""
        if not self.table.connected:
            return None
        return max(0, self.store.get_max_phy_offset() - max(self.table.acked, 0))

    # -- SYNC_MASTER ----------------------------------------------------------------------------
    def wait_for_slave(self, end_offset: int, timeout: float) -> asyncio.Future[PutMessageStatus]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[PutMessageStatus] = loop.create_future()
        t = self.table
        if t.required is not None:  # controller mode: every other member of the in-sync set
            if len(t.required) + 1 < self.min_in_sync:
                fut.set_result(PutMessageStatus.SLAVE_NOT_AVAILABLE)
                return fut
        elif not t.connected or self.store.get_max_phy_offset() - max(t.acked, 0) > SLAVE_FALL_BEHIND_MAX:
            fut.set_result(PutMessageStatus.SLAVE_NOT_AVAILABLE)
            return fut

        def wake(ok: bool) -> None:
            if not fut.done():
                fut.set_result(PutMessageStatus.PUT_OK if ok else PutMessageStatus.FLUSH_SLAVE_TIMEOUT)

        t.wait(end_offset, loop.time() + timeout, wake)
        self._arm(loop)
        return fut

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        nxt = self.table.next_deadline()
        if nxt is None:
            return
        if self._timer is not None and self._timer_at <= nxt:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = nxt
        self._timer = loop.call_at(nxt, self._expire, loop)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        self.table.expire(loop.time())
        self._arm(loop)

    # -- connections ----------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        peer = writer.get_extra_info("peername")
        key = object()
        first: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.table.connect(key)
        self.table.heard(key, time.monotonic())
        read_task = asyncio.ensure_future(self._read(reader, key, first))
        log.info("slave %s connected", peer)
        try:
            waiters: list[asyncio.Future[Any]] = [read_task, first]
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            if first.done():
                await self._write(writer, first.result(), read_task)
        except (ConnectionError, OSError) as e:
            log.info("slave %s: %s", peer, e)
        except asyncio.CancelledError:
            pass
        finally:
            read_task.cancel()
            self.table.disconnect(key)
            if not self.table.connected and self.table.required is None:
                # the last slave left (a restart, a lost pod): a waiting send can no longer reach a
                # slave, so it is answered now (stored on the master only) instead of at its deadline,
                # after the client gave up. Controller mode waits for the controller to shrink the set.
                self.table.fail_all()
            writer.close()
            self._conns.discard(task)
            log.info("slave %s disconnected", peer)

    async def _read(self, reader: asyncio.StreamReader, key: object, first: asyncio.Future[int]) -> None:
        offsets = OffsetReader()
        while True:
            try:
                data = await asyncio.wait_for(reader.read(4096), HOUSEKEEPING_INTERVAL)
            except (TimeoutError, ConnectionError, OSError):
                return
            if not data:
                return
            try:
                off = offsets.feed(data)
            except FrameError as e:
                log.warning("closing HA connection: %s", e)
                return
            if off is None:
                continue
            self.table.heard(key, time.monotonic())
            if offsets.replica_id is not None and key not in self.table.replica_of:
                self.table.identify(key, offsets.replica_id)
            if not first.done():
                first.set_result(off)
            self.table.ack(key, off)

    async def _write(
        self, writer: asyncio.StreamWriter, slave_offset: int, read_task: asyncio.Task[None]
    ) -> None:
        store = self.store
        nxt = master_start_offset(slave_offset, store.get_max_phy_offset(), store.commit_log.file_size)
        log.info("sending the commitlog from %d (slave reported %d)", nxt, slave_offset)
        if slave_offset > store.get_max_phy_offset():
            # its log is not a prefix of this one (it should have been cut where this master's epoch starts)
            log.warning("slave reported offset %d, past this master's end %d: it holds records this master "
                        "never wrote", slave_offset, store.get_max_phy_offset())
        last = time.monotonic()
        while not read_task.done():
            self._data.clear()
            data = store.get_commit_log_data(nxt, TRANSFER_BATCH_SIZE)
            if data is not None:
                writer.write(encode_frame(nxt, data))
                nxt += len(data)
                await writer.drain()
                last = time.monotonic()
                continue
            if time.monotonic() - last >= HEARTBEAT_INTERVAL:
                writer.write(encode_frame(nxt))
                await writer.drain()
                last = time.monotonic()
            try:
                await asyncio.wait_for(self._data.wait(), 1.0)
            except TimeoutError:
                pass

    async def drop_slaves(self) -> None:
        """No longer master (controller mode): close every slave link and fail the waiting senders."""
        for t in list(self._conns):
            t.cancel()
        if self._conns:
            await asyncio.gather(*self._conns, return_exceptions=True)
        self.table.fail_all()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._listener is not None:
            await self._listener.stop()
        for t in list(self._conns):
            t.cancel()
        if self._conns:
            await asyncio.gather(*self._conns, return_exceptions=True)
        if self._timer is not None:
            self._timer.cancel()
        self.table.fail_all()


def _refused(peer: str, e: OSError) -> None:
    """Report a slave's connection closed before it was served (a failed handshake, say)."""
    if isinstance(e, ssl.SSLError):
        log.warning("HA connection from %s refused: TLS handshake failed: %s", peer,
                    getattr(e, "verify_message", None) or e.reason or e)
    else:
        log.info("HA connection from %s closed before serving it: %s", peer, str(e) or type(e).__name__)


class HAClient:
    """The slave side: ``run()`` until cancelled; ``master_addr()`` says where to connect."""

    def __init__(
        self, store: MessageStore, master_addr: Callable[[], str | None], replica_id: int | None = None,
        *, tls_context: ssl.SSLContext | None = None,
    ) -> None:
        self.store = store
        self.ssl = tls_context
        """TLS to the master (its own ``tls.server.mode`` enforcing, see the module docstring)."""
        self.master_addr = master_addr
        self.replica_id = replica_id
        """Controller mode: named to the master first, so its acknowledgements count for the in-sync set."""
        self.connected = False
        self._writer: asyncio.StreamWriter | None = None

    def disconnect(self) -> None:
        """End the current session (the master changed); the service connects again after RECONNECT_DELAY."""
        if self._writer is not None:
            self._writer.close()

    async def connect_round(self) -> None:
        """One session with the master, until it ends (the service reconnects after RECONNECT_DELAY)."""
        addr = self.master_addr()
        if not addr:
            return
        try:
            await self._session(addr)
        except ssl.SSLError as e:
            log.warning("HA link to master %s: TLS handshake failed: %s", addr,
                        getattr(e, "verify_message", None) or e.reason or e)
        except (ConnectionError, OSError, FrameError) as e:
            log.info("HA link to master %s: %s", addr, e)
        except TimeoutError:
            log.warning("HA link to master %s silent for %.0f s; reconnecting", addr, HOUSEKEEPING_INTERVAL)
        finally:
            self.connected = False

    async def _session(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        reader, writer = await asyncio.wait_for(asyncio.open_connection(
            host, int(port), ssl=self.ssl, server_hostname=host if self.ssl is not None else None,
        ), 3.0 if self.ssl is None else 5.0)
        store = self.store
        self._writer = writer
        try:
            self.connected = True
            reported = store.get_max_phy_offset()
            if self.replica_id is not None:
                writer.write(encode_identity(self.replica_id))
            writer.write(encode_offset(reported))
            await writer.drain()
            log.info("connected to master %s, reporting offset %d", addr, reported)
            frames = FrameReader()
            last_report = time.monotonic()
            last_read = last_report
            while True:
                try:
                    # the next report is due HEARTBEAT_INTERVAL after the last: the master counts a
                    # slave silent for twice that as cut off (replica.SLAVE_SILENT_S)
                    due = max(0.05, last_report + HEARTBEAT_INTERVAL - time.monotonic())
                    data = await asyncio.wait_for(reader.read(256 * 1024), due)
                except TimeoutError:
                    data = None
                now = time.monotonic()
                if data == b"":
                    raise ConnectionError("master closed the connection")
                if data:
                    last_read = now
                    if self.master_addr() != addr:  # a new master was chosen while this link was open
                        raise ConnectionError(f"{addr} is no longer the master to follow")
                    frames.feed(data)
                    for frame in frames:
                        ours = store.get_max_phy_offset()
                        if ours != 0 and frame.offset != ours:
                            raise FrameError(f"master sent offset {frame.offset}, the slave holds {ours}")
                        if frame.body and not store.append_replica(frame.offset, frame.body):
                            raise FrameError(f"cannot append replica data at {frame.offset}")
                elif now - last_read > HOUSEKEEPING_INTERVAL:
                    raise TimeoutError
                ours = store.get_max_phy_offset()
                if ours != reported or now - last_report >= HEARTBEAT_INTERVAL:
                    writer.write(encode_offset(ours))
                    await writer.drain()
                    reported, last_report = ours, now
        finally:
            self._writer = None
            writer.close()
