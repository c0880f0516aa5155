"""The official RocketMQ 5.x Rust client (crates.io ``rocketmq``, apache/rocketmq-clients' ``rust/``),
built into ``rust5/``'s scenario program once, in the cache.

Layout: ``<cache>/rust5client-<version>/target`` (cargo's target directory) and ``scenario`` (the
program), with a ``.built`` marker written last that holds the digest of ``rust5/``'s files: a change
of the program rebuilds it (incrementally), a warm run builds nothing. Crates are downloaded by
``cargo fetch`` into cargo's own cache (``~/.cargo``), a step apart from the offline compile, so a
registry that refuses is told apart from a program that does not compile.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.conformance import maven, polyglot5

VERSION = "5.0.0"
"""The client version rust5/Cargo.toml asks for (Cargo.lock pins every dependency)."""
SOURCES = Path(__file__).with_name("rust5")
CARGO_FALLBACK = str(Path.home() / ".cargo" / "bin" / "cargo")


def _root() -> Path:
    return maven.cache_root() / f"rust5client-{VERSION}"


def _build(root: Path) -> None:
    cargo = polyglot5.tool("cargo", CARGO_FALLBACK)
    manifest = str(SOURCES / "Cargo.toml")
    env = dict(os.environ, CARGO_TARGET_DIR=str(root / "target"), CARGO_TERM_COLOR="never")
    polyglot5.step([cargo, "fetch", "--locked", "--manifest-path", manifest], what="cargo fetch of rocketmq",
                   env=env, fetch=True)
    polyglot5.step([cargo, "build", "--locked", "--offline", "-j", "2", "--manifest-path", manifest],
                   what="cargo build", env=env, timeout=1800)
    partial = root / "scenario.partial"
    shutil.copyfile(root / "target" / "debug" / "scenario", partial)
    partial.chmod(0o755)
    partial.rename(root / "scenario")


def command() -> list[str]:
    """The scenario program's command, built first if needed (PrerequisiteMissing: no cargo, or crates.io
    refused)."""
    files = [SOURCES / "Cargo.toml", SOURCES / "Cargo.lock", *sorted((SOURCES / "src").glob("*.rs"))]
    stamp = polyglot5.digest(VERSION, *files)
    return [str(polyglot5.cached_build(_root(), stamp, _build) / "scenario")]


if __name__ == "__main__":  # build only: python -m tests.conformance.rustclient5
    print(command()[0])
