"""Controller mode (``enableControllerMode=true``): this replica's side of automatic failover.

Every ``controllerHeartbeatIntervalMs`` the replica reports its replica id, addresses, max offset
and epoch to the controller and applies the answer (the group's view, see
``pyrocketmq.namesrv.controller.state``):

- **named master** (new epoch): stop following, cut a partial record left by replication, note
  where the epoch starts (``config/replica.json``) and report it; once the controller has recorded
  that start the broker takes the configured master role, registers as brokerId 0 and starts the
  master-only services (delay levels, timer delivery, transaction checks). Nothing is written
  between the election and that point, so the epoch history the controller keeps is exact.
- **master**: keep the in-sync set true. A slave whose acknowledgements are within
  ``haMaxGapNotInSync`` of the head (and inside this epoch) should be in it, one that is not (or is
  gone, or silent for ``SLAVE_SILENT_S``: a frozen node, a cut cable) should leave. A joiner is
  waited for *before* the controller is asked, a leaver only *after* the controller agreed: at no
  time is a SYNC_MASTER send acknowledged without every member the controller could elect.
- **told someone else is master**: a master steps down at once (sends refused, slave links
  dropped, master services stopped); then, before following the new master, the log is cut where
  the history says its epoch ended (``truncate_point``) — the unreplicated tail of a deposed
  master, or of a slave that received more of the last epoch than the replica elected, is logged
  and dropped, never served — and replication restarts from there. That point is the new master's
  epoch start: until the controller has recorded it, the replica follows nobody.
- the controller unreachable: a slave keeps following; a master keeps serving while it reaches
  an in-sync slave (the controllers lost: sends are still acknowledged by every member the
  controller could elect). A master that reaches neither a controller (for ``FENCE_AFTER_S``) nor
  any other member of its in-sync set is cut off (a partition): it cannot acknowledge a send (the
  set cannot shrink without the controller), another replica is master by then, so it steps down
  as above and, registered as a slave, leaves the routes of the name servers it still reaches
  (their clients ask another name server). Told again that it is master, it resumes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.transport import RemotingError

from ..registration import Registrar, outgoing_client
from ..settings import BrokerRole, BrokerSettings
from ..store.message_store import MessageStore
from .service import HEARTBEAT_INTERVAL, HAClient, HAServer

log = logging.getLogger("pyrocketmq.broker.ha")

NO_MASTER = -1
FENCE_AFTER_S = 6.0
"""A master no controller has answered for this long steps down (twice the controller's expiry)."""
SLAVE_SILENT_S = 2 * HEARTBEAT_INTERVAL
"""A slave link with no report for this long counts as cut (a slave reports at least every
``HEARTBEAT_INTERVAL``; a cut cable leaves the socket open until the housekeeping closes it)."""


def truncate_point(history: list[tuple[int, int]], epoch: int, max_offset: int) -> int | None:
    """Where a log following ``epoch`` and ending at ``max_offset`` is cut before following the master
    of the last epoch of ``history``: the start of the first later epoch when the log reaches past it,
    else its end; None while that start is the last epoch's and not recorded yet.

    An earlier epoch with no start had a master that never wrote (it takes writes only once its
    start is recorded), so the next one decides. The current master's start is not known before it
    reports it, and it is needed: this log may hold more of the last epoch than the new master, a
    record that never became acknowledged, which the new master writes over.

    >>> truncate_point([(1, 0), (2, 1000)], 1, 1500)
    1000
    >>> truncate_point([(1, 0), (2, -1)], 1, 1500) is None
    True
    """
    for i, (e, start) in enumerate(history):
        if e > epoch and start >= 0:
            return min(max_offset, start)
        if e > epoch and i == len(history) - 1:
            return None
    return max_offset


class ReplicaManager:
    """See the module docstring; ``round()`` is the heartbeat service's round."""

    def __init__(
        self,
        settings: BrokerSettings,
        store: MessageStore,
        registrar: Registrar,
        ha_server: HAServer,
        ha_client: HAClient,
        *,
        start_master: Callable[[], None],
        stop_master: Callable[[], Awaitable[None]],
    ) -> None:
        self.settings = settings
        self.store = store
        self.registrar = registrar
        self.ha_server = ha_server
        self.ha_client = ha_client
        self.start_master = start_master
        self.stop_master = stop_master
        self.client = outgoing_client(settings)
        self.path = os.path.join(settings.store.config_dir, "replica.json")
        self.epoch = 0
        """The epoch whose history this replica's log follows (persisted)."""
        self.epoch_start = -1
        """As master: where this epoch's writes begin (-1 when not master)."""
        self.master = False
        """Named master by the controller (writable once the epoch start is recorded)."""
        self.master_ha: str | None = None
        """The HA address followed as slave."""
        self.view: dict[str, Any] = {}
        self.confirmed_at = 0.0
        """Monotonic time of the last answer from a controller."""
        self._asking: set[asyncio.Future[RemotingCommand | None]] = set()
        self._unanswering: set[str] = set()
        """Controllers whose last request failed or timed out."""
        self._following: tuple[int, str] | None = None

    # -- persistence ----------------------------------------------------------------------------
    def load(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as f:
                self.epoch = int(json.load(f).get("epoch", 0))
        except FileNotFoundError:
            pass
        except (ValueError, TypeError, AttributeError) as e:
            log.warning("%s unreadable (%s): following from epoch 0", self.path, e)

    def _save(self) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"epoch": self.epoch}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    # -- the controller -------------------------------------------------------------------------
    async def _call(self, code: RequestCode, body: dict[str, Any]) -> dict[str, Any] | str | None:
        """The leading controller's view, its refusal (a string), or None when no leader answered.

        Every controller is asked at once (the followers refuse but note a heartbeat, see
        ``pyrocketmq.namesrv.controller.service``); the others' answers are left to arrive in the
        background once the leader's is in. A controller that did not answer its last request (a frozen
        one) is asked but not waited for, so the reports go on at their pace while the others elect
        a leader."""
        data = json.dumps(body).encode()
        addrs = self.settings.controller.addrs
        asks = {addr: asyncio.ensure_future(self._ask(addr, code, data)) for addr in addrs}
        for ask in asks.values():
            self._asking.add(ask)
            ask.add_done_callback(self._asking.discard)
        awaited = [ask for addr, ask in asks.items() if addr not in self._unanswering] or list(asks.values())
        for next_answer in asyncio.as_completed(awaited):
            resp = await next_answer
            if resp is None or resp.code == ResponseCode.CONTROLLER_NOT_LEADER:
                continue
            self.confirmed_at = time.monotonic()
            if resp.code != ResponseCode.SUCCESS:
                return resp.remark or f"code {resp.code}"
            view: dict[str, Any] = json.loads(bytes(resp.payload))
            return view
        return None

    async def _ask(self, addr: str, code: RequestCode, data: bytes) -> RemotingCommand | None:
        try:
            # as long as a controller may take to commit a change (COMMIT_TIMEOUT), no longer
            resp = await self.client.invoke(addr, RemotingCommand.request(code, {}, data), 2.0)
        except RemotingError as e:
            log.debug("controller %s: %s", addr, e)
            self._unanswering.add(addr)
            return None
        self._unanswering.discard(addr)
        return resp

    def readable_offset(self) -> int | None:
        """The confirm offset consumers may read up to (see :mod:`.confirmed`): as the master, what
        every in-sync slave acknowledged and at least this epoch's start; None (no limit) otherwise."""
        table = self.ha_server.table
        if not self.master or table.required is None:
            return None
        return max(table.progress, self.epoch_start)

    async def round(self) -> None:
        ident = self.settings.identity
        view = await self._call(
            RequestCode.CONTROLLER_BROKER_HEARTBEAT,
            {
                "clusterName": ident.cluster_name,
                "brokerName": ident.broker_name,
                "replicaId": ident.replica_id,
                "addr": self.registrar.addr,
                "haAddr": self.registrar.ha_addr,
                "epoch": self.epoch,
                "maxOffset": self.store.get_max_phy_offset(),
                "epochStart": self.epoch_start if self.master else -1,
            },
        )
        if isinstance(view, str):
            log.warning("controller refused the heartbeat: %s", view)
            return
        if view is not None:
            await self.apply(view)
        elif self._cut_off():
            log.warning("%s reaches no controller (for %.0f s) and no in-sync slave: stepping down as master",
                        self.settings.identity.broker_name, time.monotonic() - self.confirmed_at)
            await self._step_down()

    def _cut_off(self) -> bool:
        """A master that no controller answered for FENCE_AFTER_S and that has no link to any other
        member of its in-sync set (see the module docstring)."""
        table = self.ha_server.table
        if not self.master or not table.required or time.monotonic() - self.confirmed_at <= FENCE_AFTER_S:
            return False
        return not (table.required & table.linked(time.monotonic(), SLAVE_SILENT_S))

    async def apply(self, view: dict[str, Any]) -> None:
        self.view = view
        me = self.settings.identity.replica_id
        if view["masterId"] == me:
            if not self.master or self.epoch != view["epoch"]:
                await self._promote(view)
                await self.round()  # report the epoch start now: the controller records it
                return
            if self.settings.identity.role == BrokerRole.SLAVE and view["epochStart"] == self.epoch_start:
                await self._take_writes(view)
            if self.settings.identity.role != BrokerRole.SLAVE:
                await self._upkeep(view)
            return
        if self.master:
            await self._step_down()
        if view["masterId"] != NO_MASTER:
            self._follow(view)

    # -- becoming master ------------------------------------------------------------------------
    async def _promote(self, view: dict[str, Any]) -> None:
        if self.master:  # a newer epoch for the same master: a switchover back, or a lost answer
            await self._step_down()
        self._following = None
        self.master_ha = None
        self.ha_client.disconnect()
        dropped = self.store.truncate_to(self.store.get_max_phy_offset())
        if dropped:
            log.info("dropped %d byte(s) of a partial record left by replication", dropped)
        self.master = True
        if int(view["epoch"]) == self.epoch and int(view["epochStart"]) >= 0:
            self.epoch_start = int(view["epochStart"])  # restarted as the master of its own epoch
        else:
            self.epoch = int(view["epoch"])
            self.epoch_start = self.store.get_max_phy_offset()
        self._save()
        log.warning(
            "elected master of %s at epoch %d; writes start at offset %d once the controller records it",
            self.settings.identity.broker_name,
            self.epoch,
            self.epoch_start,
        )

    async def _take_writes(self, view: dict[str, Any]) -> None:
        me = self.settings.identity.replica_id
        self.ha_server.table.set_required(frozenset(int(x) for x in view["syncStateSet"]) - {me})
        ident = self.settings.identity
        ident.role, ident.broker_id = ident.master_role, 0
        self.registrar.master_addr = self.registrar.ha_server_addr = None
        self.start_master()
        log.warning(
            "serving as master (%s) of %s, epoch %d from offset %d",
            ident.role.value,
            ident.broker_name,
            self.epoch,
            self.epoch_start,
        )
        # in the background: a name server that does not answer (its node lost) must not hold up the
        # heartbeats, or the controller takes the silence for a dead master and elects again
        self.registrar.register_soon()

    async def _upkeep(self, view: dict[str, Any]) -> None:
        """Keep the in-sync set to the slaves that hold (nearly) everything; see the module docstring."""
        me = self.settings.identity.replica_id
        current = {int(x) for x in view["syncStateSet"]}
        head = self.store.get_max_phy_offset()
        floor = max(self.epoch_start, head - self.settings.controller.ha_max_gap_not_in_sync)
        table = self.ha_server.table
        linked = table.linked(time.monotonic(), SLAVE_SILENT_S)  # a silent slave leaves as one gone does
        caught_up = {rid for rid, off in table.acked_by_replica().items() if off >= floor and rid in linked}
        desired = {me} | caught_up
        if desired == current:
            table.set_required(frozenset(current - {me}))
            return
        table.set_required(frozenset((current | desired) - {me}))  # joiners count before the controller knows
        answer = await self._call(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, {
            "brokerName": self.settings.identity.broker_name, "replicaId": me, "epoch": self.epoch,
            "syncStateSetEpoch": view["syncStateSetEpoch"], "syncStateSet": sorted(desired),
        })
        if isinstance(answer, dict):
            self.view = answer
            table.set_required(frozenset(desired - {me}))
            log.info("in-sync set of %s now %s", self.settings.identity.broker_name, sorted(desired))
        else:
            table.set_required(frozenset(current - {me}))
            if answer is not None:
                log.warning("controller refused the in-sync set %s: %s", sorted(desired), answer)

    # -- becoming slave -------------------------------------------------------------------------
    async def _step_down(self) -> None:
        ident = self.settings.identity
        was_writing = ident.role != BrokerRole.SLAVE
        ident.role, ident.broker_id = BrokerRole.SLAVE, ident.replica_id
        self.master = False
        self.epoch_start = -1
        # The sends still waiting for the in-sync set fail first: unset, the rule becomes "any slave
        # holds it", which would acknowledge what the next master may not have.
        self.ha_server.table.fail_all()
        self.ha_server.table.set_required(None)
        await self.ha_server.drop_slaves()
        if was_writing:
            await self.stop_master()
        self.store.truncate_to(self.store.get_max_phy_offset(), whole=True)
        log.warning(
            "%s is no longer master (epoch %d); following the controller's choice",
            ident.broker_name,
            self.epoch,
        )
        self.registrar.register_soon()

    def _follow(self, view: dict[str, Any]) -> None:
        target = (int(view["epoch"]), str(view["masterHaAddr"]))
        if self._following == target:
            return
        history = [(int(e), int(s)) for e, s in view["history"]]
        end = self.store.get_max_phy_offset()
        point = truncate_point(history, self.epoch, end)
        if point is None:
            # the new master has not recorded its epoch start: where this log is cut is not known yet,
            # and replicating on from here could place its records after a tail the master never had
            if self.master_ha is not None:
                log.info("master %s (replica %s, epoch %d) has not recorded its epoch start yet: following "
                         "it once it has", view["masterAddr"], view["masterId"], target[0])
            self._following = None
            self.master_ha = None
            self.ha_client.disconnect()
            return
        dropped = self.store.truncate_to(point)
        if dropped:
            log.warning("dropped %d byte(s) of epoch %d at commitlog offsets %d..%d: never replicated to the "
                        "master of epoch %d (not acknowledged to a SYNC_MASTER client)", dropped, self.epoch,
                        end - dropped, end, target[0])
        self.epoch = target[0]
        self._save()
        self._following = target
        self.master_ha = target[1]
        self.registrar.master_addr = str(view["masterAddr"])
        self.registrar.ha_server_addr = target[1]
        self.ha_client.disconnect()
        log.info(
            "following master %s (replica %s, epoch %d) from offset %d",
            view["masterAddr"],
            view["masterId"],
            target[0],
            self.store.get_max_phy_offset(),
        )

    async def close(self) -> None:
        for ask in list(self._asking):
            ask.cancel()
        await self.client.close()
