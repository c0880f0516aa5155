"""Coverage-guided fuzzing of one target with atheris (libFuzzer).

    python -m tests.fuzz.run TARGET [libFuzzer options and corpus folders]

``scripts/fuzz`` runs every target for a while on a copy of the committed corpus and saves what it
finds; CI runs each briefly (``tests/fuzz/test_fuzz.py``). A failure prints the input and leaves it
as ``crash-*`` where ``-artifact_prefix`` says.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import atheris

with atheris.instrument_imports(include=["pyrocketmq"]):  # coverage feedback from the servers' code only
    for _package in ("pyrocketmq.remoting", "pyrocketmq.broker", "pyrocketmq.namesrv"):
        for _info in pkgutil.walk_packages(importlib.import_module(_package).__path__, _package + "."):
            if not _info.name.endswith("__main__"):
                importlib.import_module(_info.name)
    from tests.fuzz.targets import TARGETS


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        print(f"usage: python -m tests.fuzz.run {{{','.join(TARGETS)}}} [libFuzzer options] [corpus folders]",
              file=sys.stderr)
        raise SystemExit(2)
    target = TARGETS[sys.argv[1]]
    target(b"")  # builds the target's server before the clock starts
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
