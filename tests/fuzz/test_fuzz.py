"""The fuzz targets in CI: the committed corpus replays clean, and each target gets a short
coverage-guided run (atheris) from it. ``scripts/fuzz`` runs them for longer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.prereq import missing_prerequisite

from .seeds import CORPUS, acl_requests, broker_requests, namesrv_requests
from .targets import TARGETS, _servers, acl_codes, request_from

ROOT = Path(__file__).resolve().parents[2]
SECONDS = int(os.environ.get("PYROCKETMQ_FUZZ_SECONDS", "12"))


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_corpus_replays_clean(target):
    files = sorted((CORPUS / target).iterdir())
    assert files, f"no corpus for {target}: run python -m tests.fuzz.seeds"
    for f in files:
        TARGETS[target](f.read_bytes())


@pytest.mark.parametrize(("target", "requests"), [("broker", broker_requests), ("namesrv", namesrv_requests),
                                                   ("acl", acl_requests)])
def test_seeds_read_back_as_the_requests_they_were_written_from(target, requests):
    TARGETS[target](b"")
    codes = acl_codes() if target == "acl" else _servers[target].codes
    from .seeds import as_input

    for code, ext, body in requests():
        cmd = request_from(as_input(int(code), ext, body, codes), codes)
        assert (cmd.code, cmd.ext_fields, cmd.body or None) == (
            int(code),
            {k: str(v) for k, v in ext.items()},
            body,
        )


def _atheris() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_short_coverage_guided_run_finds_nothing(target, tmp_path):
    if not _atheris():
        missing_prerequisite("fuzz", "atheris is not installed (scripts/setup.sh --test installs it)")
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS / target, corpus)
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.run", target, f"-max_total_time={SECONDS}", "-print_final_stats=1",
         f"-artifact_prefix={tmp_path}/", str(corpus)],
        cwd=ROOT, capture_output=True, text=True, timeout=SECONDS + 120,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # the target's store: the run ends without its atexit
    )
    runs = [line for line in proc.stderr.splitlines() if line.startswith("stat::number_of_executed_units")]
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert runs and int(runs[0].split()[-1]) > 1000, proc.stderr[-2000:]
