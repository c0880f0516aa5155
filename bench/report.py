"""The results tables (plain text, also valid Markdown) and the JSON document.

``markdown``: one row per scenario and broker (``apache 4.9.7``, ``apache 5.5.1`` for the 4.x-protocol
rows, ``apache 5.2.0``, the proxy in local mode, for the gRPC rows), then a ``ratio /<version>`` row
(ours / that peer's) for every figure both have, one per peer that ran. A figure a generator does not
produce is ``-``; a failed scenario shows its error instead. With several rounds (``--rounds``) each
cell is the median of that figure over the rounds, and the send TPS cell carries the range it moved
in (``min-max``).

``headline``: one line per scenario, its headline figure (send TPS, consume TPS, or end-to-end p99
for the latency row) for each broker, and a ratio column ``ours/<version>`` per peer.
"""

from __future__ import annotations

import json
import platform
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench import clusters
from bench.scenarios import Result

COLUMNS = [
    ("send_tps", "send TPS", "{:.0f}"),
    ("rt_avg_ms", "RT avg ms", "{:.2f}"),
    ("rt_p99_ms", "RT p99 ms", "{:.2f}"),
    ("consume_tps", "consume TPS", "{:.0f}"),
    ("e2e_p50_ms", "e2e p50 ms", "{:.2f}"),
    ("e2e_p99_ms", "e2e p99 ms", "{:.2f}"),
    ("cpu_s", "CPU s", "{:.1f}"),
    ("peak_rss_mib", "peak RSS MiB", "{:.0f}"),
    ("peak_anon_mib", "peak anon MiB", "{:.0f}"),
]


PEER_ORDER = [kind for peers in clusters.PEERS.values() for kind in peers]
"""Apache's brokers in the order their rows and ratio columns are shown."""


def label(broker: str) -> str:
    """The row label of a broker kind: ``apache 4.9.7`` for ``apache``, ``pyrocketmq`` as it is."""
    version = clusters.VERSIONS.get(broker)
    return f"apache {version}" if version else broker


def round_order(kinds: list[str], rnd: int) -> list[str]:
    """The brokers in the order they run in round ``rnd`` (0-based): as given, reversed every other round."""
    return list(kinds) if rnd % 2 == 0 else list(reversed(kinds))


def medians(results: Iterable[Result]) -> list[Result]:
    """One result per (scenario, flush, broker): each figure's median over the runs that produced it.

    A key with a failed run keeps the failure (a broker that failed once is not reported by its good
    runs alone). ``detail["runs"]`` counts the runs, ``detail["send_tps_range"]`` is (min, max).
    """
    groups: dict[tuple[str, str, str], list[Result]] = {}
    for r in results:
        groups.setdefault((r.scenario, r.flush, r.broker), []).append(r)
    out = []
    for (scenario, flush, broker), runs in groups.items():
        failed = next((r for r in runs if r.error), None)
        if len(runs) == 1 or failed is not None:
            out.append(failed or runs[0])
            continue
        figures: dict[str, float | None] = {}
        for key in dict.fromkeys(k for r in runs for k in r.figures):
            values = [float(v) for r in runs if (v := r.figures.get(key)) is not None]
            figures[key] = statistics.median(values) if values else None
        tps = [float(v) for r in runs if (v := r.figures.get("send_tps")) is not None]
        detail: dict[str, Any] = {"runs": len(runs)}
        if tps:
            detail["send_tps_range"] = (min(tps), max(tps))
        out.append(Result(scenario, broker, flush, figures=figures, detail=detail))
    return out


def _cell(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    try:
        return fmt.format(float(value))
    except (TypeError, ValueError):
        return str(value)


def ratio(ours: Any, theirs: Any) -> float | None:
    try:
        a, b = float(ours), float(theirs)
    except (TypeError, ValueError):
        return None
    return a / b if b else None


def rows(results: Iterable[Result]) -> list[list[str]]:
    by_key: dict[tuple[str, str], dict[str, Result]] = {}
    for each in results:
        by_key.setdefault((each.scenario, each.flush), {})[each.broker] = each
    out = []
    for (scenario, flush), runs in by_key.items():
        for broker in ("pyrocketmq", *PEER_ORDER):
            r = runs.get(broker)
            if r is None:
                continue
            if r.error:
                out.append(
                    [scenario, flush, label(broker), f"FAILED: {r.error.splitlines()[0][:100]}"]
                    + [""] * (len(COLUMNS) - 1)
                )
                continue
            cells = [_cell(r.figures.get(k), f) for k, _, f in COLUMNS]
            spread = r.detail.get("send_tps_range")
            if spread and cells[0] != "-":
                cells[0] += f" ({spread[0]:.0f}-{spread[1]:.0f})"
            out.append([scenario, flush, label(broker)] + cells)
        ours = runs.get("pyrocketmq")
        for peer in PEER_ORDER:
            theirs = runs.get(peer)
            if ours and theirs and not ours.error and not theirs.error:
                cells = [
                    _cell(ratio(ours.figures.get(k), theirs.figures.get(k)), "{:.2f}") for k, _, _ in COLUMNS
                ]
                out.append([scenario, flush, f"ratio /{clusters.VERSIONS[peer]}"] + cells)
    return out


HEADLINES = [("e2e_p99_ms", "e2e p99 ms"), ("consume_tps", "consume TPS"), ("send_tps", "send TPS")]
"""A row's headline figure: the first of these its brokers produced (the latency row's send TPS is
the fixed rate it was paced at, so its end-to-end p99 comes first)."""


def headline_rows(results: Iterable[Result]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the headline table: one row per scenario and flush mode."""
    by_key: dict[tuple[str, str], dict[str, Result]] = {}
    for each in results:
        by_key.setdefault((each.scenario, each.flush), {})[each.broker] = each
    peers = [p for p in PEER_ORDER if any(p in runs for runs in by_key.values())]
    header = ["scenario", "flush", "figure", "pyrocketmq", *(label(p) for p in peers),
              *(f"ours/{clusters.VERSIONS[p]}" for p in peers)]  # fmt: skip
    out = []
    for (scenario, flush), runs in by_key.items():
        good = [r for r in runs.values() if not r.error]
        key, title = next(((k, t) for k, t in HEADLINES if any(r.figures.get(k) is not None for r in good)),
                          HEADLINES[-1])  # fmt: skip
        fmt = next(f for k, _, f in COLUMNS if k == key)
        values = [_headline_cell(runs.get(b), key, fmt) for b in ("pyrocketmq", *peers)]
        ours = runs.get("pyrocketmq")
        ratios = [_headline_cell(ours, key, "{:.2f}", theirs) if ours and (theirs := runs.get(p)) else ""
                  for p in peers]
        out.append([scenario, flush, title, *values, *ratios])
    return header, out


def _headline_cell(r: Result | None, key: str, fmt: str, theirs: Result | None = None) -> str:
    """``r``'s figure ``key`` (or its ratio to ``theirs``'s); blank if it did not run, FAILED if it failed."""
    if r is None:
        return ""
    failed = r.error or (theirs is not None and theirs.error)
    if failed:
        return "FAILED"
    value = r.figures.get(key)
    return _cell(value if theirs is None else ratio(value, theirs.figures.get(key)), fmt)


def markdown(results: Iterable[Result]) -> str:
    """The full table: every figure, a row per broker and a ratio row per peer."""
    return _table(["scenario", "flush", "broker"] + [title for _, title, _ in COLUMNS], rows(results))


def headline(results: Iterable[Result]) -> str:
    """The short table: each row's headline figure and one ratio column per peer."""
    return _table(*headline_rows(results))


def _table(header: list[str], body: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(cells)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(r) for r in body)])


TOPIC_COLUMNS = [
    ("send_tps", "send TPS", "{:.0f}"),
    ("of_fewest", "TPS / fewest", "{:.2f}"),
    ("rt_p99_ms", "RT p99 ms", "{:.2f}"),
    ("warmup_s", "1st pass s", "{:.1f}"),
    ("start_s", "start s", "{:.1f}"),
    ("route_p50_ms", "route p50 ms", "{:.2f}"),
    ("route_p99_ms", "route p99 ms", "{:.2f}"),
    ("register_kib", "register KiB", "{:.0f}"),
    ("register_frames", "frames", "{:.0f}"),
    ("register_ms", "register ms", "{:.1f}"),
    ("fds_idle", "fds idle", "{:.0f}"),
    ("fds", "fds after", "{:.0f}"),
    ("fds_per_topic", "fds/topic", "{:.2f}"),
    ("maps", "maps", "{:.0f}"),
    ("idle_anon_mib", "idle anon MiB", "{:.0f}"),
    ("peak_anon_mib", "peak anon MiB", "{:.0f}"),
    ("peak_rss_mib", "peak RSS MiB", "{:.0f}"),
]
"""The ``topics-<n>`` rows' own table: how each figure grows with the topic count. ``TPS / fewest``
is the send TPS over the same broker's at the fewest topics; ``fds/topic`` is the growth in open
files per added topic from the fewest topics' row (after the sends)."""


def _topic_count(scenario: str) -> int | None:
    head, _, n = scenario.partition("-")
    return int(n) if head == "topics" and n.isdigit() else None


def topics(results: Iterable[Result]) -> str:
    """The many-topics table: one row per topic count and broker, counts ascending, ours first."""
    by_broker: dict[str, dict[int, Result]] = {}
    for r in results:
        n = _topic_count(r.scenario)
        if n is not None:
            by_broker.setdefault(r.broker, {})[n] = r
    body = []
    counts = sorted({n for runs in by_broker.values() for n in runs})
    for n in counts:
        for broker in ("pyrocketmq", *PEER_ORDER):
            runs = by_broker.get(broker, {})
            row = runs.get(n)
            if row is None:
                continue
            if row.error:
                body.append([str(n), label(broker), f"FAILED: {row.error.splitlines()[0][:100]}"]
                            + [""] * (len(TOPIC_COLUMNS) - 1))
                continue
            fewest = runs[min(runs)]
            figures = dict(row.figures)
            if not fewest.error:
                figures["of_fewest"] = ratio(row.figures.get("send_tps"), fewest.figures.get("send_tps"))
                grown = ratio((row.figures.get("fds") or 0) - (fewest.figures.get("fds") or 0), n - min(runs))
                figures["fds_per_topic"] = grown if n > min(runs) else None
            body.append([str(n), label(broker)] + [_cell(figures.get(k), f) for k, _, f in TOPIC_COLUMNS])
    return _table(["topics", "broker"] + [t for _, t, _ in TOPIC_COLUMNS], body)


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as fh:
            models = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        info["cpus"] = len(models)
        info["cpu_model"] = models[0] if models else None
        with open("/proc/meminfo") as fh:
            info["mem_total_kib"] = int(fh.readline().split()[1])
        with open("/proc/loadavg") as fh:
            info["loadavg_at_end"] = fh.read().split()[:3]
    except OSError:
        pass
    return info


def write_json(path: Path, results: list[Result], meta: dict[str, Any]) -> None:
    doc = {
        "meta": {**meta, "machine": machine()},
        "results": [
            {"scenario": r.scenario, "broker": r.broker, "flush": r.flush, "figures": r.figures,
             "detail": r.detail, "error": r.error}
            for r in results
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
