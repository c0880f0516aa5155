#!/usr/bin/env bash
# Creates .venv (if missing or stale) and installs pyrocketmq with its test tools into it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
