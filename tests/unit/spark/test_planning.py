"""Range planning and admission control (``maxRecordsPerBatch``), as grids and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.spark.planning import QueueRange, admit, backlog, plan_ranges, wait_for_more

Q = [MessageQueue("T", "broker-a", i) for i in range(4)]


@pytest.mark.parametrize(
    "start, latest, limit, expected",
    [
        # everything fits
        ({Q[0]: 0, Q[1]: 0}, {Q[0]: 3, Q[1]: 4}, 10, {Q[0]: 3, Q[1]: 4}),
        ({Q[0]: 0, Q[1]: 0}, {Q[0]: 3, Q[1]: 4}, None, {Q[0]: 3, Q[1]: 4}),
        # proportional to the backlog
        ({Q[0]: 0, Q[1]: 0}, {Q[0]: 30, Q[1]: 10}, 8, {Q[0]: 6, Q[1]: 2}),
        # equal backlogs, odd budget: the leftover goes to the first queue
        ({Q[0]: 5, Q[1]: 5, Q[2]: 5}, {Q[0]: 15, Q[1]: 15, Q[2]: 15}, 4, {Q[0]: 7, Q[1]: 6, Q[2]: 6}),
        # a budget of 1 still moves
        ({Q[0]: 0, Q[1]: 0}, {Q[0]: 100, Q[1]: 100}, 1, {Q[0]: 1, Q[1]: 0}),
        # an idle queue gets nothing, a busy one everything
        ({Q[0]: 9, Q[1]: 0}, {Q[0]: 9, Q[1]: 50}, 7, {Q[0]: 9, Q[1]: 7}),
        # a queue gone from the route keeps its offset; a new queue enters at its min, with no records yet
        ({Q[0]: 4, Q[1]: 2}, {Q[0]: 10, Q[2]: 30}, 100, {Q[0]: 10, Q[1]: 2, Q[2]: 30}),
    ],
)
def test_admit_grid(start, latest, limit, expected):
    assert admit(start, latest, limit) == expected


def test_new_queue_starts_at_given_min():
    assert admit({Q[0]: 0}, {Q[0]: 5, Q[1]: 40}, 3, new_queue_start={Q[1]: 12}) == {Q[0]: 3, Q[1]: 12}


def test_negative_limit_is_refused():
    with pytest.raises(ValueError):
        admit({Q[0]: 0}, {Q[0]: 1}, -1)


tables = st.fixed_dictionaries({q: st.integers(0, 10_000) for q in Q})


@given(
    tables,
    st.fixed_dictionaries({q: st.integers(0, 5_000) for q in Q}),
    st.one_of(st.none(), st.integers(0, 20_000)),
)
def test_admit_properties(start, growth, limit):
    latest = {q: start[q] + growth[q] for q in Q}
    end = admit(start, latest, limit)
    assert all(start[q] <= end[q] <= latest[q] for q in Q)
    taken = sum(end[q] - start[q] for q in Q)
    assert taken == (backlog(start, latest) if limit is None else min(limit, backlog(start, latest)))
    assert end == admit(start, latest, limit)  # deterministic: a replayed batch is planned the same


def test_plan_ranges():
    start = {Q[0]: 0, Q[1]: 5, Q[2]: 7}
    end = {Q[0]: 3, Q[1]: 5, Q[2]: 20, Q[3]: 9}  # Q[3] is new: nothing before it enters `start`
    assert plan_ranges(start, end) == [
        QueueRange("T", "broker-a", 0, 0, 3),
        QueueRange("T", "broker-a", 2, 7, 20),
    ]
    assert [(r.start, r.end) for r in plan_ranges(start, end, max_per_range=5) if r.queue_id == 2] == [
        (7, 12), (12, 17), (17, 20)]
    assert plan_ranges(end, start) == []


@given(
    tables,
    st.fixed_dictionaries({q: st.integers(0, 500) for q in Q}),
    st.one_of(st.none(), st.integers(1, 50)),
)
def test_ranges_cover_exactly_the_offsets(start, growth, max_per_range):
    end = {q: start[q] + growth[q] for q in Q}
    ranges = plan_ranges(start, end, max_per_range)
    covered = [(r.mq, o) for r in ranges for o in range(r.start, r.end)]
    assert len(covered) == len(set(covered)) == sum(growth.values())
    assert all(max_per_range is None or r.count <= max_per_range for r in ranges)


def test_queue_range_pickles_small():
    import pickle

    r = QueueRange("T", "broker-a", 3, 10, 20)
    assert pickle.loads(pickle.dumps(r)) == r and r.count == 10


@pytest.mark.parametrize(
    "available, minimum, waited_ms, delay_ms, wait",
    [
        (3, 10, 0, 2000, True),  # too few, no time passed
        (3, 10, 1999, 2000, True),
        (3, 10, 2000, 2000, False),  # the delay is over: a batch even below the minimum
        (10, 10, 0, 2000, False),  # the minimum is there
        (50, 10, 0, 2000, False),
        (0, 10, 0, 2000, True),
        (0, 10, 5000, 2000, False),  # not waiting, but the end is the start: no batch
        (1, None, 0, 2000, False),  # no minimum
    ],
)
def test_min_offsets_per_trigger_gate(available, minimum, waited_ms, delay_ms, wait):
    assert wait_for_more(available, minimum, waited_ms, delay_ms) is wait
