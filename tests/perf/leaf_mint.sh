#!/bin/bash
# The worker's cost of a forward proxy's first CONNECT to a new name (leaf_mint.cpp), against the
# build's libportico_core.a (BUILD=build by default; build it first). Bounded: N names (default 100).
# usage: tests/perf/leaf_mint.sh [N=100]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$here/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -std=c++20 -O2 -I"$here/core/include" -I"$here/core/src" -I"$build/core/include" \
  "$here/tests/perf/leaf_mint.cpp" "$build/core/libportico_core.a" -lssl -lcrypto -lpthread -o "$tmp/leaf_mint"
taskset -c 0 "$tmp/leaf_mint" "$tmp/data" "${1:-100}"
