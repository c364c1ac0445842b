#!/bin/bash
# Latency percentiles of `portico bench` against wrk's on the same target (issue 7: "percentiles
# agree with wrk2's or h2load's within 10%"), bounded: ROUNDS rounds (default 3) of SECS-second runs
# (default 5), the two tools alternating, everything on 127.0.0.1 (a free port picked by binding 0).
#   Target: Portico, one worker pinned to CPU 0, two `respond` routes: /delay (latency: DELAY,
#   default 2ms: the server's answer time is known) and /plain (no delay: the latency is the
#   round trip and queueing).
#   Tools on CPU 1, closed model, 1 thread: wrk -t1 -cC -dSECS --latency and
#   portico bench -t1 -cC -dSECS (C = 10 for /delay, 50 for /plain). wrk2 is not in Debian; wrk's
#   --latency percentiles are the closed-model reference, h2load reports no percentiles.
# Prints p50/p90/p99 of both and bench/wrk per percentile.
# usage: tests/perf/percentile_compare.sh [ROUNDS=3] [SECS=5] [DELAY=2ms]
# Env: PORTICO_BIN (default build-release/app/portico, else build/app/portico). Needs wrk jq bc.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
secs=${2:-5}
delay=${3:-2ms}
bin=${PORTICO_BIN:-$here/build-release/app/portico}
[ -x "$bin" ] || bin=$here/build/app/portico
tmp=$(mktemp -d)
export PORTICO_DATA_DIR=$tmp/data
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$tmp/portico.yaml" <<YAML
workers: 1
listen: [127.0.0.1:$port]
vhosts:
  - routes:
      - path: /delay
        respond: {body: "Hello, World!", latency: $delay}
      - path: /plain
        respond: {body: "Hello, World!"}
YAML
taskset -c 0 "$bin" serve --config "$tmp/portico.yaml" --no-reload >"$tmp/portico.log" 2>&1 &
pid=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$port/plain" && break; sleep 0.1; done

ms() { awk '{v=$1; if (v ~ /us$/) {sub("us","",v); v/=1000} else if (v ~ /ms$/) sub("ms","",v); else if (v ~ /s$/) {sub("s","",v); v*=1000}; print v}'; }
printf '%-6s %-5s %-6s %9s %9s %9s\n' path round tool p50_ms p90_ms p99_ms
for path in delay plain; do
  c=10; [ "$path" = plain ] && c=50
  url="http://127.0.0.1:$port/$path"
  for round in $(seq "$rounds"); do
    order="wrk bench"; [ $((round % 2)) = 0 ] && order="bench wrk"
    for tool in $order; do
      if [ "$tool" = wrk ]; then
        out=$(taskset -c 1 wrk -t1 -c"$c" -d"${secs}s" --latency "$url")
        p50=$(echo "$out" | awk '$1=="50%"{print $2}' | ms)
        p90=$(echo "$out" | awk '$1=="90%"{print $2}' | ms)
        p99=$(echo "$out" | awk '$1=="99%"{print $2}' | ms)
      else
        taskset -c 1 "$bin" bench "$url" -t1 -c"$c" -d"${secs}s" --no-save --json "$tmp/b.json" >/dev/null
        p50=$(jq '.latency.percentiles["50"] / 1e6' "$tmp/b.json")
        p90=$(jq '.latency.percentiles["90"] / 1e6' "$tmp/b.json")
        p99=$(jq '.latency.percentiles["99"] / 1e6' "$tmp/b.json")
      fi
      printf '%-6s %-5s %-6s %9.3f %9.3f %9.3f\n' "$path" "$round" "$tool" "$p50" "$p90" "$p99" | tee -a "$tmp/res"
    done
  done
done
echo
echo "bench / wrk, medians of the rounds:"
for path in delay plain; do
  line="$path:"
  for col in 4 5 6; do
    med() { awk -v p="$path" -v t="$1" -v c="$col" '$1==p&&$3==t{print $c}' "$tmp/res" | sort -g |
      awk '{a[NR]=$1} END{print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
    w=$(med wrk); b=$(med bench)
    line="$line $(printf 'p%s %.3f/%.3f ms = %.2f' "$( [ $col = 4 ] && echo 50 || { [ $col = 5 ] && echo 90 || echo 99; })" "$b" "$w" "$(echo "$b / $w" | bc -l)")"
  done
  echo "$line"
done
