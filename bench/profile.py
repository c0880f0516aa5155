"""``python -m bench --profile DIR``: sample our broker with py-spy while each scenario runs.

For every scenario on our broker, py-spy records the broker process (all threads, 200 Hz) from the
scenario's start until its end and writes ``DIR/<scenario>-<mode>.collapsed``: the collapsed stacks
(``frame;frame;frame count`` lines) that flame-graph tools draw (speedscope, inferno, flamegraph.pl),
and ``DIR/<scenario>-<mode>.md``: the frames by share of samples, inclusive and self, that
``bench/RESULTS.md`` quotes (:func:`top_frames`).
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

RATE_HZ = 200
_LOCATION = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")


def frame_name(frame: str) -> str:
    """``func (path/to/module.py:123)`` → ``func (module.py)``: one name per function, any line."""
    m = _LOCATION.match(frame)
    if m is None:
        return frame
    return f"{m['func']} ({m['file'].rsplit('/', 1)[-1]})"


def top_frames(
    collapsed: str, limit: int = 25, above: float = 80.0
) -> tuple[int, list[tuple[str, float, float]]]:
    """(samples, [(frame, inclusive %, self %)]) of py-spy's collapsed output (``a;b;c N`` per line),
    by inclusive share; a function counted once per stack however often it recurses. Frames in
    more than ``above`` % of the samples (the entry chain: ``main``, the event loop, ``data_received``)
    are left out unless they have self time."""
    total = 0
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    for line in collapsed.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [frame_name(f) for f in stack.split(";")]
        for name in set(frames):
            inclusive[name] += n
        own[frames[-1]] += n
    if total == 0:
        return 0, []
    rows = [
        (name, 100 * n / total, 100 * own[name] / total)
        for name, n in inclusive.most_common()
        if 100 * n / total <= above or 100 * own[name] / total >= 1.0
    ]
    return total, rows[:limit]


def markdown(total: int, rows: list[tuple[str, float, float]]) -> str:
    lines = [f"{total} samples", "", "| frame | inclusive % | self % |", "|---|---|---|"]
    lines += [f"| `{name}` | {inc:.1f} | {own:.1f} |" for name, inc, own in rows]
    return "\n".join(lines)


def py_spy() -> str | None:
    """The py-spy executable: on PATH, or next to this interpreter (the project's virtualenv)."""
    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if beside.is_file() else None)


class Recorder:
    """py-spy on one process until :meth:`stop` (the caller checked :func:`py_spy` first)."""

    def __init__(self, pid: int, out_dir: Path, stem: str) -> None:
        exe = py_spy()
        if exe is None:
            raise RuntimeError(
                "--profile needs py-spy (pip install py-spy; scripts/setup.sh --test installs it)"
            )
        out_dir.mkdir(parents=True, exist_ok=True)
        self.raw = out_dir / f"{stem}.collapsed"
        self.summary = out_dir / f"{stem}.md"
        self._proc = subprocess.Popen(
            [exe, "record", "--nonblocking", "-p", str(pid), "-r", str(RATE_HZ), "-f", "raw",
             "-o", str(self.raw)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def stop(self) -> str:
        """Stop sampling (py-spy writes its file on SIGINT); returns the top-frames table, also
        written next to the stacks."""
        proc = self._proc
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        text = (
            markdown(*top_frames(self.raw.read_text()))
            if self.raw.is_file()
            else "no samples (py-spy failed)"
        )
        self.summary.write_text(text + "\n")
        return text
