"""END_TRANSACTION (37, oneway from producers) and the CHECK_TRANSACTION_STATE (39) the broker sends.

END_TRANSACTION names a half message by commitlog offset; it is looked up and validated
(:func:`~..transaction.end_problem`). COMMIT stores the real message, then the op record; ROLLBACK
stores the op record only; UNKNOWN (0) does nothing (the check service asks again later). A slave
refuses. Being oneway, the answer is only for a client that asked for one; problems are logged.
With the ACL on, ending needs rights on the producer group (:mod:`~pyrocketmq.server.acl_table`)
and a commit PUB on the real topic, asked here once the half message is found.

:meth:`TransactionProcessor.send_check` picks one connected producer of the group (round-robin over
the ProducerManager's channels) and sends it the check: header ``tranStateTableOffset``,
``commitLogOffset``, ``msgId``, ``transactionId``, ``offsetMsgId``; body = the stored half message
with its topic and queue id restored to ``REAL_TOPIC``/``REAL_QID``.
"""

from __future__ import annotations

import itertools
import logging
import time
from typing import TYPE_CHECKING

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import EndTransactionRequestHeader, HeaderError
from pyrocketmq.remoting.message import MessageExt, Prop, encode_message
from pyrocketmq.remoting.names import PERM_READ, PERM_WRITE
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult, RemotingError
from pyrocketmq.server.acl_perm import PUB
from pyrocketmq.server.acl_service import acl_refusal

from ..settings import BrokerRole
from ..store.values import PutMessageStatus
from ..transaction import (
    COMMIT,
    HALF_TOPIC,
    OP_TOPIC,
    ROLLBACK,
    check_body_message,
    committed_inner,
    end_problem,
    op_inner,
)

if TYPE_CHECKING:
    from ..client_manager import ProducerManager
    from ..settings import BrokerSettings
    from ..stats import BrokerStats
    from ..store.message_store import MessageStore
    from ..topic_config import TopicConfigManager

log = logging.getLogger("pyrocketmq.broker")


class TransactionProcessor:
    def __init__(
        self,
        *,
        settings: BrokerSettings,
        topics: TopicConfigManager,
        producers: ProducerManager,
        store: MessageStore,
        stats: BrokerStats,
        store_host: bytes,
    ) -> None:
        self.settings = settings
        self.topics = topics
        self.producers = producers
        self.store = store
        self.stats = stats
        self.store_host = store_host
        self._rr = itertools.count()

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.END_TRANSACTION, self.handle_end)

    def ensure_topic(self, topic: str) -> None:
        """Give a system topic a config (one queue, read/write) the first time it is written, as
        Java does, so that admin tools and pulls can see it."""
        if self.topics.get(topic) is None:
            self.topics.create_in_send_back(topic, 1, PERM_READ | PERM_WRITE)

    def handle_end(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            h = EndTransactionRequestHeader.from_command(cmd)
        except HeaderError as e:
            log.warning("END_TRANSACTION from %s: bad header: %s", conn.remote_addr, e)
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad end transaction header: {e}")
        if self.settings.identity.role == BrokerRole.SLAVE:
            return cmd.response(
                ResponseCode.SLAVE_NOT_AVAILABLE, "the broker is a slave: it ends no transaction"
            )
        if h.commit_or_rollback not in (COMMIT, ROLLBACK):
            return None  # UNKNOWN (or any other value, as Java): the check service asks again
        if h.commit_log_offset < 0 or h.tran_state_table_offset < 0:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR, "commitLogOffset and tranStateTableOffset must not be negative"
            )
        store = self.store
        msg = store.look_message(h.commit_log_offset)
        if msg is None:
            log.warning("END_TRANSACTION %s from %s: no half message at commitlog offset %d",
                        h.msg_id, conn.remote_addr, h.commit_log_offset)
            return cmd.response(ResponseCode.SYSTEM_ERROR, "find prepared transaction message failed")
        problem = end_problem(
            msg,
            producer_group=h.producer_group,
            tran_state_table_offset=h.tran_state_table_offset,
            commit_log_offset=h.commit_log_offset,
        )
        if problem is not None:
            log.warning("END_TRANSACTION %s from %s refused: %s", h.msg_id, conn.remote_addr, problem)
            return cmd.response(ResponseCode.SYSTEM_ERROR, problem)
        if h.commit_or_rollback == COMMIT:
            inner = committed_inner(msg)
            if inner is None:
                log.warning("END_TRANSACTION %s: the half message names no REAL_TOPIC/REAL_QID", h.msg_id)
                return cmd.response(
                    ResponseCode.SYSTEM_ERROR, "the half message names no REAL_TOPIC/REAL_QID"
                )
            denied = acl_refusal(conn, cmd, {inner.topic: PUB})  # a commit publishes to the real topic
            if denied is not None:
                return denied
            result = store.put_message(inner)
            if result.status != PutMessageStatus.PUT_OK:
                log.warning(
                    "END_TRANSACTION %s: storing the committed message failed (%s)",
                    h.msg_id,
                    result.status.name,
                )
                return cmd.response(
                    ResponseCode.SYSTEM_ERROR, f"storing the committed message failed: {result.status.name}"
                )
        self.stats.on_end_transaction(msg.properties.get(Prop.REAL_TOPIC, ""), h.commit_or_rollback == COMMIT)
        self.ensure_topic(HALF_TOPIC)
        self.ensure_topic(OP_TOPIC)
        op = op_inner(msg.queue_offset, store_host=self.store_host, born_timestamp=int(time.time() * 1000))
        result = store.put_message(op)
        if result.status != PutMessageStatus.PUT_OK:
            log.warning("END_TRANSACTION %s: writing the op record failed (%s)", h.msg_id, result.status.name)
            return cmd.response(
                ResponseCode.SYSTEM_ERROR, f"writing the op record failed: {result.status.name}"
            )
        return cmd.response(ResponseCode.SUCCESS)

    def send_check(self, group: str, msg: MessageExt) -> bool:
        """Ask one producer of ``group`` (in turn) for the transaction's state; a producer whose
        connection or Telemetry stream is gone is passed over for the next, so a check is not lost
        to a client that left until the next check turn."""
        conns = [c for c in self.producers.groups.get(group) or () if getattr(c, "is_open", True)]
        if not conns:
            log.info("transaction check of %s: no producer of group %s is connected", msg.msg_id, group)
            return False
        start = next(self._rr)
        body_msg = check_body_message(msg)
        fields = {
            "tranStateTableOffset": str(msg.queue_offset),
            "commitLogOffset": str(msg.commitlog_offset),
            "msgId": msg.properties.get(Prop.UNIQ_KEY) or msg.offset_msg_id,
            "transactionId": msg.properties.get(Prop.UNIQ_KEY) or msg.offset_msg_id,
            "offsetMsgId": msg.offset_msg_id,
        }
        body = bytes(encode_message(body_msg))
        for i in range(len(conns)):
            conn = conns[(start + i) % len(conns)]
            try:
                conn.invoke_oneway(RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, fields, body))
            except RemotingError as e:
                log.info("transaction check of %s to %s failed: %s", msg.msg_id, conn.remote_addr, e)
                continue
            return True
        return False
