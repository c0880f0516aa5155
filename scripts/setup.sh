#!/usr/bin/env bash
# Creates .venv (if missing or stale) and installs pyrocketmq into it.
#
#   scripts/setup.sh          what running pyrocketmq needs (the quickstart uses this)
#   scripts/setup.sh --test   that plus the test tools and peers: the [test] extra (PySpark, kopf,
#                             linters …) and Debian's prometheus (the test command uses this)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
case "${1:-}" in
  "") extras=""; kind=run ;;
  --test) extras="[test]"; kind=test ;;
  *) echo "usage: scripts/setup.sh [--test]" >&2; exit 2 ;;
esac
hash=$(cat pyproject.toml setup.py broker/store/_native.c remoting/_frames.c | sha1sum | cut -c1-12)  # the compiled part rebuilds when its source changes
stamp=.venv/.installed-$kind-$hash
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# A test install also serves the run install.
if [ ! -f "$stamp" ] && ! { [ "$kind" = run ] && [ -f ".venv/.installed-test-$hash" ]; }; then
  .venv/bin/python -m pip install -q --upgrade pip
  # -qq: errors only (setuptools' editable install prints an informational notice on every run)
  # The distribution is pyrocketmq-k8s; an install under the old name "pyrocketmq" (an unrelated
  # project's name on PyPI) would leave a second copy of the metadata behind.
  .venv/bin/python -m pip uninstall -qq -y pyrocketmq 2>/dev/null || true
  .venv/bin/python -m pip install -qq -e ".$extras"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
[ "$kind" = test ] || exit 0
# Prometheus and promtool for tests/observability: Debian's package (tests start their own server on
# loopback). Installing needs root and apt-get; otherwise say what is missing (the tests then skip,
# or fail with CI=true). The package enables a system service: it is stopped and disabled again.
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus >/dev/null
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
      systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
  else
    echo "setup: prometheus/promtool not found; install Debian's 'prometheus' package (apt-get install prometheus)" >&2
  fi
fi
