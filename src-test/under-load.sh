#!/usr/bin/env bash
# Runs the given src-test tests RUNS times in a row while another process keeps every core busy
# (one `yes` per core, started here and stopped on exit), and stops at the first failure.
#   bash src-test/under-load.sh 20 'ClusterFailoverTest,ClusterPartitionTest'
# Needs the project installed once (mvn -B -q install -DskipTests); runs offline.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:?usage: under-load.sh RUNS TESTS}
tests=${2:?usage: under-load.sh RUNS TESTS}
burners=()
stop() { for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop EXIT
for _ in $(seq "$(nproc)"); do
  yes >/dev/null &
  burners+=($!)
done
log=$(mktemp -d)/under-load
# Compiled once (under the same load); each run is then the tests alone.
if ! mvn -B -o -q -pl src-test test-compile >"$log-compile.log" 2>&1; then
  echo "test-compile FAILED: $log-compile.log"
  tail -n 20 "$log-compile.log"
  exit 1
fi
for i in $(seq "$runs"); do
  start=$(date +%s)
  if mvn -B -o -pl src-test surefire:test -Dtest="$tests" -Dsurefire.failIfNoSpecifiedTests=false \
    >"$log-$i.log" 2>&1; then
    echo "run $i/$runs passed in $(($(date +%s) - start)) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  else
    echo "run $i/$runs FAILED after $(($(date +%s) - start)) s: $log-$i.log"
    grep -E "Tests run:|FAIL|expected" "$log-$i.log" | tail -n 20
    exit 1
  fi
done
echo "$runs passed, 0 failed"
