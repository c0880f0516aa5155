"""``python -m bench.send_path`` against a real broker of ours: acknowledged sends and its CPU."""

from __future__ import annotations

from bench import send_path


def test_a_sync_flush_run_measures_the_broker():
    res = send_path.run_once("SYNC_FLUSH", depth=8, size=64, seconds=1.0, warmup=0.5)
    assert res.tps > 10
    assert res.us_per_send["all"] > 0 and "main" in res.us_per_send
    assert res.us_per_send["all"] >= res.us_per_send["main"]
