"""The many-topics rows: the topics file both brokers load, the relay's frame splitting and grouping
of REGISTER_BROKER frames into registrations, the topics table (no sockets: the relay's pumps are
not started here)."""

from __future__ import annotations

import json
import struct

from bench import clusters
from bench.cli import build_parser, make_plan, select
from bench.relay import Frame, _Splitter, group
from bench.report import topics
from bench.scenarios import Result
from pyrocketmq.remoting.body import TopicConfigSerializeWrapper
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand, encode


def test_the_topics_file_holds_every_topic_with_eight_queues(tmp_path) -> None:
    clusters.write_topics(tmp_path, 3)
    raw = (tmp_path / "config" / "topics.json").read_bytes()
    wrapper = TopicConfigSerializeWrapper.from_json(raw)
    assert sorted(wrapper.topic_config_table) == ["BenchTopic_0", "BenchTopic_1", "BenchTopic_2"]
    assert {(c.read_queue_nums, c.write_queue_nums, c.perm) for c in wrapper.topic_config_table.values()} \
        == {(8, 8, 6)}  # fmt: skip
    assert json.loads(raw)["dataVersion"]["counter"] == 1


def test_frames_are_split_wherever_the_bytes_break() -> None:
    frame = encode(RemotingCommand.request(RequestCode.REGISTER_BROKER, {"brokerName": "b"}, b"x" * 100))
    two = frame + frame
    splitter = _Splitter()
    got = []
    for i, cut in enumerate((3, 50, len(frame) + 7, len(two))):
        start = (3, 50, len(frame) + 7, len(two))[i - 1] if i else 0
        got += splitter.feed(two[start:cut], float(i))
    assert [(first, size) for first, size, _ in got] == [(0.0, len(frame)), (2.0, len(frame))]
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4


def test_frames_close_together_are_one_registration() -> None:
    regs = group([Frame(40.0, 1500, 40.1, True), Frame(10.0, 1000, 10.2, True), Frame(10.3, 500, 10.4, True)])
    assert [(r.frames, r.size, round(r.seconds, 2)) for r in regs] == [(2, 1500, 0.4), (1, 1500, 0.1)]


def _t(broker: str, n: int, tps: float, fds: int) -> Result:
    return Result(f"topics-{n}", broker, "ASYNC_FLUSH",
                  figures={"send_tps": tps, "fds": fds, "register_kib": 1})


def test_the_topics_table_relates_each_count_to_the_fewest() -> None:
    table = topics([_t("pyrocketmq", 10, 1000, 100), _t("pyrocketmq", 1000, 800, 1090),
                    _t("apache", 10, 500, 200), Result("topics-1000", "apache", "ASYNC_FLUSH", error="boom")])
    lines = table.splitlines()
    assert lines[2].startswith("| 10     | pyrocketmq ")
    ours_1000 = next(line for line in lines if line.startswith("| 1000   | pyrocketmq"))
    assert "| 0.80 " in ours_1000 and "| 1.00 " in ours_1000  # TPS / fewest, fds per added topic
    assert "FAILED: boom" in table


def test_smoke_runs_two_small_topic_counts_briefly_when_named() -> None:
    assert not [s for s in select(build_parser().parse_args(["--smoke"]))[0] if s.topics]
    args = build_parser().parse_args(["--smoke", "--scenarios", "topics-10,topics-200"])
    chosen, _ = select(args)
    assert {s.name: s.topics for s in chosen if s.topics} == {"topics-10": 10, "topics-200": 200}
    assert make_plan(args).topics_seconds <= 5
