#!/usr/bin/env bash
# Starts a local name server + broker on loopback (data under ./.pyrocketmq), creates a topic,
# sends and reads a sample, and prints where everything is and how to stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pyrocketmq quickstart "$@"
