"""``python -m bench.put_path``: a child times real puts; bad arguments print usage."""

from __future__ import annotations

import pytest

from bench import put_path


def test_a_child_times_real_puts():
    per_put = put_path._child(messages=200, size=64)
    assert 0 < per_put < 0.05  # seconds of CPU per put: stored for real, not skipped


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--messages", "-1"], ["--size", "x"]])
def test_bad_arguments_print_usage(argv, capsys):
    with pytest.raises(SystemExit) as e:
        put_path.main(argv)
    assert e.value.code == 2
    assert "usage: python -m bench.put_path" in capsys.readouterr().err
