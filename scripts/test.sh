#!/usr/bin/env bash
# The whole test suite: installs what it needs, lints, checks the layering, runs every test.
# Java peers (Apache RocketMQ jars from Maven Central) are fetched and cached by the test setup.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
echo "== ruff"
.venv/bin/ruff check .
echo "== import-linter"
# import-linter walks a package's folder, so it checks an installed (non-editable) copy whose
# layout is the wheel's: pyrocketmq/broker/store/…, not the repository's top-level folders.
lintdir=$(mktemp -d)
trap 'rm -rf "$lintdir"' EXIT
.venv/bin/python -m pip install -q --no-deps --no-build-isolation --target "$lintdir" . >/dev/null
(cd "$lintdir" && PYTHONPATH="$lintdir" "$OLDPWD/.venv/bin/lint-imports" --no-cache --config "$OLDPWD/pyproject.toml")
echo "== mypy (strict: remoting, broker, client, namesrv)"
# pyrocketmq/<name> links to each top-level folder, so the checkout reads as the package it installs as.
.venv/bin/mypy --config-file pyproject.toml --cache-dir "$lintdir/.mypy_cache" \
  -p pyrocketmq.remoting -p pyrocketmq.broker -p pyrocketmq.client -p pyrocketmq.namesrv
echo "== pytest"
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@"
