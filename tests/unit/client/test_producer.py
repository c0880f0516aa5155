"""Producer decisions without sockets: payloads, headers, compression, results, retries."""

from __future__ import annotations

import asyncio
import time
import zlib
from dataclasses import dataclass, field

import pytest

from pyrocketmq.client.errors import (
    MQBrokerError,
    MQClientError,
    MQConnectionError,
    MQTimeoutError,
    NoMasterError,
    TopicNotFoundError,
)
from pyrocketmq.client.message import Message, SendStatus
from pyrocketmq.client.producer import Producer
from pyrocketmq.client.route import TopicPublishInfo, _Counter
from pyrocketmq.client.send_payload import (
    Payload,
    build_send_header,
    compress_body,
    prepare_batch,
    prepare_single,
    send_result_from_response,
)
from pyrocketmq.client.settings import ProducerSettings
from pyrocketmq.remoting.batch import decode_batch
from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import SendMessageRequestHeader
from pyrocketmq.remoting.message import SysFlag, UniqIdGenerator, decode_properties

IDS = UniqIdGenerator("10.0.0.5", pid=42)
S = ProducerSettings()


# -- payloads -----------------------------------------------------------------------------------


def test_single_payload_properties() -> None:
    msg = Message("T", b"hi", tags="TagA", keys=["k1", "k2"], properties={"a": "1"}, delay_level=3, flag=7)
    p = prepare_single(msg, S, IDS)
    props = decode_properties(p.properties.encode())
    assert props == {
        "a": "1",
        "TAGS": "TagA",
        "KEYS": "k1 k2",
        "DELAY": "3",
        "WAIT": "true",
        "UNIQ_KEY": msg.unique_id,
    }
    assert p.flag == 7 and p.sys_flag == 0 and not p.batch and p.unique_id == msg.unique_id
    assert len(msg.unique_id or "") == 32


def test_unique_id_is_kept_across_attempts() -> None:
    msg = Message("T", b"hi")
    first = prepare_single(msg, S, IDS).unique_id
    assert prepare_single(msg, S, IDS).unique_id == first


def test_keys_given_as_one_string_are_split_on_spaces() -> None:
    assert Message("T", b"x", keys="a  b").key_list() == ["a", "b"]


@pytest.mark.parametrize(("size", "compressed"), [(1, False), (4095, False), (4096, True), (100_000, True)])
def test_compression_threshold(size: int, compressed: bool) -> None:
    body = bytes(range(256)) * (size // 256) + b"z" * (size % 256)
    p = prepare_single(Message("T", body), S, IDS)
    if compressed:
        assert p.sys_flag == SysFlag.COMPRESSED | SysFlag.COMPRESSION_ZLIB == 0x301
        assert zlib.decompress(p.body) == body
    else:
        assert p.sys_flag == 0 and p.body == body


def test_compression_can_be_turned_off_and_uses_level() -> None:
    assert compress_body(b"a" * 10_000, ProducerSettings(compress_over=0)) == (b"a" * 10_000, 0)
    body, flag = compress_body(b"a" * 10_000, ProducerSettings(compress_level=1))
    assert flag == 0x301 and body == zlib.compress(b"a" * 10_000, 1)


def test_batch_payload() -> None:
    msgs = [Message("T", f"m{i}".encode(), tags="t", properties={"i": str(i)}) for i in range(3)]
    p = prepare_batch(msgs, S, IDS)
    assert p.batch and p.sys_flag == 0
    assert p.unique_id.split(",") == [m.unique_id for m in msgs]
    assert decode_properties(p.properties.encode()) == {"WAIT": "true"}
    items = decode_batch(p.body)
    assert [b for b, _, _ in items] == [b"m0", b"m1", b"m2"]
    assert items[1][2]["i"] == "1" and items[1][2]["UNIQ_KEY"] == msgs[1].unique_id


def test_batches_are_never_compressed() -> None:
    p = prepare_batch([Message("T", b"x" * 10_000)], S, IDS)
    assert p.sys_flag == 0
    assert decode_batch(p.body)[0][0] == b"x" * 10_000


@pytest.mark.parametrize(
    "msgs",
    [
        [],
        [Message("A", b"x"), Message("B", b"x")],
        [Message("T", b"x", delay_level=2)],
        [Message("%RETRY%g", b"x")],
    ],
    ids=["empty", "two-topics", "delay", "retry-topic"],
)
def test_bad_batches_are_refused(msgs: list[Message]) -> None:
    with pytest.raises(MQClientError):
        prepare_batch(msgs, S, IDS)


def test_batch_too_large_is_refused() -> None:
    with pytest.raises(MQClientError, match="split it"):
        prepare_batch(
            [Message("T", b"x" * 600) for _ in range(3)], ProducerSettings(max_message_size=1000), IDS
        )


@pytest.mark.parametrize(
    ("msg", "match"),
    [
        (Message("", b"x"), "empty"),
        (Message("a b", b"x"), "invalid"),
        (Message("T" * 128, b"x"), "bytes"),
        (Message("SCHEDULE_TOPIC_XXXX", b"x"), "system topic"),
        (Message("T", b""), "empty"),
        (Message("T", "text"), "bytes"),  # type: ignore[arg-type]
        (Message("T", b"x" * 11), "limit"),
        (Message("T", b"x", delay_level=19), "delay_level"),
        (Message("T", b"x", properties={"TAGS": "x"}), "reserved"),
        (Message("T", b"x", properties={"k": ""}), "non-empty"),
        (Message("T", b"x", properties={"k": "a\x01b"}), "separate"),
        (Message("T", b"x", tags="a\x02"), "separate"),
    ],
)
def test_invalid_messages_say_what_to_fix(msg: Message, match: str) -> None:
    with pytest.raises(MQClientError, match=match):
        prepare_single(msg, ProducerSettings(max_message_size=10), IDS)


def test_retry_counts_go_into_the_header() -> None:
    p = Payload("%RETRY%g", b"x", 0, "", 0, False, "ID", reconsume_times=3, max_reconsume_times=16)
    h = build_send_header(p, group="g", queue=MessageQueue("%RETRY%g", "b", 0), born_timestamp=1)
    assert h["j"] == "3" and h["l"] == "16"
    plain = build_send_header(prepare_single(Message("T", b"x"), S, IDS), group="g",
                              queue=MessageQueue("T", "b", 0), born_timestamp=1)
    assert plain["j"] == "0" and "l" not in plain


# -- header ---------------------------------------------------------------------------------------


def test_send_header_v2_fields() -> None:
    msg = Message("T", b"x", tags="A")
    p = prepare_single(msg, S, IDS)
    h = build_send_header(p, group="pg", queue=MessageQueue("T", "broker-a", 3), born_timestamp=1700000000000)
    assert h == {
        "a": "pg",
        "b": "T",
        "c": "TBW102",
        "d": "4",
        "e": "3",
        "f": "0",
        "g": "1700000000000",
        "h": "0",
        "i": p.properties,
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-a",
    }
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h, p.body)
    assert cmd.code == 310 and cmd.language == 3 and cmd.version == 407
    # the broker's own parser reads it back
    parsed = SendMessageRequestHeader.from_command(cmd)
    assert (parsed.producer_group, parsed.topic, parsed.queue_id, parsed.properties) == (
        "pg",
        "T",
        3,
        p.properties,
    )


def test_batch_header_sets_m() -> None:
    p = prepare_batch([Message("T", b"x")], S, IDS)
    h = build_send_header(p, group="pg", queue=MessageQueue("T", "b", 0), born_timestamp=1,
                          default_topic="TBW102", default_topic_queue_nums=8)
    assert h["m"] == "true" and h["d"] == "8"


# -- responses ------------------------------------------------------------------------------------


def _resp(code: int, **ext: str) -> RemotingCommand:
    req = RemotingCommand.request(310)
    return req.response(
        code,
        "remark",
        ext or {"msgId": "0A00000100002A9F0000000000000000", "queueId": "2", "queueOffset": "17"},
    )


@pytest.mark.parametrize(
    ("code", "status"),
    [(0, SendStatus.SEND_OK), (10, SendStatus.FLUSH_DISK_TIMEOUT), (12, SendStatus.FLUSH_SLAVE_TIMEOUT),
     (11, SendStatus.SLAVE_NOT_AVAILABLE)],
)
def test_stored_responses_become_results(code: int, status: SendStatus) -> None:
    p = prepare_single(Message("T", b"x"), S, IDS)
    r = send_result_from_response(_resp(code), p, "broker-a", "1.2.3.4:10911")
    assert r.status is status
    assert r.msg_id == p.unique_id
    assert r.offset_msg_id == "0A00000100002A9F0000000000000000"
    assert r.message_queue == MessageQueue("T", "broker-a", 2)
    assert r.queue_offset == 17


@pytest.mark.parametrize(("code", "cls"), [(17, TopicNotFoundError), (13, MQBrokerError), (2, MQBrokerError)])
def test_error_responses_raise(code: int, cls: type) -> None:
    p = prepare_single(Message("T", b"x"), S, IDS)
    with pytest.raises(cls) as ei:
        send_result_from_response(_resp(code), p, "b", "1.2.3.4:10911")
    assert ei.value.code == code and ei.value.broker_addr == "1.2.3.4:10911"


@pytest.mark.parametrize(
    ("error", "retry"),
    [
        (MQBrokerError.for_code(17), True),
        (MQBrokerError.for_code(14), True),
        (MQBrokerError.for_code(1), True),
        (MQBrokerError.for_code(16), True),
        (MQBrokerError.for_code(204), True),
        (MQBrokerError.for_code(205), True),
        (MQBrokerError.for_code(2), False),
        (MQBrokerError.for_code(13), False),
        (MQBrokerError.for_code(215), False),
        (MQConnectionError("refused"), True),
        (MQTimeoutError("slow"), True),
        (MQClientError("misuse"), False),
        (ValueError("bug"), False),
    ],
)
def test_retry_decisions(error: Exception, retry: bool) -> None:
    assert getattr(error, "retriable", False) is retry


# -- the send loop, on a fake client instance ------------------------------------------------------


@dataclass
class FakeInstance:
    """Answers sends from a script: broker name -> list of response codes (or exceptions)."""

    script: dict[str, list]
    queues: list[MessageQueue]
    calls: list[tuple[str, int, int]] = field(default_factory=list)
    oneway: list[str] = field(default_factory=list)
    namesrv_addrs: list[str] = field(default_factory=lambda: ["ns:9876"])
    client_ip: str = "10.0.0.5"
    #: Answer this code to the first calls, whatever the broker.
    fail_first: list = field(default_factory=list)

    infos: dict = field(default_factory=dict)
    connect_timeouts: list = field(default_factory=list)
    refreshed: list = field(default_factory=list)

    async def find_publish_info(self, topic, **kw):
        # cached, with a fixed round-robin start, as the real instance caches it
        if topic not in self.infos:
            self.infos[topic] = TopicPublishInfo(
                topic, [q for q in self.queues if q.topic == topic], counter=_Counter(0)
            )
        return self.infos[topic]

    async def master_addr_of(self, topic, broker_name):
        return f"{broker_name}:10911"

    async def refresh_after_failure(self, topic):
        self.refreshed.append(topic)

    async def invoke(self, addr, cmd, timeout=None, connect_timeout=None):
        broker = addr.split(":")[0]
        self.connect_timeouts.append(connect_timeout)
        self.calls.append((broker, int(cmd.ext_fields["e"]), cmd.code))
        if self.fail_first:
            step = self.fail_first.pop(0)
        else:
            step = self.script[broker].pop(0) if self.script.get(broker) else 0
        if isinstance(step, BaseException):
            raise step
        return cmd.response(
            step, "scripted", {"msgId": "X", "queueId": cmd.ext_fields["e"], "queueOffset": "0"}
        )

    async def invoke_oneway(self, addr, cmd):
        self.oneway.append(addr)


def _producer(fake: FakeInstance, **settings) -> Producer:
    p = Producer("pg", "ns:9876", ProducerSettings(**settings))
    p._instance = fake  # type: ignore[assignment]
    p._ids = IDS
    return p


QUEUES = [MessageQueue("T", b, i) for b in ("a", "b", "c") for i in range(2)]


def test_retriable_failure_moves_to_another_broker() -> None:
    fake = FakeInstance({}, QUEUES, fail_first=[14])
    res = asyncio.run(_producer(fake).send(Message("T", b"x")))
    brokers = [c[0] for c in fake.calls]
    assert res.status is SendStatus.SEND_OK
    assert len(brokers) == 2 and brokers[0] != brokers[1]


def test_gives_up_after_two_retries_and_reports_the_brokers() -> None:
    fake = FakeInstance({"a": [1] * 5, "b": [1] * 5, "c": [1] * 5}, QUEUES)
    with pytest.raises(MQBrokerError) as ei:
        asyncio.run(_producer(fake).send(Message("T", b"x")))
    assert len(fake.calls) == 3
    assert len({c[0] for c in fake.calls}) == 3
    assert "failed 3 time(s)" in ei.value.__notes__[0]


def test_non_retriable_failure_raises_at_once() -> None:
    fake = FakeInstance({"a": [13] * 3, "b": [13] * 3, "c": [13] * 3}, QUEUES)
    with pytest.raises(MQBrokerError) as ei:
        asyncio.run(_producer(fake).send(Message("T", b"x")))
    assert ei.value.code == 13 and len(fake.calls) == 1


def test_transport_errors_are_retried() -> None:
    fake = FakeInstance({b: [MQConnectionError("refused")] for b in "abc"}, QUEUES)
    fake.script["c"] = []  # c answers
    fake.script["a"] = [MQConnectionError("refused")]
    fake.script["b"] = [MQTimeoutError("slow")]
    res = asyncio.run(_producer(fake, retries=5).send(Message("T", b"x")))
    assert res.status is SendStatus.SEND_OK
    assert fake.calls[-1][0] == "c"
    # a broker refusing connections, or silent (its node hung or cut off), may be gone in a failover:
    # ask for the route after each (the instance itself refreshes a topic at most every 0.5 s)
    assert fake.refreshed == ["T", "T"]


def test_a_connect_gets_its_share_of_the_time_left_so_a_retry_fits() -> None:
    # An address that does not answer (a broker pod gone with its IP) must not use the whole send
    # timeout on its connect: each attempt may wait for a connection its share of what is left.
    fake = FakeInstance({"a": [MQConnectionError("cannot connect to a:10911: TimeoutError")]}, QUEUES)
    res = asyncio.run(_producer(fake, send_timeout=3.0, retries=2).send(Message("T", b"x")))
    assert res.status is SendStatus.SEND_OK and [c[0] for c in fake.calls] == ["a", "b"]
    first, second = fake.connect_timeouts
    assert 0.9 < first <= 1.0 and 1.4 < second <= 1.5  # 3 s over 3 attempts, then what is left over 2


def test_a_master_handing_over_is_waited_for_within_the_send_timeout() -> None:
    # One broker group, its master just turned slave (code 14) and the route lags: the producer
    # waits and asks again (0.1, 0.2, 0.4 s ...) instead of spending its attempts in a millisecond.
    only_a = [q for q in QUEUES if q.broker_name == "a"]
    fake = FakeInstance({"a": [14, 14, 14, 14]}, only_a)
    t0 = time.monotonic()
    res = asyncio.run(
        _producer(fake, send_timeout=3.0, retries=2, latency_fault_enabled=False).send(Message("T", b"x"))
    )
    assert res.status is SendStatus.SEND_OK and len(fake.calls) == 5
    assert 1.4 < time.monotonic() - t0 < 2.5 and fake.refreshed  # 0.1 + 0.2 + 0.4 + 0.8 s
    # a broker that stays a slave fails the send once its time is spent, not before
    fake = FakeInstance({"a": [14] * 50}, only_a)
    with pytest.raises(MQBrokerError):
        asyncio.run(
            _producer(fake, send_timeout=1.0, retries=2, latency_fault_enabled=False).send(Message("T", b"x"))
        )


def test_failed_broker_is_avoided_by_later_sends() -> None:
    fake = FakeInstance({"a": [1], "b": [1]}, QUEUES)
    p = _producer(fake)
    for _ in range(6):
        asyncio.run(p.send(Message("T", b"x")))
    later = [c[0] for c in fake.calls[-4:]]
    assert set(later) == {"c"}  # a and b failed once: isolated for 10 minutes


def test_without_fault_tolerance_round_robin_continues() -> None:
    fake = FakeInstance({"a": [1]}, QUEUES)
    p = _producer(fake, latency_fault_enabled=False)
    for _ in range(7):
        asyncio.run(p.send(Message("T", b"x")))
    assert "a" in [c[0] for c in fake.calls[2:]]


def test_ordered_sends_make_one_attempt_on_the_chosen_queue() -> None:
    fake = FakeInstance({"a": [14], "b": [14], "c": [14]}, QUEUES)
    p = _producer(fake)
    with pytest.raises(MQBrokerError):
        asyncio.run(p.send(Message("T", b"x"), sharding_key="order-1"))
    assert len(fake.calls) == 1
    fake.script = {}
    seen = {asyncio.run(p.send(Message("T", b"x"), sharding_key="order-1")).message_queue for _ in range(3)}
    assert len(seen) == 1


def test_selector_gets_queues_message_and_arg() -> None:
    fake = FakeInstance({}, QUEUES)
    got = []

    def selector(queues, msg, arg):
        got.append((len(queues), msg.topic, arg))
        return queues[arg]

    res = asyncio.run(_producer(fake).send(Message("T", b"x"), selector=selector, arg=3))
    assert got == [(6, "T", 3)] and res.message_queue == QUEUES[3]


def test_batch_goes_as_one_request_with_code_320() -> None:
    fake = FakeInstance({}, QUEUES)
    res = asyncio.run(_producer(fake).send([Message("T", b"1"), Message("T", b"2")]))
    assert [c[2] for c in fake.calls] == [320]
    assert res.msg_id.count(",") == 1


def test_oneway_makes_one_attempt_and_returns_nothing() -> None:
    fake = FakeInstance({}, QUEUES)
    assert asyncio.run(_producer(fake).send_oneway(Message("T", b"x"))) is None
    assert len(fake.oneway) == 1 and not fake.calls


def test_no_route_raises_topic_not_found() -> None:
    fake = FakeInstance({}, [])
    with pytest.raises(TopicNotFoundError, match="no route info"):
        asyncio.run(_producer(fake).send(Message("T", b"x")))


def test_not_stored_ok_is_returned_unless_asked_to_retry() -> None:
    fake = FakeInstance({"a": [10], "b": [10], "c": [10]}, QUEUES)
    res = asyncio.run(_producer(fake).send(Message("T", b"x")))
    assert res.status is SendStatus.FLUSH_DISK_TIMEOUT and len(fake.calls) == 1
    fake = FakeInstance({"a": [10], "b": [10], "c": [10]}, QUEUES)
    res = asyncio.run(_producer(fake, retry_another_broker_when_not_store_ok=True).send(Message("T", b"x")))
    assert res.status is SendStatus.FLUSH_DISK_TIMEOUT and len(fake.calls) == 3


def test_send_async_calls_back() -> None:
    fake = FakeInstance({}, QUEUES)
    p = _producer(fake)
    seen = []

    async def go():
        task = p.send_async(Message("T", b"x"), lambda r, e: seen.append((r.status, e)))
        await task

    asyncio.run(go())
    assert seen == [(SendStatus.SEND_OK, None)]


def test_unstarted_producer_says_start_it() -> None:
    with pytest.raises(MQClientError, match="start"):
        asyncio.run(Producer("pg").send(Message("T", b"x")))


def test_a_broker_whose_master_left_the_route_is_skipped_for_another() -> None:
    """The queue was chosen while ``a`` had a master; by the send its route has none (a master pod
    restarting): the send goes to another broker, as the Java producer's does, not fails."""

    class MasterGone(FakeInstance):
        async def master_addr_of(self, topic, broker_name):
            if broker_name == "a":
                raise NoMasterError(f"broker {broker_name!r} has no master in the route of topic {topic!r}")
            return await super().master_addr_of(topic, broker_name)

    fake = MasterGone({}, QUEUES)
    results = [asyncio.run(_producer(fake).send(Message("T", b"x"))) for _ in range(6)]
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert fake.calls and all(broker != "a" for broker, _, _ in fake.calls)
    assert fake.refreshed  # the route is asked again after such a failure
    assert NoMasterError("x").retriable and isinstance(NoMasterError("x"), MQClientError)


def test_a_retry_after_a_gone_broker_takes_the_refreshed_route() -> None:
    """Brokers restarted elsewhere (a rolling update): the cached route names only gone ones; the
    route refreshed after the first failure names the new broker, and the retry goes there."""
    fake = FakeInstance({"a": [MQConnectionError("refused")] * 5}, [MessageQueue("T", "a", 0)])

    async def refresh(topic):
        fake.refreshed.append(topic)
        fake.infos[topic] = TopicPublishInfo(topic, [MessageQueue("T", "z", 0)], counter=_Counter(0))

    fake.refresh_after_failure = refresh  # type: ignore[method-assign]  # the route changes on refresh
    res = asyncio.run(_producer(fake).send(Message("T", b"x")))
    assert res.status is SendStatus.SEND_OK and [c[0] for c in fake.calls] == ["a", "z"]
