"""Metric building blocks shared by the broker and the name server: cheap recorders for the hot path,
read by a Prometheus collector only when Prometheus scrapes.

The servers never update a ``prometheus_client`` metric while serving a request. They bump plain
Python counters (one event-loop thread writes them, so no lock is needed) and a
:class:`ScrapeCollector` turns the state into metric families at scrape time. So a request costs a
dict lookup and two additions, whatever the number of series.

- :class:`LatencyRecorder` — a fixed-bucket histogram: ``observe(seconds)`` is a ``bisect`` and two
  additions. One writer thread per recorder (the loop for puts, the flush thread for flushes); a
  scrape reads a consistent-enough copy (a count may lag its sum by one observation).
- :class:`RequestRecorder` — the transport's observer (``(request_code, response_code, seconds)``):
  counts per request code and response code, a latency recorder per request code. Labels are the
  codes' names from :mod:`pyrocketmq.remoting.code`; codes the enums do not know become ``OTHER``,
  so the label sets stay bounded whatever a client sends.

Invariants: label values come from bounded sets only (codes, topics, groups, queues; never a
message, client id or address); recorders never allocate per observation once a key exists.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import TypeVar

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from pyrocketmq.remoting.code import RequestCode, ResponseCode

LATENCY_BUCKETS: tuple[float, ...] = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
"""Upper bounds (seconds) of request, put and flush latency buckets: 100 µs to 30 s (a long poll)."""

OTHER = "OTHER"
_K = TypeVar("_K", bound=Hashable)
_KNOWN_RESPONSES = frozenset(int(c) for c in ResponseCode)


def request_code_name(code: int) -> str:
    """``RequestCode`` name of ``code``, or ``OTHER`` (label values must come from a bounded set).

    >>> request_code_name(10), request_code_name(987654)
    ('SEND_MESSAGE', 'OTHER')
    """
    try:
        return RequestCode(code).name
    except ValueError:
        return OTHER


def response_code_name(code: int | None) -> str:
    """``ResponseCode`` name of ``code``; ``NONE`` when there was no answer (oneway).

    >>> response_code_name(0), response_code_name(None), response_code_name(-5)
    ('SUCCESS', 'NONE', 'OTHER')
    """
    if code is None:
        return "NONE"
    try:
        return ResponseCode(code).name
    except ValueError:
        return OTHER


class LatencyRecorder:
    """A histogram with fixed buckets, written by one thread, exported at scrape time.

    >>> r = LatencyRecorder((0.1, 1.0))
    >>> r.observe(0.05); r.observe(0.5); r.observe(3.0)
    >>> r.cumulative(), r.count, round(r.sum, 2)
    ([('0.1', 1), ('1.0', 2), ('+Inf', 3)], 3, 3.55)
    """

    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, bounds: Sequence[float] = LATENCY_BUCKETS) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.sum = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.sum += seconds
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, cumulative count)`` pairs as Prometheus wants them, ``+Inf`` last."""
        counts = list(self.counts)
        out: list[tuple[str, int]] = []
        total = 0
        for bound, n in zip((*map(str, self.bounds), "+Inf"), counts, strict=True):
            total += n
            out.append((bound, total))
        return out


def histogram_family(name: str, doc: str, labels: Sequence[str],
                     recorders: Iterable[tuple[Sequence[str], LatencyRecorder]]) -> HistogramMetricFamily:
    """A histogram family from ``(label values, recorder)`` pairs."""
    family = HistogramMetricFamily(name, doc, labels=list(labels))
    for values, rec in recorders:
        buckets = rec.cumulative()
        # Sum and count read after the buckets: the +Inf bucket must equal the count Prometheus sees.
        family.add_metric(list(values), buckets, rec.sum)
    return family


class RequestRecorder:
    """Counts and latencies of the requests one remoting server answered.

    It is the transport's observer: ``recorder(request_code, response_code, seconds)``.

    >>> r = RequestRecorder("pyrocketmq_broker")
    >>> r(10, 0, 0.001); r(10, 17, 0.002); r(11, 19, 0.5)
    >>> sorted(r.responses.items())
    [((10, 0), 1), ((10, 17), 1), ((11, 19), 1)]
    """

    def __init__(self, prefix: str, const_labels: Mapping[str, str] | None = None,
                 bounds: Sequence[float] = LATENCY_BUCKETS) -> None:
        self.prefix = prefix
        self.const_labels = dict(const_labels or {})
        self.bounds = tuple(bounds)
        self.responses: dict[tuple[int, int | None], int] = {}
        self.latency: dict[tuple[int, int | None], LatencyRecorder] = {}

    MAX_KEYS = 512
    """Distinct (request, response) pairs kept apart; past it, new pairs are counted under code -1
    (``OTHER``), so a client sending random codes cannot grow the tables."""

    def __call__(self, request_code: int, response_code: int | None, seconds: float) -> None:
        key = (request_code, response_code)
        responses = self.responses
        n = responses.get(key)
        if n is None and len(responses) >= self.MAX_KEYS:
            request_code = -1
            key = (-1, response_code if response_code in _KNOWN_RESPONSES else -1)
            n = responses.get(key)
        responses[key] = (n or 0) + 1
        rec = self.latency.get(key)
        if rec is None:
            rec = self.latency[key] = LatencyRecorder(self.bounds)
        rec.observe(seconds)

    def count(self, request_code: int, response_code: int | None = None) -> int:
        """Requests of ``request_code`` answered with ``response_code`` (any answer when ``None``)."""
        return sum(n for (req, resp), n in list(self.responses.items())
                   if req == request_code and (response_code is None or resp == response_code))

    def families(self) -> Iterator[Metric]:
        totals: dict[tuple[str, str], int] = {}
        for (req, resp), n in list(self.responses.items()):
            key = (request_code_name(req), response_code_name(resp))
            totals[key] = totals.get(key, 0) + n
        const_names, const_values = list(self.const_labels), list(self.const_labels.values())
        requests = CounterMetricFamily(
            f"{self.prefix}_requests",
            "Requests answered, by request code and response code (NONE: a oneway request).",
            labels=[*const_names, "code", "response"],
        )
        for (code_name, resp_name), n in sorted(totals.items()):
            requests.add_metric([*const_values, code_name, resp_name], n)
        yield requests
        merged = self._merged(lambda req, _resp: request_code_name(req))
        yield histogram_family(
            f"{self.prefix}_request_duration_seconds",
            "Time from a request's arrival to its answer being queued, by request code "
            "(a pull held by long polling counts its hold).",
            [*const_names, "code"],
            (((*const_values, name), rec) for name, rec in sorted(merged.items())),
        )


    def _merged(self, label: Callable[[int, int | None], _K]) -> dict[_K, LatencyRecorder]:
        """The latency recorders summed by ``label(request, response)`` (codes share a label name)."""
        merged: dict[_K, LatencyRecorder] = {}
        for (req, resp), rec in list(self.latency.items()):
            key = label(req, resp)
            into = merged.get(key)
            if into is None:
                into = merged[key] = LatencyRecorder(self.bounds)
            for i, n in enumerate(list(rec.counts)):
                into.counts[i] += n
            into.sum += rec.sum
            into.count += rec.count
        return merged

    def apache_families(self, const: Mapping[str, str]) -> Iterator[Metric]:
        """The same requests as Apache RocketMQ 5 exports them: ``rocketmq_rpc_latency``, a histogram
        in milliseconds by ``protocol_type``, ``request_code`` and ``response_code`` (lower-case code
        names; ``none`` for a oneway request); its ``_count`` is the request counter."""
        family = HistogramMetricFamily(
            "rocketmq_rpc_latency",
            "Time from a request's arrival to its answer being queued, in milliseconds.",
            labels=[*const, "protocol_type", "request_code", "response_code"],
        )
        merged = self._merged(
            lambda req, resp: (request_code_name(req).lower(), response_code_name(resp).lower())
        )
        for (req_name, resp_name), rec in sorted(merged.items()):
            buckets = [(le if le == "+Inf" else _ms(float(le)), n) for le, n in rec.cumulative()]
            family.add_metric([*const.values(), "remoting", req_name, resp_name], buckets, rec.sum * 1000)
        yield family


MESSAGE_SIZE_BUCKETS: tuple[float, ...] = (
    1024.0,
    4096.0,
    512 * 1024.0,
    1024.0**2,
    2 * 1024.0**2,
    4 * 1024.0**2,
)
"""Apache RocketMQ 5's ``rocketmq_message_size`` buckets, in bytes: 1 KiB, 4 KiB, 512 KiB, 1, 2, 4 MiB."""

RPC_LATENCY_BUCKETS: tuple[float, ...] = (0.001, 0.003, 0.005, 0.007, 0.01, 0.1, 1.0, 2.0, 3.0)
"""Apache RocketMQ 5's ``rocketmq_rpc_latency`` buckets (1, 3, 5, 7, 10, 100 ms, 1, 2, 3 s), in seconds."""


def _ms(seconds: float) -> str:
    """A bucket bound in milliseconds as Prometheus writes it (``0.003`` → ``"3.0"``)."""
    return str(round(seconds * 1000, 6))


class ScrapeCollector(Collector):
    """A collector that calls ``fn()`` at every scrape; ``fn`` yields metric families."""

    def __init__(self, fn: Callable[[], Iterable[Metric]]) -> None:
        self._fn = fn

    def collect(self) -> Iterator[Metric]:
        yield from self._fn()

    def describe(self) -> list[Metric]:
        return []  # unchecked collector: the families depend on the state at scrape time
