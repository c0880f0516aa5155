"""What the store asks of the machine: its memory, its disk's fill, the hour of day."""

from __future__ import annotations

import os
import shutil


def physical_memory() -> int:
    """Bytes of RAM (8 GiB when the system will not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 1024**3


def disk_usage_ratio(path: str, fallback: str) -> float:
    """Used / total of the filesystem holding ``path`` (``fallback`` until ``path`` exists)."""
    try:
        du = shutil.disk_usage(path if os.path.isdir(path) else fallback)
    except OSError:
        return 0.0
    return du.used / du.total if du.total else 0.0


def disk_used_bytes(path: str) -> int:
    """Bytes used on the filesystem holding ``path`` (0 when it cannot be read)."""
    try:
        return shutil.disk_usage(path).used
    except OSError:
        return 0


def is_clean_hour(delete_when: str, hour: int) -> bool:
    """``deleteWhen`` (``"04"`` or ``"04;16"``) names ``hour``.

    >>> is_clean_hour("04;16", 16), is_clean_hour("04", 5)
    (True, False)
    """
    return any(h.strip().isdigit() and int(h) == hour for h in delete_when.split(";"))
