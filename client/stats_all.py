"""``mqadmin statsAll``: every topic's traffic in and out over the last minute and day, per consumer
group, with the group's backlog — read from the masters (QUERY_TOPIC_CONSUME_BY_WHO for the
groups, VIEW_BROKER_STATS_DATA for the traffic, GET_CONSUME_STATS for the backlog)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

from .admin_lookups import _masters
from .errors import MQError

if TYPE_CHECKING:
    from .admin import Admin

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"


@dataclass(frozen=True, slots=True)
class StatsRow:
    topic: str
    group: str | None
    """None: the topic has no consumer group."""
    accumulation: int
    in_tps: float
    out_tps: float
    in_day: int
    out_day: int


def day_sum(data: dict[str, Any]) -> int:
    """Apache's ``compute24HourSum``: the day's sum, else the hour's, else the minute's."""
    for window in ("statsDay", "statsHour", "statsMinute"):
        total = int((data.get(window) or {}).get("sum") or 0)
        if total:
            return total
    return 0


async def _invoke(admin: Admin, addr: str, code: int, fields: dict[str, str]) -> dict[str, Any] | None:
    resp = await admin.instance.invoke(addr, RemotingCommand.request(code, fields))
    if resp.code != ResponseCode.SUCCESS or not resp.payload:
        return None
    doc = orjson.loads(resp.payload)
    return doc if isinstance(doc, dict) else None


async def _traffic(admin: Admin, masters: list[str], name: str, key: str) -> tuple[float, int]:
    tps, day = 0.0, 0
    for addr in masters:
        data = await _invoke(
            admin, addr, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": name, "statsKey": key}
        )
        if data is not None:
            tps += float((data.get("statsMinute") or {}).get("tps") or 0.0)
            day += day_sum(data)
    return tps, day


async def topic_rows(admin: Admin, topic: str, active: bool) -> list[StatsRow]:
    masters = _masters(await admin.topic_route(topic))
    in_tps, in_day = await _traffic(admin, masters, TOPIC_PUT_NUMS, topic)
    groups: set[str] = set()
    for addr in masters:
        doc = await _invoke(admin, addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic})
        groups.update((doc or {}).get("groupList") or ())
    if not groups:
        return [] if active and in_day == 0 else [StatsRow(topic, None, 0, in_tps, 0.0, in_day, 0)]
    rows = []
    for group in sorted(groups):
        out_tps, out_day = await _traffic(admin, masters, GROUP_GET_NUMS, f"{topic}@{group}")
        try:
            table, _ = await admin.consume_stats(group, topic)
            backlog = max(0, sum(w.broker_offset - w.consumer_offset for w in table.values()))
        except MQError:
            backlog = 0
        if not active or in_day > 0 or out_day > 0:
            rows.append(StatsRow(topic, group, backlog, in_tps, out_tps, in_day, out_day))
    return rows


async def stats_all(admin: Admin, only_topic: str | None = None, active: bool = False) -> list[StatsRow]:
    rows: list[StatsRow] = []
    for topic in sorted(await admin.topic_list()):
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            continue
        if only_topic and topic != only_topic:
            continue
        try:
            rows.extend(await topic_rows(admin, topic, active))
        except MQError:
            continue  # a topic without a route any more: skipped, as mqadmin skips it
    return rows


HEADER = f"{'#Topic':<32}  {'#Consumer Group':<32} {'#Accumulation':>12} {'#InTPS':>11} {'#OutTPS':>11} " \
         f"{'#InMsg24Hour':>14} {'#OutMsg24Hour':>14}\n"


def format_row(r: StatsRow) -> str:
    if r.group is None:
        return (
            f"{r.topic:<32}  {'':<32} {0:>12d} {r.in_tps:>11.2f} {'':>11} {r.in_day:>14d} "
            f"{'NO_CONSUMER':>14}\n"
        )
    return (
        f"{r.topic[:32]:<32}  {r.group[:32]:<32} {r.accumulation:>12d} {r.in_tps:>11.2f} {r.out_tps:>11.2f} "
        f"{r.in_day:>14d} {r.out_day:>14d}\n"
    )
