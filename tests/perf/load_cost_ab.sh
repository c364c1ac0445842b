#!/bin/bash
# The cost of a load-generator feature by time: `portico bench` run with two argument sets A and B
# in alternating rounds (A first in odd rounds, B first in even ones) against the HTTP/1.1 limit
# server (../shared/bench/limit_server.c) on CPU 0, the generator on CPU 1; prints each run's
# req/s, each round's B/A and the mean and median of them; and the same for the generator's CPU
# time per completed request (A's over B's, so above 1 means B is cheaper): CPU time does not
# advance while the hypervisor steals the core, so it moves less than req/s on a shared host. Loopback only; each run is bounded by
# -d (3 s) and `timeout`.
# usage: tests/perf/load_cost_ab.sh ROUNDS "A ARGS" "B ARGS" [BIN=build/app/portico]
#   BIN_B=PATH: run B with another binary (an A/B of two builds with the same args);
#   LIMIT=h2: the HTTP/2 limit server (tests/perf/h2_limit_server.c) instead, for --h2 runs.
#   URL in the args: write @/ for the limit server's origin, e.g.
#   tests/perf/load_cost_ab.sh 12 "-c16 -p16 -d3s @/" "-c16 -p16 -d3s @/ @/b"   # breakdown: 1 vs 2 kinds
#   tests/perf/load_cost_ab.sh 12 "-c16 -p16 -d3s --no-samples @/" "-c16 -p16 -d3s @/"  # drill-down sample
#   LIMIT=h2 BIN_B=new/portico tests/perf/load_cost_ab.sh 20 "-c16 --streams 16 -d3s @/" "-c16 --streams 16 -d3s @/" old/portico
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:?rounds} argsA=${2:?A args} argsB=${3:?B args}
BIN=$(realpath "${4:-$here/build/app/portico}")
BIN_B=$(realpath "${BIN_B:-$BIN}")
LIMIT=${LIMIT:-h1}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
export PORTICO_DATA_DIR=$tmp/data
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if [ "$LIMIT" = h2 ]; then
    gcc -O2 -o "$tmp/limit" "$here/tests/perf/h2_limit_server.c"
else
    gcc -O2 -o "$tmp/limit" "$here/../shared/bench/limit_server.c"
fi
taskset -c 0 "$tmp/limit" "$port" >/dev/null 2>&1 &
sleep 0.5
run() { # binary args -> "req/s cpu-ns-per-request"
    local args=${2//@\//http://127.0.0.1:$port/}
    # shellcheck disable=SC2086
    taskset -c 1 timeout 60 "$1" bench --no-save --json "$tmp/out.json" $args >/dev/null
    /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d["cpu"]
print(round(d["requestsPerSecond"]), round((c["userSeconds"]+c["systemSeconds"])*1e9/max(1,d["requests"]["completed"]+d["warmup"]["completed"])))' "$tmp/out.json"
}
ratios=() cpus=()
for ((i = 1; i <= rounds; i++)); do
    if ((i % 2)); then
        read -r a ac < <(run "$BIN" "$argsA"); read -r b bc < <(run "$BIN_B" "$argsB")
    else
        read -r b bc < <(run "$BIN_B" "$argsB"); read -r a ac < <(run "$BIN" "$argsA")
    fi
    r=$(/usr/bin/python3 -c "print(f'{$b / $a:.3f}')")
    c=$(/usr/bin/python3 -c "print(f'{$ac / $bc:.3f}')")
    ratios+=("$r") cpus+=("$c")
    echo "round $i: A $a req/s $ac ns/req, B $b req/s $bc ns/req; req/s B/A $r, CPU per request A/B $c"
done
/usr/bin/python3 - "${#ratios[@]}" "${ratios[@]}" "${cpus[@]}" <<'EOF'
import statistics, sys
n = int(sys.argv[1])
for name, v in (("req/s B/A", sys.argv[2:2 + n]), ("CPU per request A/B", sys.argv[2 + n:])):
    r = [float(x) for x in v]
    print(f"{name} over {len(r)} rounds: mean {statistics.mean(r):.3f}, median {statistics.median(r):.3f}, "
          f"min {min(r):.3f}, max {max(r):.3f}")
EOF
