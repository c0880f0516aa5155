"""The asyncio producer: sync, async and oneway sends, ordered sends, batches, with retries.

One send (Apache RocketMQ 4.9's ``sendDefaultImpl``, which this follows):

1. validate the message(s); give each its unique id (``UNIQ_KEY``) once, kept across retries;
2. build the payload once (:mod:`.send_payload`): a single body of at least ``compress_over``
   bytes is zlib-compressed (level 5) and flagged ``sysFlag = COMPRESSED | ZLIB`` (``0x301``, what
   the 4.9.7 Java producer sets); a list of messages becomes one SEND_BATCH_MESSAGE body
   (``encode_batch``, never compressed);
3. find the topic's publish info (its route; the default topic TBW102's route while the topic does
   not exist yet, so the broker auto-creates it);
4. pick a queue round-robin, avoiding brokers the latency fault tolerance marks slow or failing and,
   on a retry, the broker that just failed;
5. send SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320) with the short ``a..n`` header; a reply of
   0/10/11/12 is a :class:`~.message.SendResult`; on a retriable failure (codes 17, 14, 1, 16, 204,
   205 or a transport error) go back to 4, at most ``retries`` more times, within ``send_timeout``.

Ordered sends (a ``selector`` or a ``sharding_key``, or an explicit ``queue``) make one attempt
only: retrying elsewhere would break the order.

:class:`Producer` is the asyncio API; :class:`~.sync_producers.SyncProducer` drives one on the
shared background loop thread for code that is not async.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import UniqIdGenerator

from .errors import (
    BROKER_GONE,
    MQClientError,
    MQError,
    MQTimeoutError,
    TopicNotFoundError,
    failover_pause,
)
from .fault import LatencyFaultTolerance
from .instance import ClientInstance
from .message import Message, SendResult, SendStatus
from .metrics import notify
from .route import TopicPublishInfo, select_by_key
from .send_payload import Payload, build_send_header, prepare_batch, prepare_single, send_result_from_response
from .settings import DEFAULT_NAMESRV, ClientSettings, ProducerSettings
from .trace import MSG_TYPE_DELAY, MSG_TYPE_NORMAL, TRACE_PRODUCER_GROUP, PubTrace
from .trace_dispatch import TraceDispatcher

log = logging.getLogger("pyrocketmq.client")

Selector = Callable[[list[MessageQueue], Message, Any], MessageQueue]
SendCallback = Callable[[SendResult | None, BaseException | None], None]


def ordered_queue(
    info: TopicPublishInfo, first: Message, selector: Selector | None, arg: Any, sharding_key: str | None
) -> MessageQueue | None:
    """The one queue an ordered send must use (``selector(queues, msg, arg)`` or the sharding key's),
    or None for a send that may go to any queue."""
    if selector is not None:
        return selector(list(info.queues), first, arg)
    if sharding_key is not None:
        return select_by_key(info.queues, sharding_key)
    return None


def gave_up(topic: str, timeout: float, tried: list[str], last_error: BaseException | None) -> BaseException:
    """What a send that found no broker to take its message raises: the last error, noting the brokers
    tried, or a timeout when no attempt got as far as an error."""
    if last_error is None:
        return MQTimeoutError(
            f"send to topic {topic} did not complete within {timeout:.1f}s (brokers tried: {tried})"
        )
    last_error.add_note(f"send to topic {topic} failed {len(tried)} time(s); brokers tried: {tried}")
    return last_error


class Producer:
    """An asyncio producer for one producer group.

    Example::

        producer = Producer("my-group", "127.0.0.1:9876")
        await producer.start()
        result = await producer.send(Message("TopicTest", b"hello", tags="TagA", keys="k1"))
        print(result.status, result.msg_id, result.message_queue)
        await producer.send([Message("TopicTest", b"a"), Message("TopicTest", b"b")])   # one batch
        await producer.send(Message("Orders", b"paid"), sharding_key="order-17")        # ordered
        await producer.shutdown()

    It is also an async context manager (``async with Producer(...) as p:``).
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str = DEFAULT_NAMESRV,
        settings: ProducerSettings | None = None,
        client: ClientSettings | None = None,
    ) -> None:
        if not group:
            raise MQClientError("the producer group is empty: give a group name")
        self.group = group
        self.settings = settings or ProducerSettings()
        self.client_settings = client or ClientSettings()
        self.client_settings.namesrv_addr = namesrv_addr or self.client_settings.namesrv_addr
        self.fault = LatencyFaultTolerance()
        self._instance: ClientInstance | None = None
        self._ids: UniqIdGenerator | None = None
        self._pending: set[asyncio.Task[Any]] = set()
        self._tracer: TraceDispatcher | None = None

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise MQClientError("the producer is not started: call 'await producer.start()' first")
        return self._instance

    async def start(self) -> None:
        """Join the client instance of the name servers and register the group (idempotent)."""
        if self._instance is not None:
            return
        inst = await ClientInstance.join(
            self.client_settings, lambda i: i.register_producer(self.group, self)
        )
        self._instance = inst
        self._ids = UniqIdGenerator(inst.client_ip)
        if self.settings.trace and self.group != TRACE_PRODUCER_GROUP:
            self._tracer = await start_tracer(self.client_settings, self.settings.trace_topic)

    async def shutdown(self) -> None:
        """Wait for async sends in flight, unregister the group, release the client instance."""
        inst, self._instance = self._instance, None
        if inst is None:
            return
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        tracer, self._tracer = self._tracer, None
        if tracer is not None:
            await tracer.close()
        await inst.unregister_producer(self.group)
        await inst.release()

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # -- API ------------------------------------------------------------------------------------
    async def send(
        self,
        msg: Message | Sequence[Message],
        timeout: float | None = None,
        *,
        selector: Selector | None = None,
        arg: Any = None,
        sharding_key: str | None = None,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """Send and wait until the broker acknowledges; see the module docstring for the steps.

        ``msg`` may be a list of messages of one topic: they go as one batch. ``selector(queues,
        msg, arg)`` or ``sharding_key`` pick the queue for ordered messages; ``queue`` names it.
        Raises :class:`~.errors.MQClientError` on a bad message, :class:`~.errors.MQBrokerError`
        when the broker refuses it, :class:`~.errors.MQTimeoutError` /
        :class:`~.errors.MQConnectionError` when every attempt failed in transport.
        """
        sending = self._send(msg, timeout, selector, arg, sharding_key, queue, oneway=False)
        result: SendResult = await self._measured(msg, sending)
        return result

    def send_async(
        self,
        msg: Message | Sequence[Message],
        callback: SendCallback | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> asyncio.Task[SendResult]:
        """Start a send and return its task at once; ``callback(result, error)`` runs when it is done.

        Example::

            task = producer.send_async(Message("T", b"x"), lambda r, e: print(r or e))
            ...
            result = await task
        """
        self.instance  # noqa: B018 — raise now if not started, not inside the task
        task = asyncio.ensure_future(self.send(msg, timeout, **kwargs))
        self._pending.add(task)

        def done(t: asyncio.Task[SendResult]) -> None:
            self._pending.discard(t)
            if t.cancelled():
                err: BaseException | None = asyncio.CancelledError()
                res = None
            else:
                err = t.exception()
                res = None if err is not None else t.result()
            if callback is not None:
                try:
                    callback(res, err)
                except Exception:
                    log.exception("send callback failed")
            elif err is not None and not t.cancelled():
                t.exception()  # retrieved: the caller may never await the task

        task.add_done_callback(done)
        return task

    async def send_oneway(
        self,
        msg: Message | Sequence[Message],
        *,
        selector: Selector | None = None,
        arg: Any = None,
        sharding_key: str | None = None,
        queue: MessageQueue | None = None,
    ) -> None:
        """Send without waiting for the broker (no result, no retry); returns once the request is written."""
        await self._measured(msg, self._send(msg, None, selector, arg, sharding_key, queue, oneway=True))

    async def _measured(self, msg: Message | Sequence[Message], sending: Awaitable[Any]) -> Any:
        """Await ``sending`` and tell ``settings.metrics`` (if any) how it went."""
        hook = self.settings.metrics
        started = time.monotonic()
        if hook is None:
            result = await sending
            return self._traced(msg, started, result) if self._tracer is not None else result
        if isinstance(msg, Message):
            topic, count = msg.topic, 1
        else:
            topic, count = (msg[0].topic if len(msg) else ""), len(msg)
        try:
            result = await sending
        except BaseException:
            notify(hook, "on_send", self.group, topic, "error", time.monotonic() - started, count)
            raise
        outcome = result.status.name if result is not None else "ONEWAY"
        notify(hook, "on_send", self.group, topic, outcome, time.monotonic() - started, count)
        return self._traced(msg, started, result) if self._tracer is not None else result

    def _traced(
        self, msg: Message | Sequence[Message], started: float, result: Any, msg_type: int | None = None
    ) -> Any:
        """Queue the ``Pub`` trace of an acknowledged single send (Apache's fields; best effort)."""
        if self._tracer is not None and isinstance(msg, Message) and isinstance(result, SendResult):
            inst, mq = self._instance, result.message_queue
            store = (inst.master_addr(mq.broker_name) if inst is not None else None) or ""
            self._tracer.add(PubTrace(
                int(time.time() * 1000), self.group, msg.topic, result.msg_id, msg.tags or "",
                " ".join(msg.key_list()), store, len(msg.body), int((time.monotonic() - started) * 1000),
                msg_type if msg_type is not None else MSG_TYPE_DELAY if msg.delay_level else MSG_TYPE_NORMAL,
                result.offset_msg_id,
                result.status is SendStatus.SEND_OK))  # fmt: skip
        return result

    async def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The queues ``topic`` can be written to (for custom selectors)."""
        info = await self._publish_info(topic)
        return list(info.queues)

    # -- internals ------------------------------------------------------------------------------
    async def _publish_info(self, topic: str) -> TopicPublishInfo:
        inst = self.instance
        info = await inst.find_publish_info(
            topic,
            default_topic=self.settings.default_topic,
            default_queue_nums=self.settings.default_topic_queue_nums,
        )
        if not info.ok:
            raise TopicNotFoundError(
                ResponseCode.TOPIC_NOT_EXIST,
                f"no route info of topic {topic} (and no broker auto-creates topics)",
                inst.namesrv_addrs[0],
            )
        return info

    def _payload(self, msg: Message | Sequence[Message], prepare: Callable[[Payload], Payload] | None
                 ) -> tuple[Payload, Message]:
        """What one send puts on the wire (built once, kept across retries), and its first message."""
        assert self._ids is not None
        if isinstance(msg, Message):
            payload = prepare_single(msg, self.settings, self._ids)
            return (payload if prepare is None else prepare(payload)), msg  # prepare: e.g. a half message
        msgs = list(msg)
        return prepare_batch(msgs, self.settings, self._ids), msgs[0]

    async def _send(
        self,
        msg: Message | Sequence[Message],
        timeout: float | None,
        selector: Selector | None,
        arg: Any,
        sharding_key: str | None,
        queue: MessageQueue | None,
        *,
        oneway: bool,
        prepare: Callable[[Payload], Payload] | None = None,
    ) -> Any:
        inst = self.instance
        assert self._ids is not None
        timeout = self.settings.send_timeout if timeout is None else timeout
        begin = time.monotonic()
        payload, first = self._payload(msg, prepare)
        info = await self._publish_info(payload.topic)

        fixed = queue if queue is not None else ordered_queue(info, first, selector, arg, sharding_key)
        attempts = 1 if (oneway or fixed is not None) else 1 + max(0, self.settings.retries)

        last_error: BaseException | None = None
        last_result: SendResult | None = None
        last_broker: str | None = None
        tried: list[str] = []
        attempt = settling = 0
        while attempt < attempts:
            remaining = timeout - (time.monotonic() - begin)
            if remaining <= 0:
                break
            if fixed is not None:
                mq = fixed
            else:
                avail = self.fault.is_available if self.settings.latency_fault_enabled else None
                mq = info.select_queue(last_broker, avail)
            tried.append(mq.broker_name)
            started = time.monotonic()
            try:
                # A connect may use its share of what is left, so an address that does not answer
                # (a broker pod gone with its IP) leaves time to retry on another broker.
                connect_budget = remaining / (attempts - attempt)
                result = await self._send_to(inst, mq, payload, remaining, oneway, connect_budget)
            except MQError as e:
                self._record(mq.broker_name, started, failed=True)
                last_error, last_broker = e, mq.broker_name
                if e.retriable:
                    log.info("send to %s failed (%s); %s", mq, e, "retrying" if attempts > 1 else "giving up")
                    if await self._after_failure(e, payload.topic) and fixed is None:
                        info = await self._fresh_info(payload.topic, info)
                    left = timeout - (time.monotonic() - begin)
                    pause = failover_pause(e, settling, left) if attempts > 1 else 0.0
                    if pause:  # a master handing over: wait for the new one, not counted as an attempt
                        settling += 1
                        await asyncio.sleep(pause)
                        continue
                    attempt += 1
                    continue
                raise
            self._record(mq.broker_name, started, failed=False)
            if (
                result is not None
                and result.status is not SendStatus.SEND_OK
                and self.settings.retry_another_broker_when_not_store_ok
                and attempts > 1
            ):
                last_broker = mq.broker_name
                last_error = None
                last_result = result
                attempt += 1
                continue
            return result
        if last_error is None and last_result is not None:
            return last_result
        raise gave_up(payload.topic, timeout, tried, last_error)

    async def _after_failure(self, error: MQError, topic: str) -> bool:  # gone, not master, silent: failover?
        """Refresh ``topic``'s route when the broker seems gone; True when it did."""
        if isinstance(error, BROKER_GONE):
            await self.instance.refresh_after_failure(topic)
            return True
        return False

    async def _fresh_info(self, topic: str, info: TopicPublishInfo) -> TopicPublishInfo:
        """The route just refreshed, so the next attempt goes where the brokers are now (a broker pod
        started again elsewhere); ``info`` if there is none."""
        try:
            return await self._publish_info(topic)
        except MQError:
            return info

    def _record(self, broker: str, started: float, *, failed: bool) -> None:
        if self.settings.latency_fault_enabled:
            self.fault.update(broker, (time.monotonic() - started) * 1000.0, isolation=failed)

    async def _send_to(
        self, inst: ClientInstance, mq: MessageQueue, payload: Payload, timeout: float, oneway: bool,
        connect_timeout: float | None = None,
    ) -> SendResult | None:
        addr = await inst.master_addr_of(payload.topic, mq.broker_name)
        fields = build_send_header(
            payload,
            group=self.group,
            queue=mq,
            born_timestamp=int(time.time() * 1000),
            default_topic=self.settings.default_topic,
            default_topic_queue_nums=self.settings.default_topic_queue_nums,
        )
        code = RequestCode.SEND_BATCH_MESSAGE if payload.batch else RequestCode.SEND_MESSAGE_V2
        cmd = RemotingCommand.request(code, fields, payload.body, oneway=oneway)
        if oneway:
            await inst.invoke_oneway(addr, cmd)
            return None
        resp = await inst.invoke(addr, cmd, timeout, connect_timeout=connect_timeout)
        return send_result_from_response(resp, payload, mq.broker_name, addr)


async def start_tracer(client: ClientSettings, topic: str) -> TraceDispatcher:
    """A trace dispatcher writing to ``topic`` through its own internal producer (which traces nothing)."""
    inner = Producer(TRACE_PRODUCER_GROUP, client.namesrv_addr, client=client)
    await inner.start()
    return TraceDispatcher(inner, topic)
