"""/healthz and /readyz of real processes: a broker is alive but not ready until a name server
accepts its registration; the name server is ready once it serves."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.helpers.cluster import free_broker_port, free_port, start_server_process, write_properties


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=3) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def wait_status(url: str, status: int, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    last = (0, "")
    while time.monotonic() < deadline:
        last = get(url)
        if last[0] == status:
            return last[1]
        time.sleep(0.2)
    raise AssertionError(f"{url}: wanted {status}, last {last}")


def test_broker_is_ready_only_once_registered_with_a_name_server(tmp_path: Path) -> None:
    ns_port, ns_metrics, broker_port, broker_metrics = (
        free_port(),
        free_port(),
        free_broker_port(),
        free_port(),
    )
    conf = write_properties(tmp_path / "broker.conf", {
        "brokerName": "health-broker", "namesrvAddr": f"127.0.0.1:{ns_port}", "listenPort": broker_port,
        "brokerIP1": "127.0.0.1", "storePathRootDir": tmp_path / "store", "metricsPort": broker_metrics,
        "mappedFileSizeCommitLog": 16 * 1024 * 1024, "registerNameServerPeriod": 10_000,
    })
    broker = start_server_process("broker", ["-c", conf], tmp_path, broker_port)
    try:
        base = f"http://127.0.0.1:{broker_metrics}"
        assert wait_status(f"{base}/healthz", 200) == "ok\n"
        assert "registered with none of 1 name server" in wait_status(f"{base}/readyz", 503)
        assert "pyrocketmq_broker_ready{" in get(f"{base}/metrics")[1]

        namesrv = start_server_process(
            "namesrv", ["--listen-port", ns_port, "--metrics-port", ns_metrics], tmp_path, ns_port
        )
        try:
            assert wait_status(f"http://127.0.0.1:{ns_metrics}/readyz", 200) == "ready\n"
            assert wait_status(f"{base}/readyz", 200, timeout=60) == "ready\n"  # at the next registration
            metrics = get(f"http://127.0.0.1:{ns_metrics}/metrics")[1]
            assert 'pyrocketmq_namesrv_live_brokers{cluster="DefaultCluster"} 1.0' in metrics
        finally:
            namesrv.stop()
    finally:
        broker.stop()
    assert get(f"http://127.0.0.1:{broker_metrics}/healthz")[0] == 0  # the endpoint went with the process
