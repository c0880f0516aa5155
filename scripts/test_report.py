"""The test command's closing report over every pytest run it made (JUnit XML files): the slowest
test phases across all of them and one closing line with the totals.

    python scripts/test_report.py --slowest 25 lane-a.xml lane-b.xml

A file that is missing or unreadable counts as a failure (its run died before writing it), so a
lane that crashed can never make the total look green. Exit status: 0 when nothing failed.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field


@dataclass
class Totals:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors: int = 0
    lost: list[str] = field(default_factory=list)  # files that could not be read
    times: list[tuple[float, str]] = field(default_factory=list)  # (seconds, test id)


def _test_id(case: ET.Element) -> str:
    cls = case.get("classname", "")
    path = cls.replace(".", "/") + ".py" if cls else case.get("file", "")
    return f"{path}::{case.get('name', '?')}"


def read(paths: list[str]) -> Totals:
    totals = Totals()
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as exc:
            totals.lost.append(f"{path}: {exc}")
            continue
        for case in root.iter("testcase"):
            outcome = {child.tag for child in case}
            if "failure" in outcome:
                totals.failed += 1
            elif "error" in outcome:
                totals.errors += 1
            elif "skipped" in outcome:
                totals.skipped += 1
            else:
                totals.passed += 1
            totals.times.append((float(case.get("time") or 0.0), _test_id(case)))
    return totals


def render(totals: Totals, slowest: int) -> list[str]:
    lines = [f"== {slowest} slowest tests (setup + call + teardown), all runs"]
    for seconds, test in sorted(totals.times, reverse=True)[:slowest]:
        lines.append(f"{seconds:9.2f}s {test}")
    for lost in totals.lost:
        lines.append(f"LOST (a run wrote no report): {lost}")
    failed = totals.failed + totals.errors + len(totals.lost)
    line = f"total: {totals.passed} passed, {failed} failed"
    if totals.skipped:
        line += f", {totals.skipped} skipped"
    lines.append(line)
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slowest", type=int, default=25, help="how many of the slowest tests to list")
    parser.add_argument("reports", nargs="+", help="JUnit XML files written by pytest --junitxml")
    args = parser.parse_args(argv)
    totals = read(args.reports)
    print("\n".join(render(totals, args.slowest)))
    return 1 if totals.failed or totals.errors or totals.lost else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
