"""Notices for held pulls in controller mode: given at once when the record is within the confirm
offset, else held and given in arrival order once the confirm offset passes the record's end."""

from __future__ import annotations

from pyrocketmq.broker.ha.ack_table import AckTable
from pyrocketmq.broker.ha.confirmed import ConfirmedArrivals


class Log:
    def __init__(self) -> None:
        self.limit: int | None = 100
        self.written = 0
        self.told: list[tuple[str, int, int, int | None]] = []

    def gate(self) -> ConfirmedArrivals:
        return ConfirmedArrivals(lambda: self.limit, lambda: self.written,
                                 lambda t, q, m, tags: self.told.append((t, q, m, tags)))


def test_a_readable_record_is_told_at_once_and_others_once_confirmed() -> None:
    log = Log()
    gate = log.gate()
    log.written = 80
    gate.arrived("T", 0, 1, None)
    assert log.told == [("T", 0, 1, None)] and len(gate) == 0
    log.written = 150
    gate.arrived("T", 1, 1, 7)
    log.written = 200
    gate.arrived("T", 0, 2, None)
    assert len(log.told) == 1 and len(gate) == 2
    assert gate.release() == 0
    log.limit = 160
    assert gate.release() == 1 and log.told[-1] == ("T", 1, 1, 7)
    log.limit = 1000
    log.written = 300
    gate.arrived("T", 2, 1, None)  # readable, but after one still held: order is kept
    assert log.told[1:] == [("T", 1, 1, 7), ("T", 0, 2, None), ("T", 2, 1, None)] and len(gate) == 0


def test_no_limit_tells_everything_held() -> None:
    log = Log()
    gate = log.gate()
    log.written = 500
    gate.arrived("T", 0, 1, None)
    gate.arrived("T", 0, 2, None)
    assert log.told == [] and len(gate) == 2
    log.limit = None  # stepped down, or not a controller-mode master any more
    assert gate.release() == 2 and [m for _, _, m, _ in log.told] == [1, 2]


def test_the_ack_table_reports_each_acknowledgement_and_in_sync_set_change() -> None:
    table = AckTable()
    calls: list[int] = []
    table.on_progress = lambda: calls.append(table.progress)
    table.connect("s")
    table.identify("s", 2)
    table.set_required(frozenset({2}))
    table.ack("s", 120)
    table.set_required(frozenset())
    assert calls == [-1, 120, 1 << 62]
