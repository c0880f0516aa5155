"""Java ``.properties`` text (what GET_BROKER_CONFIG answers and UPDATE_BROKER_CONFIG carries): the
subset RocketMQ writes — ``key=value`` (or ``:``, or a blank) lines, ``#``/``!`` comments, a trailing
backslash continuing a line, and ``\\\\``, ``\\n``, ``\\r``, ``\\t``, ``\\=``, ``\\:`` escapes."""

from __future__ import annotations

import re

_SEP = re.compile(r"(?<!\\)(?:\s*[=:]\s*|\s+)")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f"}


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def parse_properties(text: str) -> dict[str, str]:
    """``"a=1\\nb: two\\n# c"`` → ``{"a": "1", "b": "two"}`` (later keys win)."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = (pending + raw.lstrip()) if pending else raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        m = _SEP.search(line)
        key, value = (line[: m.start()], line[m.end():]) if m else (line, "")
        out[_unescape(key)] = _unescape(value.rstrip())
    if pending:
        m = _SEP.search(pending)
        key, value = (pending[: m.start()], pending[m.end():]) if m else (pending, "")
        out[_unescape(key)] = _unescape(value)
    return out


def format_properties(values: dict[str, str]) -> bytes:
    """``key=value`` lines that Java's ``Properties.load`` (and :func:`parse_properties`) read back
    as ``values``."""
    def esc(text: str, key: bool) -> str:
        text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        if key:
            return text.replace(" ", "\\ ").replace("=", "\\=").replace(":", "\\:")
        stripped = text.lstrip(" ")
        return "\\ " * (len(text) - len(stripped)) + stripped

    return "".join(f"{esc(k, True)}={esc(v, False)}\n" for k, v in values.items()).encode()
