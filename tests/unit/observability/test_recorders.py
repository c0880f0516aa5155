"""The shared recorders (pyrocketmq.metrics) and the transport's request observer, without sockets."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pyrocketmq.metrics import (
    LATENCY_BUCKETS,
    RPC_LATENCY_BUCKETS,
    LatencyRecorder,
    RequestRecorder,
    ScrapeCollector,
    request_code_name,
    response_code_name,
)
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.transport import Connection


def scrape(families_fn) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ScrapeCollector(families_fn))
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


@pytest.mark.parametrize(
    ("seconds", "bucket"),
    [(0.0, 0), (0.0001, 0), (0.00011, 1), (30.0, len(LATENCY_BUCKETS) - 1), (31.0, len(LATENCY_BUCKETS))],
)
def test_latency_recorder_puts_an_observation_in_the_bucket_whose_bound_it_does_not_exceed(seconds, bucket):
    rec = LatencyRecorder()
    rec.observe(seconds)
    assert rec.counts[bucket] == 1 and rec.count == 1 and sum(rec.counts) == 1


def test_latency_recorder_cumulative_ends_with_the_count():
    rec = LatencyRecorder((0.1, 1.0))
    for v in (0.05, 0.1, 0.5, 2.0, 3.0):
        rec.observe(v)
    assert rec.cumulative() == [("0.1", 2), ("1.0", 3), ("+Inf", 5)]


@pytest.mark.parametrize(
    ("code", "name"), [(RequestCode.SEND_MESSAGE_V2, "SEND_MESSAGE_V2"), (424242, "OTHER"), (-1, "OTHER")]
)
def test_request_code_labels_are_bounded(code, name):
    assert request_code_name(int(code)) == name


@pytest.mark.parametrize(
    ("code", "name"),
    [(0, "SUCCESS"), (None, "NONE"), (ResponseCode.PULL_NOT_FOUND, "PULL_NOT_FOUND"), (999, "OTHER")],
)
def test_response_code_labels_are_bounded(code, name):
    assert response_code_name(code) == name


def test_request_recorder_exports_counts_and_histograms_with_constant_labels():
    rec = RequestRecorder("pyrocketmq_x", {"cluster": "C"})
    for _ in range(3):
        rec(RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS, 0.001)
    rec(RequestCode.SEND_MESSAGE_V2, ResponseCode.TOPIC_NOT_EXIST, 0.002)
    rec(777001, 0, 0.5)  # unknown codes share one label value
    rec(777002, 0, 0.5)
    samples = scrape(rec.families)
    assert (
        samples[
            (
                "pyrocketmq_x_requests_total",
                (("cluster", "C"), ("code", "SEND_MESSAGE_V2"), ("response", "SUCCESS")),
            )
        ]
        == 3
    )
    assert (
        samples[
            (
                "pyrocketmq_x_requests_total",
                (("cluster", "C"), ("code", "SEND_MESSAGE_V2"), ("response", "TOPIC_NOT_EXIST")),
            )
        ]
        == 1
    )
    assert (
        samples[
            ("pyrocketmq_x_requests_total", (("cluster", "C"), ("code", "OTHER"), ("response", "SUCCESS")))
        ]
        == 2
    )
    assert (
        samples[
            ("pyrocketmq_x_request_duration_seconds_count", (("cluster", "C"), ("code", "SEND_MESSAGE_V2")))
        ]
        == 4
    )
    assert (
        samples[
            (
                "pyrocketmq_x_request_duration_seconds_bucket",
                (("cluster", "C"), ("code", "OTHER"), ("le", "+Inf")),
            )
        ]
        == 2
    )
    assert rec.count(RequestCode.SEND_MESSAGE_V2) == 4 and rec.count(RequestCode.SEND_MESSAGE_V2, 0) == 3


def test_request_recorder_as_apache_exports_it():
    rec = RequestRecorder("pyrocketmq_x", bounds=RPC_LATENCY_BUCKETS)
    rec(RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS, 0.002)
    rec(RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS, 0.5)
    rec(RequestCode.HEART_BEAT, None, 0.0001)
    samples = scrape(lambda: rec.apache_families({"cluster": "C", "node_type": "broker", "node_id": "b"}))
    send = (("cluster", "C"), ("node_id", "b"), ("node_type", "broker"), ("protocol_type", "remoting"),
            ("request_code", "send_message_v2"), ("response_code", "success"))
    assert samples[("rocketmq_rpc_latency_count", send)] == 2
    assert (
        samples[("rocketmq_rpc_latency_bucket", tuple(sorted((*send, ("le", "3.0")))))] == 1
    )  # milliseconds
    assert samples[("rocketmq_rpc_latency_bucket", tuple(sorted((*send, ("le", "1000.0")))))] == 2
    assert samples[("rocketmq_rpc_latency_sum", send)] == 502.0
    oneway = (*send[:4], ("request_code", "heart_beat"), ("response_code", "none"))
    assert samples[("rocketmq_rpc_latency_count", oneway)] == 1


class FakeTransport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def get_extra_info(self, name, default=None):
        return ("10.0.0.1", 5555) if name == "peername" else default

    def write(self, data) -> None:
        self.written.append(bytes(data))

    def writelines(self, parts) -> None:
        self.written.append(b"".join(bytes(p) for p in parts))

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0


def test_the_transport_tells_the_observer_each_answer_sync_async_and_failing():
    seen: list[tuple[int, int | None]] = []

    async def run() -> None:
        async def slow(conn, cmd):
            await asyncio.sleep(0)
            return cmd.response(ResponseCode.PULL_NOT_FOUND)

        def boom(conn, cmd):
            raise RuntimeError("bug")

        handlers = {
            int(RequestCode.SEND_MESSAGE_V2): lambda conn, cmd: cmd.response(ResponseCode.SUCCESS),
            int(RequestCode.PULL_MESSAGE): slow,
            int(RequestCode.HEART_BEAT): boom,
        }
        conn = Connection(handlers, observer=lambda code, resp, secs: seen.append((code, resp)))
        conn.connection_made(FakeTransport())
        for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.PULL_MESSAGE, RequestCode.HEART_BEAT, 4242):
            conn._dispatch(RemotingCommand.request(code, {}))
        for _ in range(5):
            await asyncio.sleep(0)

    asyncio.run(run())
    assert sorted(seen) == sorted([
        (RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS),
        (RequestCode.PULL_MESSAGE, ResponseCode.PULL_NOT_FOUND),
        (RequestCode.HEART_BEAT, ResponseCode.SYSTEM_ERROR),
        (4242, ResponseCode.REQUEST_CODE_NOT_SUPPORTED),
    ])


def test_a_failing_observer_does_not_break_serving():
    transport = FakeTransport()

    async def run() -> None:
        def observer(*_):
            raise ValueError("metrics bug")

        conn = Connection(
            {int(RequestCode.SEND_MESSAGE_V2): lambda c, cmd: cmd.response(ResponseCode.SUCCESS)},
            observer=observer,
        )
        conn.connection_made(transport)
        conn._dispatch(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {}))
        for _ in range(3):  # writes may leave at the end of a loop iteration
            await asyncio.sleep(0)

    asyncio.run(run())
    assert len(transport.written) == 1


def test_random_request_codes_cannot_grow_the_tables():
    rec = RequestRecorder("pyrocketmq_x")
    for code in range(100_000, 100_000 + 5 * RequestRecorder.MAX_KEYS):
        rec(code, code, 0.001)
    assert len(rec.responses) <= RequestRecorder.MAX_KEYS + len(ResponseCode) + 1
    assert len(rec.latency) <= RequestRecorder.MAX_KEYS + 1
    assert sum(rec.responses.values()) == 5 * RequestRecorder.MAX_KEYS
