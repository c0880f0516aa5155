"""The official RocketMQ 5.x Go client (``github.com/apache/rocketmq-clients/golang/v5`` from the Go
module proxy), built into ``go5/``'s scenario program once, in the cache.

Layout: ``<cache>/go5client-<version>/{gomod,gocache,gopath}`` (the module and build caches, this
client's own) and ``scenario`` (the program), with a ``.built`` marker written last that holds the
digest of ``go5/``'s files: a change of the program rebuilds it, a warm run builds nothing. The module
download and the compile are separate steps, so a registry that refuses is told apart from a program
that does not compile.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.conformance import maven, polyglot5

VERSION = "v5.1.4"
"""The client version go5/go.mod requires (go.sum pins it and every dependency)."""
SOURCES = Path(__file__).with_name("go5")


def _root() -> Path:
    return maven.cache_root() / f"go5client-{VERSION}"


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(GOMODCACHE=str(root / "gomod"), GOCACHE=str(root / "gocache"), GOPATH=str(root / "gopath"),
               GOFLAGS="-mod=readonly -modcacherw -buildvcs=false", GOTOOLCHAIN="local", GOWORK="off",
               CGO_ENABLED="0", GOTELEMETRY="off")
    env.setdefault("GOPROXY", "https://proxy.golang.org,direct")
    return env


def _build(root: Path) -> None:
    go = polyglot5.tool("go", "/usr/local/go/bin/go")
    env = _env(root)
    # downloads only the modules the program's packages come from (go.sum checks each)
    polyglot5.step([go, "list", "-deps", "-f", "{{.ImportPath}}", "."], what="Go module download", env=env,
                   cwd=SOURCES, fetch=True)
    partial = root / "scenario.partial"
    polyglot5.step([go, "build", "-trimpath", "-p", "2", "-o", str(partial), "."], what="Go build", env=env,
                   cwd=SOURCES)
    partial.rename(root / "scenario")


def command() -> list[str]:
    """The scenario program's command, built first if needed (PrerequisiteMissing: no Go, or the module
    proxy refused)."""
    stamp = polyglot5.digest(VERSION, *sorted(p for p in SOURCES.iterdir() if p.is_file()))
    return [str(polyglot5.cached_build(_root(), stamp, _build) / "scenario")]


if __name__ == "__main__":  # build only: python -m tests.conformance.goclient5
    print(command()[0])
