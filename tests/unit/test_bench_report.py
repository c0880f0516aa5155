"""bench/report.py: medians over rounds, the alternating order, the ratio row."""

from __future__ import annotations

from bench.cli import build_parser, main
from bench.report import markdown, medians, round_order
from bench.scenarios import Result


def _r(broker: str, tps: float, cpu: float, rnd: int, scenario: str = "send-128-16") -> Result:
    return Result(scenario, broker, "SYNC_FLUSH", figures={"send_tps": tps, "cpu_s": cpu, "rt_p99_ms": None},
                  detail={"round": rnd})


def test_the_order_swaps_every_round() -> None:
    assert round_order(["pyrocketmq", "apache"], 0) == ["pyrocketmq", "apache"]
    assert round_order(["pyrocketmq", "apache"], 1) == ["apache", "pyrocketmq"]
    assert round_order(["pyrocketmq", "apache"], 2) == ["pyrocketmq", "apache"]


def test_each_figure_is_the_median_of_its_runs() -> None:
    runs = [_r("pyrocketmq", 100, 5, 1), _r("pyrocketmq", 300, 9, 2), _r("pyrocketmq", 120, 1, 3),
            _r("apache", 200, 4, 1), _r("apache", 100, 4, 2)]
    merged = {r.broker: r for r in medians(runs)}
    assert merged["pyrocketmq"].figures == {"send_tps": 120, "cpu_s": 5, "rt_p99_ms": None}
    assert merged["pyrocketmq"].detail == {"runs": 3, "send_tps_range": (100, 300)}
    assert merged["apache"].figures["send_tps"] == 150  # even count: the mean of the middle two
    table = markdown(medians(runs))
    assert "| 120 (100-300) " in table
    ratio = next(line for line in table.splitlines() if "ratio" in line)
    assert "| 0.80 " in ratio  # 120 / 150: medians divided, not runs


def test_a_single_run_is_reported_as_it_is_and_a_failure_is_kept() -> None:
    one = _r("apache", 200, 4, 1)
    assert medians([one]) == [one]
    bad = Result("send-128-16", "pyrocketmq", "SYNC_FLUSH", error="broker did not start")
    merged = medians([_r("pyrocketmq", 100, 5, 1), bad])
    assert merged == [bad]
    assert "FAILED: broker did not start" in markdown(merged)


def test_rounds_must_be_positive() -> None:
    assert build_parser().parse_args(["--rounds", "3"]).rounds == 3
    assert main(["--rounds", "0"]) == 2
