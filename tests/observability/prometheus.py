"""A real Prometheus (Debian's ``prometheus`` package) on loopback, for the observability tests.

- :func:`find_tool` — the ``prometheus`` / ``promtool`` binaries, or a skip (a failure with
  ``CI=true``: a CI run must never go green by skipping). ``scripts/setup.sh`` installs the package.
- :class:`Prometheus` — writes a config that scrapes the given targets every second and evaluates
  the given rule files every second, starts the server on a free port with its own TSDB under the
  test's tmp dir, and answers PromQL through the HTTP API (``/api/v1/query``).
- :func:`dashboard_exprs` / :func:`rule_exprs` — every PromQL expression in the chart's dashboards
  and rules; :func:`grafana_to_promql` substitutes Grafana's variables so Prometheus can run them.

Nothing here asserts a time: waits poll until a deadline and then fail with what was last seen.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.cluster import ManagedProcess, free_port
from tests.helpers.prereq import missing_prerequisite

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "pyrocketmq"
RULES = CHART / "files" / "rules.yaml"
DASHBOARDS = sorted((CHART / "dashboards").glob("*.json"))


def _which(name: str) -> str | None:
    return shutil.which(name) or (f"/usr/bin/{name}" if os.access(f"/usr/bin/{name}", os.X_OK) else None)


def _install() -> str:
    """Install Debian's package the way scripts/setup.sh does (root and apt-get only); what happened."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "not root or no apt-get, so not installed"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", "prometheus"],
    ):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
        if proc.returncode != 0:
            return f"{' '.join(argv)} failed: {proc.stderr.strip()[-500:]}"
    return "installed"


def find_tool(name: str) -> str:
    """``prometheus`` or ``promtool``; installs the package if missing (as root), else skips (fails on CI)."""
    path = _which(name)
    if path is None:
        outcome = _install()
        path = _which(name)
    if path is None:
        reason = f"{name} not found ({outcome}): install Debian's prometheus package (scripts/setup.sh does)"
        missing_prerequisite("observability", reason)
    return path


class Prometheus:
    def __init__(self, workdir: Path, jobs: Mapping[str, Sequence[str]], rule_files: Sequence[Path] = (),
                 scrape_configs: Sequence[Mapping[str, Any]] = (), binary: str | None = None) -> None:
        """``jobs``: static targets per job name; ``scrape_configs``: more jobs, as Prometheus takes
        them; ``binary``: a prometheus other than Debian's (which has no Kubernetes discovery)."""
        self.workdir = workdir
        self.binary = binary
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "900ms", "evaluation_interval": "1s"},
            "rule_files": [str(p) for p in rule_files],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": list(targets)}]}
                for job, targets in jobs.items()
            ]
            + [dict(c) for c in scrape_configs],
        }
        workdir.mkdir(parents=True, exist_ok=True)
        self.config = workdir / "prometheus.yml"
        self.config.write_text(yaml.safe_dump(config, sort_keys=False))
        self.proc: ManagedProcess | None = None

    def start(self, timeout: float = 60.0) -> Prometheus:
        argv = [
            self.binary or find_tool("prometheus"),
            f"--config.file={self.config}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--storage.tsdb.retention.time=1h",
            "--log.level=warn",
        ]
        self.proc = ManagedProcess(
            "prometheus", argv, self.workdir / "prometheus.log", cwd=self.workdir
        ).start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.proc.alive():
                raise RuntimeError(f"prometheus exited:\n{self.proc.tail(40)}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"prometheus did not become ready:\n{self.proc.tail(40)}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(grace=10)

    def api(self, path: str, **params: str) -> Any:
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                doc = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            doc = json.loads(e.read() or b"{}")
            raise AssertionError(f"{path} {params}: HTTP {e.code}: {doc.get('error')}") from None
        assert doc.get("status") == "success", doc
        return doc["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector (or scalar, as one sample) ``expr`` evaluates to now."""
        data = self.api("query", query=expr)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def value(self, expr: str) -> float | None:
        """The single value of ``expr``, or None when it returns nothing."""
        result = self.query(expr)
        assert len(result) <= 1, f"{expr} returned {len(result)} series"
        return float(result[0]["value"][1]) if result else None

    def metric_names(self) -> set[str]:
        return set(self.api("label/__name__/values"))

    def wait(self, what: str, fn: Callable[[], Any], timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = fn()
            if last:
                return last
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what}; last: {last!r}\n--- prometheus log ---\n"
                             f"{self.proc.tail(20) if self.proc else ''}")


# -- the chart's expressions ---------------------------------------------------------------------------

_GRAFANA_VARS = {
    "$__rate_interval": "1m",
    "$__interval": "15s",
    "$__range": "1h",
}


def grafana_to_promql(expr: str) -> str:
    """``expr`` with Grafana's built-in intervals fixed and every template variable (always used as
    ``label=~"$var"``) matching everything."""
    for name, value in _GRAFANA_VARS.items():
        expr = expr.replace(name, value)
    return re.sub(r"\$\{?[A-Za-z_]\w*\}?", ".*", expr)


def iter_panels(panels: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from iter_panels(panel.get("panels") or ())


def dashboard_exprs() -> list[tuple[str, str, str]]:
    """``(dashboard file, panel title, expr)`` for every target of every dashboard."""
    out = []
    for path in DASHBOARDS:
        doc = json.loads(path.read_text())
        for panel in iter_panels(doc["panels"]):
            for target in panel.get("targets") or ():
                out.append((path.name, panel["title"], target["expr"]))
    return out


def rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def rule_exprs() -> dict[str, str]:
    return {rule["alert"]: rule["expr"] for rule in rules() if "alert" in rule}


def metric_names_in(expr: str) -> set[str]:
    """Metric names an expression reads (``pyrocketmq_*``, ``process_*``, ``up``)."""
    names = set(re.findall(r"\b(pyrocketmq_[a-z0-9_]+|process_[a-z0-9_]+)\b", expr))
    if re.search(r"\bup\{", expr):
        names.add("up")
    return names


def fast_rules_copy(dest: Path, for_duration: str = "1s") -> Path:
    """The chart's rules with every ``for`` shortened (expressions unchanged), for a test to load."""
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = for_duration
    dest.write_text(yaml.safe_dump(doc, sort_keys=False))
    return dest


def run_promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([find_tool("promtool"), *args], capture_output=True, text=True, timeout=60)


# Apache RocketMQ 5's broker metrics (``BrokerMetricsConstant``) with the labels its documentation
# gives each (rocketmq.apache.org, "Metrics"), queried as a dashboard or alert rule written for
# Apache would query them.
APACHE_QUERIES = (
    "sum by (cluster, node_id, topic, message_type) (rate(rocketmq_messages_in_total[1m]))",
    "sum by (cluster, node_id, topic, message_type) (rate(rocketmq_throughput_in_total[1m]))",
    "histogram_quantile(0.99, sum by (le, topic) (rate(rocketmq_message_size_bucket[1m])))",
    "sum by (topic, consumer_group) (rate(rocketmq_messages_out_total[1m]))",
    "sum by (topic, consumer_group) (rate(rocketmq_throughput_out_total[1m]))",
    'sum by (topic, consumer_group) (rocketmq_consumer_lag_messages{is_system="false", is_retry="false"})',
    "sum by (topic, consumer_group) (rocketmq_consumer_ready_messages)",
    "sum by (topic, consumer_group) (rocketmq_consumer_inflight_messages)",
    "max by (topic, consumer_group) (rocketmq_consumer_queueing_latency)",
    "max by (topic, consumer_group) (rocketmq_consumer_lag_latency)",
    "sum by (cluster, node_id, language, version) (rocketmq_producer_connections)",
    (
        "sum by (consumer_group, consume_mode, language) "
        '(rocketmq_consumer_connections{protocol_type="remoting"})'
    ),
    "max by (cluster, node_id) (rocketmq_topic_number)",
    "sum by (consumer_group, topic) (rocketmq_send_to_dlq_messages_total)",
    (
        "histogram_quantile(0.99, sum by (le, request_code) "
        '(rate(rocketmq_rpc_latency_bucket{protocol_type="remoting"}[1m])))'
    ),
    "sum by (request_code, response_code) (rate(rocketmq_rpc_latency_count[1m]))",
    "max by (cluster, node_id) (rocketmq_storage_size)",
    "max by (cluster, node_id) (rocketmq_storage_flush_behind_bytes)",
    "max by (cluster, node_id) (rocketmq_storage_message_reserve_time)",
    "max by (cluster, node_id) (rocketmq_consumer_group_number)",
)
