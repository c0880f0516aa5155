"""Importing images into the nodes' containerd: a runtime that does not answer a connection in time
(one unpacking at the smallest CPU share beside a busy machine) is asked again; other failures are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from localkube import images


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr(images, "require", lambda *commands: None)
    monkeypatch.setattr(images, "_archive", lambda name: tmp_path / f"{name}.tar")
    monkeypatch.setattr(images, "image_cache", lambda: tmp_path / "cache")
    made: list[list[str]] = []
    return made


def _fake_run(made: list[list[str]], failures: list[str]):
    def run(argv, *, timeout: float = 1800, cwd=None) -> str:
        made.append([str(a) for a in argv])
        if failures:
            raise images.ImageError(failures.pop(0))
        return ""
    return run


def test_a_runtime_that_did_not_answer_is_asked_again_with_a_long_connect_timeout(calls, monkeypatch):
    failures = [
        'ctr: failed to dial "/n1.sock": context deadline exceeded: timed out waiting for server handshake'
    ]
    monkeypatch.setattr(images, "_run", _fake_run(calls, failures))
    said: list[str] = []
    images.import_into_containerd(["img"], [Path("/nodes/n1/containerd/containerd.sock")], said.append)
    assert len(calls) == 2 and all("--connect-timeout" in argv and "120s" in argv for argv in calls)
    assert any("trying again" in m for m in said) and said[-1].startswith("imported img")


def test_other_failures_and_a_runtime_that_never_answers_fail_the_import(calls, monkeypatch):
    monkeypatch.setattr(images, "_run", _fake_run(calls, ["ctr: unpack: no space left on device"]))
    with pytest.raises(images.ImageError, match="no space"):
        images.import_into_containerd(["img"], [Path("/n1.sock")])
    assert len(calls) == 1
    calls.clear()
    monkeypatch.setattr(images, "_run", _fake_run(calls, ["failed to dial"] * images.IMPORT_ATTEMPTS))
    with pytest.raises(images.ImageError, match="failed to dial"):
        images.import_into_containerd(["img"], [Path("/n1.sock")])
    assert len(calls) == images.IMPORT_ATTEMPTS
