"""Loading a compiled module of the project (``broker/store/_native.c``, ``remoting/_frames.c``).

Each is optional: the install builds it when a C compiler and Python's headers are there, and the
code that uses it has a pure-Python path that gives the same results. ``PYROCKETMQ_PURE_PYTHON=1``
picks the pure-Python paths even when the modules are built (to compare, or to rule them out).
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType


def load_compiled(name: str, instead: str) -> ModuleType | None:
    """The compiled module ``name`` (a full dotted name); None when pure Python is asked for, or when
    it is not built (logged as a warning that says what runs ``instead``)."""
    if os.environ.get("PYROCKETMQ_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:  # by name: ``from . import _x`` would import the package's __init__ first
        return importlib.import_module(name)
    except ImportError:
        logging.getLogger(name.rpartition(".")[0]).warning(
            "the compiled module %s is not built: %s run in pure Python (reinstall with a C compiler and "
            "Python's headers to build it)", name, instead)
        return None
