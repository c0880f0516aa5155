"""Traffic over the last minute / hour / day (VIEW_BROKER_STATS_DATA) and the settings a running
broker can change (UPDATE_BROKER_CONFIG)."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.hot_config import HOT_KEYS, ConfigRefused, apply_updates
from pyrocketmq.broker.stats_items import TOPIC_PUT_NUMS, StatsTable
from pyrocketmq.broker.store.settings import StoreSettings
from pyrocketmq.client.stats_all import StatsRow, day_sum, format_row


def test_windows_count_from_their_oldest_snapshot_to_now():
    t = StatsTable()
    t.add(TOPIC_PUT_NUMS, "T", 10, 0)
    t.add(TOPIC_PUT_NUMS, "T", 20, 5_000, times=2)
    item = t.get(TOPIC_PUT_NUMS, "T")
    assert item is not None
    first = item.data("minute", 10_000)
    assert (first.sum, first.tps, first.avgpt) == (30, 3.0, 10.0)  # from the creation snapshot
    for now in range(10_000, 90_001, 10_000):
        t.sample(now)
    t.add(TOPIC_PUT_NUMS, "T", 6, 91_000)
    minute = item.data("minute", 100_000)
    assert minute.sum == 6 and minute.tps == pytest.approx(
        6 * 1000 / 70_000
    )  # 7 snapshots kept: 30 s .. 90 s
    assert item.data("day", 100_000).sum == 36
    assert t.get(TOPIC_PUT_NUMS, "nope") is None
    t.forget_topic("T")
    assert t.get(TOPIC_PUT_NUMS, "T") is None


def test_day_sum_falls_back_like_apache_and_rows_keep_mqadmin_columns():
    assert day_sum({"statsDay": {"sum": 0}, "statsHour": {"sum": 0}, "statsMinute": {"sum": 4}}) == 4
    assert day_sum({"statsDay": {"sum": 9}, "statsMinute": {"sum": 4}}) == 9
    row = format_row(StatsRow("T", "G", 3, 1.5, 0.25, 10, 7))
    assert row.split() == ["T", "G", "3", "1.50", "0.25", "10", "7"]
    assert format_row(StatsRow("T", None, 0, 0.0, 0.0, 2, 0)).split() == [
        "T",
        "0",
        "0.00",
        "2",
        "NO_CONSUMER",
    ]


def test_hot_keys_apply_whole_or_not_at_all():
    s = StoreSettings()
    effective: dict[str, str] = {}
    changed = apply_updates(
        s,
        {
            "fileReservedTime": "48",
            "deleteWhen": "03;15",
            "cleanFileForciblyEnable": "FALSE",
            "timerMaxDelaySec": "60",
        },
        effective,
    )
    assert (
        changed
        == effective
        == {
            "fileReservedTime": "48",
            "deleteWhen": "03;15",
            "cleanFileForciblyEnable": "false",
            "timerMaxDelaySec": "60",
        }
    )
    assert (s.retention.file_reserved_time, s.retention.delete_when, s.retention.clean_file_forcibly_enable,
            s.timer_max_delay_sec) == (48, "03;15", False, 60)
    with pytest.raises(
        ConfigRefused, match="brokerRole cannot change while the broker runs; these can: cleanFile"
    ):
        apply_updates(s, {"fileReservedTime": "12", "brokerRole": "SLAVE"}, effective)
    with pytest.raises(ConfigRefused, match="diskMaxUsedSpaceRatio='99': expected 10..95"):
        apply_updates(s, {"fileReservedTime": "12", "diskMaxUsedSpaceRatio": "99"}, effective)
    with pytest.raises(ConfigRefused, match="deleteWhen='25'"):
        apply_updates(s, {"deleteWhen": "25"}, effective)
    assert s.retention.file_reserved_time == 48  # nothing of a refused update applied
    assert all(StoreSettings.knows(k) for k in HOT_KEYS)
