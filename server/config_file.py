"""Small JSON config files of a server (the broker's ``topics.json``, ``consumerOffset.json`` …, the
users and ACLs of :mod:`.auth_metadata`) written atomically.

A save goes::

    write <name>.tmp, fsync  →  rename <name> to <name>.bak  →  rename <name>.tmp to <name>  →  fsync dir

so at every instant either ``<name>`` holds a complete document or (between the two renames) the
previous one is in ``<name>.bak``. A load reads ``<name>`` and falls back to ``<name>.bak`` when it is
missing or does not parse. Callers serialise saves of one file (one writer per file).

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "topics.json")
>>> save_json(p, {"a": 1}); load_json(p)
{'a': 1}
"""

from __future__ import annotations

import logging
import os
from typing import Any

import orjson

log = logging.getLogger("pyrocketmq.server.config_file")

BAK_SUFFIX = ".bak"
TMP_SUFFIX = ".tmp"


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str, data: bytes | str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new content, never a mix;
    a new file gets ``mode`` (0o600 for a file holding secrets)."""
    raw = data.encode() if isinstance(data, str) else data
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    tmp = path + TMP_SUFFIX
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(raw)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    if os.path.exists(path):
        os.replace(path, path + BAK_SUFFIX)
    os.replace(tmp, path)
    _fsync_dir(directory)


def read_with_backup(path: str) -> bytes | None:
    """Content of ``path``, else of ``path.bak``; None when neither exists."""
    for p in (path, path + BAK_SUFFIX):
        try:
            with open(p, "rb") as f:
                return f.read()
        except FileNotFoundError:
            continue
    return None


def save_json(path: str, doc: Any, mode: int = 0o644) -> None:
    """Serialise ``doc`` (anything orjson takes; non-str dict keys allowed) and write it atomically."""
    write_atomic(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS), mode)


def load_json(path: str) -> Any | None:
    """The document in ``path``, falling back to ``path.bak`` when the main file is missing or corrupt."""
    for p in (path, path + BAK_SUFFIX):
        try:
            with open(p, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            continue
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            log.warning("config file %s does not parse (%s); trying its backup", p, e)
    return None


# Names the broker's managers use.
load_json_file = load_json
write_json_file = save_json
