"""The image's entrypoint script and the operator's command line (no cluster needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyrocketmq.operator.__main__ import _parser, settings_from_args
from pyrocketmq.operator.settings import OperatorSettings

ROOT = Path(__file__).resolve().parents[3]
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"


def run_entrypoint(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(ENTRYPOINT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHON": sys.executable, **env},
    )


@pytest.mark.parametrize(
    ("pod", "broker_id", "role"), [("orders-1-0", "0", "ASYNC_MASTER"), ("orders-1-2", "2", "SLAVE")]
)
def test_broker_entrypoint_derives_identity_from_the_pod(tmp_path, pod, broker_id, role):
    template = tmp_path / "broker.conf"
    template.write_text("brokerName=orders-1\nbrokerId=0\nbrokerRole=ASYNC_MASTER\n")
    proc = run_entrypoint(
        "broker", "--print", BROKER_CONF_TEMPLATE=str(template), POD_NAME=pod, POD_IP="10.2.3.4"
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert (
        f"brokerId={broker_id}" in lines and f"brokerRole={role}" in lines and "brokerIP1=10.2.3.4" in lines
    )


def test_other_commands_run_as_given():
    proc = run_entrypoint("echo", "hello")
    assert proc.returncode == 0 and proc.stdout.strip() == "hello"


def test_operator_command_line_overrides_the_environment():
    base = OperatorSettings.from_env({"PYROCKETMQ_OPERATOR_NAMESPACES": "x"})
    s = settings_from_args(
        _parser().parse_args(["-n", "a", "-n", "b", "--resync-interval", "2", "--metrics-port", "0"]), base
    )
    assert (
        s.watch.namespaces == ("a", "b") and s.reconcile.resync_interval == 2 and s.watch.metrics_port is None
    )
    assert s.reconcile.resync_initial_delay <= 2
    s = settings_from_args(_parser().parse_args(["--all-namespaces", "--liveness", "off"]), base)
    assert s.watch.namespaces == () and s.watch.liveness_endpoint is None


def test_handlers_register_every_kind_on_their_own_registry():
    from pyrocketmq.operator.handlers import build_registry

    r1, r2 = build_registry(OperatorSettings()), build_registry(OperatorSettings())
    assert r1 is not r2
    resources = {h.selector.any_name for h in r1._changing.get_all_handlers() if h.selector is not None}
    assert resources == {"nameservers", "brokers", "topics", "consumergroups", "users"}
    timers = {h.selector.any_name for h in r1._spawning.get_all_handlers() if h.selector is not None}
    assert timers == resources


def test_only_topics_and_groups_block_their_deletion():
    from kopf._core.intents import causes

    from pyrocketmq.operator.handlers import build_registry

    registry = build_registry(OperatorSettings())
    by_plural = {
        h.selector.any_name: h for h in registry._spawning.get_all_handlers() if h.selector is not None
    }
    assert {p for p, h in by_plural.items() if h.requires_finalizer} == {"topics", "consumergroups", "users"}
    deleters = {h.selector.any_name for h in registry._changing.get_all_handlers()
                if h.selector is not None and h.reason == causes.Reason.DELETE}
    assert deleters == {"topics", "consumergroups", "users"}
