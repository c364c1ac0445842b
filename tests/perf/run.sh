#!/usr/bin/env bash
# The benchmark suite of docs/benchmarks.md in one go (not run by ctest): builds a Release
# Portico, runs ../shared/bench/compare.sh with Portico as the candidate (server pinned to CPU 0,
# wrk to CPU 1; nginx, h2o and the limit server in the same run), then the idle-connection memory
# comparison. Loopback only; every load is bounded by compare.sh's duration.
# Usage: tests/perf/run.sh [SECONDS=5] [ROUNDS=3]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bench=${BENCH_DIR:-$here/../shared/bench}
cmake -S "$here" -B "$here/build-release" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTICO_BUILD_TESTS=OFF >/dev/null
cmake --build "$here/build-release" --target portico >/dev/null
export PORTICO_BIN=$here/build-release/app/portico
echo "# $(date -u +%F) $(nproc) CPUs, $(uname -r); portico $("$PORTICO_BIN" version | cut -d' ' -f2)"
# h2tls needs TLS (issue 3); until then the cleartext workloads only.
bash "$bench/compare.sh" -s "${1:-5}" -r "${2:-3}" -w h1,h1pipe,h1static,static1m -- "$here/tests/perf/compare-candidate.sh"
echo
bash "$here/tests/perf/idle_memory.sh" 8000
