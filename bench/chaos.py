"""``python -m bench chaos``: a long seeded fault schedule on the node cluster (tests/e2e/chaos.py).

It runs ``tests/e2e/test_chaos.py`` with the schedule's length, seed and kinds, on the cluster of
``scripts/k8s-up --nodes 3`` (started, images built and the operator installed as the e2e tests do
it, when none runs), and writes the run's JSON and table. As root, like the e2e tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.chaos import KINDS

REPO = Path(__file__).resolve().parents[1]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench chaos", description=__doc__.splitlines()[0])
    p.add_argument("--faults", type=int, default=30, help="how many faults, one at a time (default 30)")
    p.add_argument("--seed", type=int, default=1, help="the schedule's seed (default 1)")
    p.add_argument(
        "--kinds", default=",".join(KINDS), help=f"comma-separated, from {', '.join(KINDS)} (default all)"
    )
    p.add_argument(
        "--no-java", action="store_true", help="without the Apache RocketMQ 4.9 Java producer beside ours"
    )
    p.add_argument(
        "--json", type=Path, default=Path("chaos.json"), help="where to write the run (default chaos.json)"
    )
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if args.faults < 1 or not kinds or unknown:
        build_parser().print_usage(sys.stderr)
        print(f"python -m bench chaos: --faults must be at least 1 and --kinds from {', '.join(KINDS)}"
              + (f" (unknown: {', '.join(unknown)})" if unknown else ""), file=sys.stderr)
        return 2
    env = {**os.environ, "PYROCKETMQ_CHAOS_FAULTS": str(args.faults), "PYROCKETMQ_CHAOS_SEED": str(args.seed),
           "PYROCKETMQ_CHAOS_KINDS": ",".join(kinds), "PYROCKETMQ_CHAOS_JSON": str(args.json.resolve()),
           "PYROCKETMQ_CHAOS_JAVA": "0" if args.no_java else "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s",
                           "tests/e2e/test_chaos.py"], cwd=REPO, env=env)  # fmt: skip
    if args.json.exists():
        print(json.loads(args.json.read_text())["table"])
    return done.returncode
