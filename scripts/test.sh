#!/usr/bin/env bash
# The whole test suite: installs what it needs, lints, checks the layering, runs every test.
# Java peers (Apache RocketMQ jars from Maven Central) are fetched and cached by the test setup.
#
# The tests run in three lanes at once: the node cluster's (tests/e2e), the control plane's
# (tests/k8s) and everything else in parallel pytest-xdist workers (most of those wait on sockets,
# not on the CPU). On a cold machine the longest step is compiling the Kubernetes binaries, and the
# CPU is what is short: the build starts first, beside only what waits on the network (the venv,
# Debian packages, the Maven jars) and the e2e lane's image builds. The worker lane starts when it is
# done, the e2e lane's tests once the worker lane is done, and the control plane's lane once the e2e
# lane is down to its node-fault modules (they mostly wait). The closing report lists the slowest
# tests of all lanes and one line of totals.
#
#   scripts/test.sh                  everything, as CI runs it
#   scripts/test.sh ARGS...          lint, then one plain pytest run with ARGS (a path, -k, ...)
#   PYROCKETMQ_TEST_REPORTS=DIR      keep each lane's JUnit XML report in DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
pids=()
kill_tree() {  # a background job and everything it started
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
cleanup() {
  for pid in "${pids[@]}"; do kill_tree "$pid"; done
  rm -rf "$out"
}
trap cleanup EXIT
prefix() { sed -u "s/^/[$1] /"; }

build=""
if [ "$#" -eq 0 ]; then
  # The Kubernetes binaries (standard library Python and Go only; a warm cache makes this a no-op).
  # A failed build is reported by the lanes that need it. Prometheus, which only the e2e lane's
  # metrics test runs, is built there once the cluster is up, beside the other lanes' tests.
  (python3 -m localkube.tools 2>&1 >/dev/null | prefix "k8s tools") &
  build=$!
  pids+=($build)
fi

bash scripts/setup.sh --test
echo "== ruff"
.venv/bin/ruff check .
echo "== import-linter"
# On the checkout: pyrocketmq/<name> links to each top-level folder, the layout the wheel has.
.venv/bin/lint-imports --no-cache pyproject.toml
lintdir="$out/lint"
mkdir -p "$lintdir"
echo "== mypy (strict: remoting, server, broker, client, namesrv, operator, spark)"
# pyrocketmq/<name> links to each top-level folder, so the checkout reads as the package it installs as.
.venv/bin/mypy --config-file pyproject.toml --cache-dir "$lintdir/.mypy_cache" \
  -p pyrocketmq.remoting -p pyrocketmq.server -p pyrocketmq.broker -p pyrocketmq.client -p pyrocketmq.namesrv \
  -p pyrocketmq.operator -p pyrocketmq.spark
echo "== mypy (the cluster harness and the benchmark, without strict's annotation rules)"
.venv/bin/mypy --config-file pyproject.toml --cache-dir "$lintdir/.mypy_cache" localkube bench

pytest=(.venv/bin/python -m pytest -p no:cacheprovider)
if [ "$#" -gt 0 ]; then
  echo "== pytest $*"
  exec "${pytest[@]}" -q --durations=25 "$@"
fi

echo "== pytest, three lanes: [e2e] the node cluster, [k8s] the control plane, the rest in workers"
t0=$SECONDS
reports="${PYROCKETMQ_TEST_REPORTS:-$out}"  # where the lanes' JUnit XML files go (kept when set)
mkdir -p "$reports"
rm -f "$reports/e2e.xml" "$reports/k8s.xml" "$reports/workers.xml"  # a lane that dies writes none
# The e2e lane builds its images and starts its cluster now; its tests wait for the worker lane
# (PYROCKETMQ_E2E_START_AFTER): beside it, on two cores, pods and Spark jobs starved into time-outs.
workers_done="$out/workers-done"
# Two workers there: the pods' tests mostly wait, each module in its own namespace; the modules that
# fault nodes run alone, last (tests/e2e/conftest.py).
faults_started="$out/e2e-faults-started"
(PYROCKETMQ_E2E_START_AFTER="$workers_done" PYROCKETMQ_E2E_FAULTS_STARTED="$faults_started" "${pytest[@]}" -n 2 --dist loadscope --no-loadscope-reorder \
  -q -rfE --junitxml="$reports/e2e.xml" tests/e2e 2>&1 | prefix e2e) &
lane_e2e=$!
pids+=($lane_e2e)
(.venv/bin/python -m tests.conformance.maven 2>&1 >/dev/null | prefix maven) || true  # the lane reports a failure
if [ -n "$build" ] && kill -0 "$build" 2>/dev/null; then
  echo "== waiting for the Kubernetes build before the other lanes ($((SECONDS - t0)) s)"
  wait "$build" || true  # the lanes report a failed build
  echo "== the build is done ($((SECONDS - t0)) s)"
fi
status=0
"${pytest[@]}" -q -rfE -n "${PYROCKETMQ_TEST_WORKERS:-4}" --dist loadgroup --junitxml="$reports/workers.xml" \
  tests/unit tests/integration tests/conformance tests/spark tests/fuzz tests/observability || status=1
touch "$workers_done"
echo "== workers done after $((SECONDS - t0)) s"
# The control plane's lane runs beside the e2e lane's node-fault modules: those come last, one at a
# time, and mostly wait (a frozen or cut-off node), leaving most of the CPU idle.
while [ ! -e "$faults_started" ] && kill -0 "$lane_e2e" 2>/dev/null; do sleep 2; done
echo "== [k8s] starts after $((SECONDS - t0)) s"
("${pytest[@]}" -q -rfE --junitxml="$reports/k8s.xml" tests/k8s 2>&1 | prefix k8s) &
lane_k8s=$!
pids+=($lane_k8s)
wait "$lane_k8s" || status=1
echo "== [k8s] done after $((SECONDS - t0)) s"
wait "$lane_e2e" || status=1
echo "== [e2e] done after $((SECONDS - t0)) s"
.venv/bin/python scripts/test_report.py --slowest 25 "$reports/workers.xml" "$reports/k8s.xml" "$reports/e2e.xml" || status=1
exit "$status"
