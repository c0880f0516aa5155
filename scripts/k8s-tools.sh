#!/usr/bin/env bash
# Builds (once) and caches kube-apiserver, kube-controller-manager, kubectl, etcd and helm from the Go
# module proxy for the k8s tests; prints the bin directory. The k8s test fixture does the same on first
# use, so this is only needed to warm the cache ahead of time (e.g. a separate CI step).
# Cache: ${PYROCKETMQ_CACHE:-~/.cache/pyrocketmq}/k8s/<version>/bin. `--force` rebuilds; `--prune`
# then drops the Go module/build caches (~5 GB), keeping only the binaries (for CI caches).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" -m localkube.tools "$@"
