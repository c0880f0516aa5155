"""Transactional messages: :class:`TransactionProducer` (asyncio; its blocking facade is
:class:`~.sync_producers.SyncTransactionProducer`).

One transaction (Apache RocketMQ 4.9's ``sendMessageInTransaction``, which this follows):

1. the message is sent as a *half message*: properties ``TRAN_MSG=true`` and ``PGROUP=<group>``,
   ``sysFlag`` | PREPARED (0x4) — the broker keeps it out of consumers' sight;
2. once the broker stored it, ``execute_local_transaction(msg, arg)`` runs (a plain function runs on
   a worker thread, a coroutine function on the loop) and returns :class:`TransactionState`; an
   exception or None counts as UNKNOWN; a send the broker did not store OK means ROLLBACK;
3. END_TRANSACTION (37, oneway) goes to the broker that stored the half message, naming it by the
   commitlog offset inside the send's offset id and by its queue offset.

A transaction may also be left open and ended by another process (the exactly-once Spark sink:
executors send half messages, the driver ends them): :meth:`TransactionProducer.send_half` returns a
picklable :class:`HalfMessage`, and :meth:`TransactionProducer.end_half` on any producer of the same
group ends it and waits for the broker's answer.

When the broker still knows no outcome (UNKNOWN, or the producer died), it asks the group later
with CHECK_TRANSACTION_STATE (39); ``check_local_transaction(msg)`` answers and the producer sends
END_TRANSACTION with ``fromTransactionCheck=true`` (:func:`end_header_from_check`).

Batches and delayed messages cannot be transactional (:class:`~.errors.MQClientError`).
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, TypedDict, Unpack

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import EndTransactionRequestHeader
from pyrocketmq.remoting.message import (
    MessageExt,
    Prop,
    SysFlag,
    decode_offset_msg_id,
    decode_properties,
    encode_properties,
)

from .errors import MQBrokerError, MQClientError
from .message import Message, SendResult, SendStatus
from .producer import Producer
from .send_payload import Payload
from .settings import DEFAULT_NAMESRV, ClientSettings, ProducerSettings
from .trace import MSG_TYPE_HALF, EndTransactionTrace

log = logging.getLogger("pyrocketmq.client")


class TransactionState(enum.IntEnum):
    """A local transaction's outcome; the values are END_TRANSACTION's ``commitOrRollback``."""

    UNKNOWN = 0
    COMMIT = 8
    ROLLBACK = 12


_JAVA_STATE = {TransactionState.COMMIT: "COMMIT_MESSAGE", TransactionState.ROLLBACK: "ROLLBACK_MESSAGE",
               TransactionState.UNKNOWN: "UNKNOW"}
"""Java's ``LocalTransactionState`` names, as trace records spell them."""

LocalExecutor = Callable[[Message, Any], "TransactionState | None | Awaitable[TransactionState | None]"]
LocalChecker = Callable[[MessageExt], "TransactionState | None | Awaitable[TransactionState | None]"]


class TransactionHooks(TypedDict, total=False):
    """The keyword arguments a transaction producer takes beyond a producer's."""

    check_local_transaction: LocalChecker | None
    """Answers the broker's CHECK_TRANSACTION_STATE about an unresolved transaction."""
    execute_local_transaction: LocalExecutor | None
    """Runs the local transaction of :meth:`TransactionProducer.send_in_transaction` by default."""


@dataclass(slots=True, frozen=True)
class TransactionSendResult(SendResult):
    """A :class:`~.message.SendResult` with the local transaction's outcome."""

    local_state: TransactionState = TransactionState.UNKNOWN


@dataclass(slots=True, frozen=True)
class HalfMessage:
    """An open half message, as END_TRANSACTION names it (picklable: it may be ended elsewhere)."""

    topic: str
    broker_name: str
    msg_id: str
    commit_log_offset: int
    queue_offset: int
    """The half message's offset in the broker's half queue (``tranStateTableOffset``)."""
    transaction_id: str | None = None

    @classmethod
    def of(cls, result: SendResult) -> HalfMessage:
        """The half message a send of it reported (the commitlog offset is inside the offset id)."""
        _ip, _port, offset = decode_offset_msg_id(result.offset_msg_id or result.msg_id)
        mq = result.message_queue
        return cls(mq.topic, mq.broker_name, result.msg_id, offset, result.queue_offset,
                   result.transaction_id)

    def end_header(self, group: str, state: TransactionState) -> EndTransactionRequestHeader:
        return EndTransactionRequestHeader(
            producer_group=group,
            tran_state_table_offset=self.queue_offset,
            commit_log_offset=self.commit_log_offset,
            commit_or_rollback=int(state),
            msg_id=self.msg_id,
            from_transaction_check=False,
            transaction_id=self.transaction_id,
        )


def as_half_message(payload: Payload, group: str) -> Payload:
    """``payload`` as a half message of producer group ``group``.

    >>> p = as_half_message(Payload("T", b"x", 0, "WAIT\\x01true\\x02", 0, False, "ID"), "pg")
    >>> p.sys_flag, sorted(decode_properties(p.properties.encode()).items())
    (4, [('PGROUP', 'pg'), ('TRAN_MSG', 'true'), ('WAIT', 'true')])
    """
    props = decode_properties(payload.properties.encode())
    props[Prop.TRAN_MSG] = "true"
    props[Prop.PGROUP] = group
    return replace(
        payload,
        properties=encode_properties(props).decode(),
        sys_flag=payload.sys_flag | SysFlag.TRANSACTION_PREPARED,
    )


def end_header(result: SendResult, group: str, state: TransactionState) -> EndTransactionRequestHeader:
    """The END_TRANSACTION header closing the half message ``result`` reports.

    The commitlog offset is the one inside the offset id (the unique id when there is none).
    """
    return HalfMessage.of(result).end_header(group, state)


def end_header_from_check(
    group: str, fields: dict[str, str], msg: MessageExt, state: TransactionState
) -> EndTransactionRequestHeader:
    """The END_TRANSACTION header answering a CHECK_TRANSACTION_STATE (its ext ``fields``, its message)."""
    return EndTransactionRequestHeader(
        producer_group=group,
        tran_state_table_offset=int(fields["tranStateTableOffset"]),
        commit_log_offset=int(fields["commitLogOffset"]),
        commit_or_rollback=int(state),
        msg_id=msg.properties.get(Prop.UNIQ_KEY) or fields.get("msgId") or "",
        from_transaction_check=True,
        transaction_id=fields.get("transactionId"),
    )


def _state(value: Any) -> TransactionState:
    if value is None:
        return TransactionState.UNKNOWN
    try:
        return TransactionState(value)
    except ValueError:
        log.warning("a local transaction returned %r; counted as UNKNOWN", value)
        return TransactionState.UNKNOWN


async def _call(fn: Callable[..., Any], *args: Any) -> TransactionState:
    if inspect.iscoroutinefunction(fn):
        return _state(await fn(*args))
    value = await asyncio.get_running_loop().run_in_executor(None, fn, *args)
    if inspect.isawaitable(value):
        value = await value
    return _state(value)


class TransactionProducer(Producer):
    """An asyncio producer that also sends transactional messages.

    Example::

        def execute(msg, arg):           # or an async def
            db.save(arg)
            return TransactionState.COMMIT

        def check(msg):                  # the broker asks about an unresolved transaction
            found = db.has(msg.properties["UNIQ_KEY"])
            return TransactionState.COMMIT if found else TransactionState.ROLLBACK

        producer = TransactionProducer("tx-group", "127.0.0.1:9876", check_local_transaction=check)
        await producer.start()
        result = await producer.send_in_transaction(Message("Orders", b"paid"), execute, arg=order)
        print(result.local_state, result.msg_id)
        await producer.shutdown()

    ``execute_local_transaction`` may also be given to the constructor and then left out of
    :meth:`send_in_transaction`. Plain (non-transactional) sends work as on :class:`Producer`.
    """

    def __init__(self, group: str, namesrv_addr: str = DEFAULT_NAMESRV,
                 settings: ProducerSettings | None = None, client: ClientSettings | None = None,
                 **hooks: Unpack[TransactionHooks]) -> None:
        super().__init__(group, namesrv_addr, settings, client)
        self.check_local_transaction = hooks.get("check_local_transaction")
        self.execute_local_transaction = hooks.get("execute_local_transaction")
        self._checks: set[asyncio.Task[None]] = set()

    async def shutdown(self) -> None:
        if self._checks:
            await asyncio.gather(*list(self._checks), return_exceptions=True)
        await super().shutdown()

    async def send_in_transaction(
        self,
        msg: Message,
        execute_local_transaction: LocalExecutor | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> TransactionSendResult:
        """Send ``msg`` as a half message, run the local transaction, end it (module docstring)."""
        execute = execute_local_transaction or self.execute_local_transaction
        if execute is None:
            raise MQClientError("no local transaction to run: pass execute_local_transaction")
        result = await self._store_half(msg, timeout)
        group = self.group
        if result.status is SendStatus.SEND_OK:
            try:
                state = await _call(execute, msg, arg)
            except Exception:
                log.exception(
                    "the local transaction of message %s failed; its state is UNKNOWN", result.msg_id
                )
                state = TransactionState.UNKNOWN
        else:
            state = TransactionState.ROLLBACK
        try:
            await self._end(result, state)
        except Exception as e:
            log.warning(
                "END_TRANSACTION of %s (%s) failed: %s; the broker will check back",
                result.msg_id,
                state.name,
                e,
            )
        if self._tracer is not None:
            self._tracer.add(EndTransactionTrace(
                int(time.time() * 1000), group, msg.topic, result.msg_id, msg.tags or "",
                " ".join(msg.key_list()), self.instance.master_addr(result.message_queue.broker_name) or "",
                result.transaction_id or "",
                _JAVA_STATE[state], False))  # fmt: skip
        fields = {f: getattr(result, f) for f in SendResult.__dataclass_fields__}
        return TransactionSendResult(**fields, local_state=state)

    async def _store_half(self, msg: Message, timeout: float | None) -> SendResult:
        """Send ``msg`` as a half message (checked: one message, not delayed) and trace it."""
        if not isinstance(msg, Message):
            raise MQClientError("a batch cannot be transactional: send each message in its own transaction")
        if msg.delay_level:
            raise MQClientError("a delayed message cannot be transactional: set delay_level=0")
        group = self.group
        started = time.monotonic()
        result: SendResult = await self._send(msg, timeout, None, None, None, None, oneway=False,
                                              prepare=lambda p: as_half_message(p, group))
        self._traced(msg, started, result, MSG_TYPE_HALF)
        return result

    async def send_half(self, msg: Message, timeout: float | None = None) -> HalfMessage:
        """Send ``msg`` as a half message and leave its transaction open: :meth:`end_half` (here or
        on another producer of this group) or the broker's check-back ends it.

        A send the broker did not store OK is rolled back (best effort) and raises
        :class:`~.errors.MQBrokerError`.

        Example::

            half = await producer.send_half(Message("Orders", b"paid"))
            ...                                   # later, maybe in another process
            await other_producer_of_group.end_half(half, TransactionState.COMMIT)
        """
        result = await self._store_half(msg, timeout)
        half = HalfMessage.of(result)
        if result.status is not SendStatus.SEND_OK:
            try:
                await self.end_half(half, TransactionState.ROLLBACK, timeout)
            except Exception as e:  # the broker's check-back asks about it later
                log.warning("rolling back half message %s failed: %s", half.msg_id, e)
            raise MQBrokerError(ResponseCode.SYSTEM_ERROR,
                                f"half message {half.msg_id} was stored {result.status.name}; rolled back")
        return half

    async def end_half(
        self, half: HalfMessage, state: TransactionState, timeout: float | None = None
    ) -> None:
        """End ``half`` (COMMIT or ROLLBACK) and wait for the broker's answer; a refusal (no such
        half message, another group's, already moved on) raises :class:`~.errors.MQBrokerError`.

        Ending a half message twice commits it twice on brokers that do not remember outcomes
        (Apache RocketMQ's and ours): the caller ends each half message once.
        """
        if state is TransactionState.UNKNOWN:
            raise MQClientError("end_half needs COMMIT or ROLLBACK: UNKNOWN leaves the half message open")
        inst = self.instance
        addr = await inst.master_addr_of(half.topic, half.broker_name)
        header = half.end_header(self.group, state)
        cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext())
        response = await inst.invoke(addr, cmd, timeout)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError(response.code, f"END_TRANSACTION {state.name} of {half.msg_id}: "
                                f"{response.remark}", addr)

    async def _end(self, result: SendResult, state: TransactionState) -> None:
        inst = self.instance
        addr = await inst.master_addr_of(result.message_queue.topic, result.message_queue.broker_name)
        header = end_header(result, self.group, state)
        await inst.invoke_oneway(
            addr, RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext(), oneway=True)
        )

    # -- broker checks (called by the client instance on CHECK_TRANSACTION_STATE) ------------------
    def on_check_transaction(self, broker_addr: str, msg: MessageExt, fields: dict[str, str]) -> None:
        task = asyncio.ensure_future(self._answer_check(broker_addr, msg, fields))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _answer_check(self, broker_addr: str, msg: MessageExt, fields: dict[str, str]) -> None:
        checker = self.check_local_transaction
        if checker is None:
            log.info("transaction check of %s ignored: no check_local_transaction given", msg.msg_id)
            return
        try:
            state = await _call(checker, msg)
        except Exception:
            log.exception("check_local_transaction failed for %s; answering UNKNOWN", msg.msg_id)
            state = TransactionState.UNKNOWN
        try:
            header = end_header_from_check(self.group, fields, msg, state)
            cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext(), oneway=True)
            await self.instance.invoke_oneway(broker_addr, cmd)
        except Exception as e:
            log.warning("answering the transaction check of %s failed: %s", msg.msg_id, e)
