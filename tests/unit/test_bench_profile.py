"""bench/profile.py: the top-frames table of py-spy's collapsed stacks."""

from __future__ import annotations

from bench.profile import frame_name, markdown, top_frames

STACKS = """\
main (pyrocketmq/broker/app.py:10);put (pyrocketmq/broker/store/message_store.py:300);\
append (pyrocketmq/broker/store/mapped_file.py:122) 6
main (pyrocketmq/broker/app.py:10);put (pyrocketmq/broker/store/message_store.py:301) 2
main (pyrocketmq/broker/app.py:11);walk (x.py:1);walk (x.py:2) 2
not a line
"""


def test_frames_are_named_by_function_and_module() -> None:
    assert frame_name("append (pyrocketmq/broker/store/mapped_file.py:122)") == "append (mapped_file.py)"
    assert frame_name("<native>") == "<native>"


def test_inclusive_and_self_shares() -> None:
    total, rows = top_frames(STACKS, above=100.0)
    assert total == 10
    table = {name: (inc, own) for name, inc, own in rows}
    assert table["main (app.py)"] == (100.0, 0.0)
    assert "main (app.py)" not in [r[0] for r in top_frames(STACKS)[1]], "the entry chain is left out"
    assert table["put (message_store.py)"] == (80.0, 20.0)  # two lines of one function are one frame
    assert table["append (mapped_file.py)"] == (60.0, 60.0)
    assert table["walk (x.py)"] == (20.0, 20.0)  # counted once per stack although it recurses
    assert [r[0] for r in rows][:2] == ["main (app.py)", "put (message_store.py)"]
    assert "| `put (message_store.py)` | 80.0 | 20.0 |" in markdown(total, rows)


def test_no_samples() -> None:
    assert top_frames("") == (0, [])
