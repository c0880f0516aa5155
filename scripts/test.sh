#!/usr/bin/env bash
# The whole test suite: installs what it needs, lints, checks the layering, runs every test.
# Java peers (Apache RocketMQ jars from Maven Central) are fetched and cached by the test setup.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== ruff"
.venv/bin/ruff check .
echo "== import-linter"
.venv/bin/lint-imports --no-cache
echo "== pytest"
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
