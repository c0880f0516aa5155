"""``pyrocketmq consume --push``: argument combinations refused with usage and exit 2."""

from __future__ import annotations

import io

import pytest

from pyrocketmq.client import cli


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["consume", "-n", "x:1", "-t", "T", "-g", "g", "--orderly"], "need --push"),
        (["consume", "-n", "x:1", "-t", "T", "-g", "g", "--broadcast"], "need --push"),
        (
            ["consume", "-n", "x:1", "-t", "T", "-g", "g", "--push", "--no-commit"],
            "cannot be combined with --push",
        ),
    ],
)
def test_push_mode_argument_errors(argv: list[str], message: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(argv, stdout=out, stderr=err, stdin=io.StringIO("")) == 2
    assert "usage: pyrocketmq consume" in err.getvalue() and message in err.getvalue()
    assert "Traceback" not in err.getvalue()
