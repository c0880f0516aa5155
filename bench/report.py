"""The results table (plain text, also valid Markdown) and the JSON document.

One row per scenario and broker, then a ``ratio`` row (ours / theirs) for every figure both have
(theirs: Apache 4.9.7's broker, or 5.2.0's proxy in local mode for the gRPC rows, ``apache5``).
A figure a generator does not produce is ``-``; a failed scenario shows its error instead.
With several rounds (``--rounds``) each cell is the median of that figure over the rounds, and the
send TPS cell carries the range it moved in (``min-max``).
"""

from __future__ import annotations

import json
import platform
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

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
    for (scenario, flush), pair in by_key.items():
        for broker in ("pyrocketmq", "apache", "apache5"):
            r = pair.get(broker)
            if r is None:
                continue
            if r.error:
                out.append(
                    [scenario, flush, broker, f"FAILED: {r.error.splitlines()[0][:100]}"]
                    + [""] * (len(COLUMNS) - 1)
                )
                continue
            cells = [_cell(r.figures.get(k), f) for k, _, f in COLUMNS]
            spread = r.detail.get("send_tps_range")
            if spread and cells[0] != "-":
                cells[0] += f" ({spread[0]:.0f}-{spread[1]:.0f})"
            out.append([scenario, flush, broker] + cells)
        ours, theirs = pair.get("pyrocketmq"), pair.get("apache") or pair.get("apache5")
        if ours and theirs and not ours.error and not theirs.error:
            cells = [
                _cell(ratio(ours.figures.get(k), theirs.figures.get(k)), "{:.2f}") for k, _, _ in COLUMNS
            ]
            out.append([scenario, flush, "ratio"] + cells)
    return out


def markdown(results: Iterable[Result]) -> str:
    header = ["scenario", "flush", "broker"] + [title for _, title, _ in COLUMNS]
    body = rows(results)
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(cells)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(r) for r in body)])


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
