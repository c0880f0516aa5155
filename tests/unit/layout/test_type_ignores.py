"""Every ``type: ignore`` in the strictly checked packages names its error code and says why
(on the same line after the code, or in a comment line just above)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
IGNORE = re.compile(r"#\s*type:\s*ignore(\[[\w,-]+\])?(.*)$")


def test_every_type_ignore_has_a_code_and_a_reason():
    bad = []
    for top in ("remoting", "server", "broker", "client", "namesrv", "pyrocketmq"):
        for path in sorted((ROOT / top).rglob("*.py")):
            lines = path.read_text().splitlines()
            for i, line in enumerate(lines):
                m = IGNORE.search(line)
                if not m:
                    continue
                reason_here = m.group(2).strip().startswith("#") and len(m.group(2).strip()) > 2
                reason_above = i > 0 and lines[i - 1].strip().startswith("#") and "ignore" in lines[i - 1]
                if not m.group(1) or not (reason_here or reason_above):
                    bad.append(f"{path.relative_to(ROOT)}:{i + 1}: {line.strip()}")
    assert not bad, "type: ignore without a code and a reason:\n" + "\n".join(bad)
