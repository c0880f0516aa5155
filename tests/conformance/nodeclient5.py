"""The official RocketMQ 5.x Node.js client (npm ``rocketmq-client-nodejs``) installed once into the
cache, and the command that runs ``node5/scenario.js`` with it.

Layout: ``<cache>/node5client-<version>/`` holds a copy of ``node5/package.json`` and its lock file and
the ``node_modules`` that ``npm ci`` installed from them (npm's download cache beside, in ``npm-cache``);
a ``.built`` marker, written last, holds their digest. The program itself stays in the repository and
finds the client through ``NODE_PATH``, so editing it reinstalls nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conformance import maven, polyglot5

VERSION = "1.0.8"
"""The client version node5/package.json asks for (its lock file pins every dependency)."""
SOURCES = Path(__file__).with_name("node5")
MANIFESTS = ("package.json", "package-lock.json")


def _root() -> Path:
    return maven.cache_root() / f"node5client-{VERSION}"


def _install(root: Path) -> None:
    npm = polyglot5.tool("npm")
    polyglot5.tool("node")
    shutil.rmtree(root / "node_modules", ignore_errors=True)
    for name in MANIFESTS:
        shutil.copyfile(SOURCES / name, root / name)
    # --ignore-scripts: nothing of the client needs an install script (protobufjs' only prints)
    cmd = [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--cache", str(root / "npm-cache")]
    polyglot5.step(cmd, what="npm install of rocketmq-client-nodejs", cwd=root, fetch=True)


def command() -> tuple[list[str], dict[str, str]]:
    """The scenario's command and the environment it needs, installing the client first if needed
    (PrerequisiteMissing: no node/npm, or the npm registry refused)."""
    stamp = polyglot5.digest(VERSION, *(SOURCES / name for name in MANIFESTS))
    root = polyglot5.cached_build(_root(), stamp, _install)
    node = polyglot5.tool("node")
    return [node, str(SOURCES / "scenario.js")], {"NODE_PATH": str(root / "node_modules")}


if __name__ == "__main__":  # install only: python -m tests.conformance.nodeclient5
    print(command())
