"""Java ``.properties`` text, read by Java's rules: the broker's and the name server's config files,
what GET_BROKER_CONFIG answers and what UPDATE_BROKER_CONFIG carries. ``key=value``, ``key: value``
or ``key value`` lines, ``#``/``!`` comments, a trailing backslash continuing a line, and the
``\\\\``, ``\\n``, ``\\r``, ``\\t``, ``\\f``, ``\\uXXXX`` escapes (any other escaped
character stands for itself: ``\\=``, ``\\:``, ``\\ ``). Values lose trailing blanks.

>>> parse_properties("# c\\na = 1\\nb: two\\nlong=x\\\\\\n  y\\nc\\\\u0041 three")
{'a': '1', 'b': 'two', 'long': 'xy', 'cA': 'three'}
"""

from __future__ import annotations

import re

_SEP = re.compile(r"(?<!\\)(?:\s*[=:]\s*|\s+)")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f"}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")


class ConfigError(ValueError):
    """A setting has a value the server cannot use (or its file cannot be read); the message names
    the key or the file."""


def _unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        return chr(int(code[1:], 16)) if len(code) == 5 else _ESCAPES.get(code, code)

    return _ESCAPE.sub(one, text)


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


def read_properties(path: str) -> dict[str, str]:
    """The properties file at ``path`` (UTF-8, as RocketMQ's configs are written)."""
    with open(path, encoding="utf-8") as f:
        return parse_properties(f.read())


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
