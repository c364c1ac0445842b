#!/bin/bash
# The load generator against the yardsticks (issue 7), bounded: ROUNDS rounds (default 3) of 5 s
# runs, tools alternating, everything on loopback.
#   HTTP/1.1: wrk -t1 -c100 vs portico bench -t1 -c100, both against the limit server
#             (../shared/bench/limit_server.c, the physical limit: whatever is faster is the tool).
#   HTTP/2:   h2load -t1 -c10 -m10 vs portico bench --h2 --streams 10 -t1 -c10, both against
#             tests/perf/h2_limit_server.c (the same kind of limit for h2c with prior knowledge:
#             frame headers only, canned answers; Portico's own h2c listener was the target
#             until 2026-12-02, and at ~400k req/s it set the pace, not the clients).
# Servers pinned to CPU 0, generators to CPU 1. Prints req/s, the ratios, and the target server's CPU
# share during each run. PORTICO_BIN picks the binary (default build-release, else build).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
bin=${PORTICO_BIN:-$here/build-release/app/portico}
[ -x "$bin" ] || bin=$here/build/app/portico
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
gcc -O2 -o "$tmp/limit" "$here/../shared/bench/limit_server.c"
gcc -O2 -o "$tmp/h2limit" "$here/tests/perf/h2_limit_server.c"
taskset -c 0 "$tmp/limit" 18180 >/dev/null 2>&1 &
taskset -c 0 "$tmp/h2limit" 18181 >/dev/null 2>&1 &
sleep 1
# Both targets must answer what the tools ask, or the rates below count errors.
[ "$(curl -s http://127.0.0.1:18180/plaintext)" = "Hello, World!" ] || { echo "limit server not answering" >&2; exit 1; }
[ "$(curl -s --http2-prior-knowledge http://127.0.0.1:18181/plaintext)" = "Hello, World!" ] ||
  { echo "h2 limit server not answering" >&2; exit 1; }
export PORTICO_DATA_DIR=$tmp/data
limit_pid=$(jobs -p | sed -n 1p) h2limit_pid=$(jobs -p | sed -n 2p)
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# run PID CMD...: runs CMD (a 5 s load) with its output in $tmp/out, and sets `busy` to the share
# of one core the target server PID used meanwhile (near 100 %: the server set the pace, not the tool).
run() {
  local pid=$1 t0 t1 s0 s1
  shift
  t0=$(ticks "$pid") s0=$(date +%s%N)
  "$@" >"$tmp/out"
  t1=$(ticks "$pid") s1=$(date +%s%N)
  busy=$(echo "($t1 - $t0) * 100 * 1000000000 / $hz / ($s1 - $s0)" | bc)
}
printf '%-6s %12s %12s %6s %9s   %12s %12s %6s %9s\n' round wrk bench ratio 'server%' h2load 'bench --h2' ratio \
  'server%'
for r in $(seq "$rounds"); do
  run "$limit_pid" taskset -c 1 wrk -t1 -c100 -d5s http://127.0.0.1:18180/plaintext
  w=$(awk '/Requests\/sec/ {print $2}' "$tmp/out") bw=$busy
  run "$limit_pid" taskset -c 1 "$bin" bench -t1 -c100 -d5s --no-save http://127.0.0.1:18180/plaintext
  b=$(awk '/Requests\/sec/ {print $2}' "$tmp/out") bb=$busy
  run "$h2limit_pid" taskset -c 1 h2load -t1 -c10 -m10 -D5 http://127.0.0.1:18181/plaintext
  h=$(awk '/finished in/ {print $4}' "$tmp/out") bh=$busy
  run "$h2limit_pid" taskset -c 1 "$bin" bench --h2 --streams 10 -t1 -c10 -d5s --no-save http://127.0.0.1:18181/plaintext
  b2=$(awk '/Requests\/sec/ {print $2}' "$tmp/out") bb2=$busy
  printf '%-6s %12.0f %12.0f %6.2f %9s   %12.0f %12.0f %6.2f %9s\n' "$r" "$w" "$b" "$(echo "$b / $w" | bc -l)" \
    "$bw/$bb" "$h" "$b2" "$(echo "$b2 / $h" | bc -l)" "$bh/$bb2"
done
echo "server%: the target server's CPU during the first tool's run / the second's, in % of one core"
