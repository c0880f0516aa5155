"""bench/report.py: medians over rounds, the alternating order, the ratio rows and columns per peer."""

from __future__ import annotations

from bench.cli import brokers_for, build_parser, main
from bench.report import headline, markdown, medians, round_order
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


def _line(table: str, start: str) -> list[str]:
    row = next(line for line in table.splitlines() if line.startswith(start))
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_a_ratio_row_and_a_ratio_column_per_apache_release() -> None:
    runs = [_r("pyrocketmq", 300, 3, 1), _r("apache", 200, 4, 1), _r("apache55", 150, 6, 1),
            Result("latency", "pyrocketmq", "ASYNC_FLUSH", figures={"send_tps": 200, "e2e_p99_ms": 6}),
            Result("latency", "apache", "ASYNC_FLUSH", figures={"send_tps": 200, "e2e_p99_ms": 3}),
            Result("latency", "apache55", "ASYNC_FLUSH", error="broker did not start")]
    table = markdown(runs)
    assert [r.split("|")[3].strip() for r in table.splitlines()[2:]] == [
        "pyrocketmq", "apache 4.9.7", "apache 5.5.1", "ratio /4.9.7", "ratio /5.5.1",
        "pyrocketmq", "apache 4.9.7", "apache 5.5.1", "ratio /4.9.7"]  # fmt: skip
    assert _line(table, "| send-128-16 | SYNC_FLUSH  | ratio /5.5.1")[3] == "2.00"
    short = headline(runs)
    assert _line(short, "| scenario")[3:] == ["pyrocketmq", "apache 4.9.7", "apache 5.5.1", "ours/4.9.7",
                                              "ours/5.5.1"]  # fmt: skip
    assert _line(short, "| send-128-16")[2:] == ["send TPS", "300", "200", "150", "1.50", "2.00"]
    # the latency row's headline is its end-to-end p99 (its send rate is fixed); a failed peer says so
    assert _line(short, "| latency")[2:] == ["e2e p99 ms", "6.00", "3.00", "FAILED", "2.00", "FAILED"]


def test_the_grpc_rows_keep_their_own_peer() -> None:
    runs = [Result("grpc5-send", "pyrocketmq", "ASYNC_FLUSH", figures={"send_tps": 90}),
            Result("grpc5-send", "apache5", "ASYNC_FLUSH", figures={"send_tps": 100})]
    assert "| ratio /5.2.0 " in markdown(runs)
    assert _line(headline(runs), "| grpc5-send")[2:] == ["send TPS", "90", "100", "0.90"]


def test_peers_pick_the_apache_brokers_of_each_protocol() -> None:
    both, peers = ["pyrocketmq", "apache"], ["apache", "apache55", "apache5"]
    assert brokers_for("remoting", both, peers) == ["pyrocketmq", "apache", "apache55"]
    assert brokers_for("grpc5", both, peers) == ["pyrocketmq", "apache5"]
    assert brokers_for("remoting", both, ["apache55"]) == ["pyrocketmq", "apache55"]
    assert brokers_for("remoting", ["pyrocketmq"], peers) == ["pyrocketmq"]
    assert build_parser().parse_args([]).peers == "apache,apache55,apache5"
    assert main(["--peers", "apache6"]) == 2
