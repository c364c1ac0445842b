#!/bin/bash
# Instructions per request of the load generator (`portico bench`), counted by valgrind's
# callgrind: the client-side twin of ir_per_request.sh, for A/B of changes to the generator on a
# noisy host. The target is a limit server from C (../shared/bench/limit_server.c for HTTP/1.1,
# tests/perf/h2_limit_server.c for h2c: canned answers, so the generator's work is what varies).
# usage: [KINDS=N] tests/perf/load_ir_per_request.sh BIN [WORKLOAD=h1] [N1=20000] [N2=120000]
# KINDS=N (default 1) sends N request kinds (URLs /plaintext, /kind2, ...; equal weights), which
# turns on the per-kind breakdown (Result::byRequest). EXTRA="ARGS" adds generator arguments (e.g.
# EXTRA=--no-samples); KEEP=DIR keeps the N2 run's callgrind profile as DIR/callgrind.out.
# Workloads: h1 = -t1 -c10; h1pipe = -t1 -c10 -p16; h2c = --h2 --streams 16 -t1 -c10.
# The generator runs under callgrind twice, for N1 and N2 requests; (Ir(N2) - Ir(N1)) / (N2 - N1)
# leaves start-up out. Prints "WORKLOAD BIN Ir/request". Bounded: each run at most 300 s.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$(realpath "$1") workload=${2:-h1} n1=${3:-20000} n2=${4:-120000} kinds=${KINDS:-1}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
export PORTICO_DATA_DIR=$tmp/data
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
case $workload in
h1) gcc -O2 -o "$tmp/limit" "$here/../shared/bench/limit_server.c"; args=(-c10) ;;
h1pipe) gcc -O2 -o "$tmp/limit" "$here/../shared/bench/limit_server.c"; args=(-c10 -p16) ;;
h2c) gcc -O2 -o "$tmp/limit" "$here/tests/perf/h2_limit_server.c"; args=(--h2 --streams 16 -c10) ;;
*) echo "unknown workload $workload" >&2; exit 2 ;;
esac
urls=("http://127.0.0.1:$port/plaintext")
for ((k = 2; k <= kinds; k++)); do urls+=("http://127.0.0.1:$port/kind$k"); done
"$tmp/limit" "$port" >/dev/null 2>&1 &
sleep 0.5
total() { # requests -> total Ir of one generator run
    timeout 300 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$BIN" bench --no-save -t1 \
        "${args[@]}" ${EXTRA:-} -n "$1" --json "$tmp/r.json" "${urls[@]}" >"$tmp/bench.log" 2>&1 ||
        { cat "$tmp/bench.log" >&2; exit 1; }
    /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); q=r["requests"]
sys.exit(0 if q["completed"] == int(sys.argv[2]) and q["failed"] == 0 else 1)' "$tmp/r.json" "$1" ||
        { echo "the generator did not complete $1 requests" >&2; exit 1; }
    awk '/^summary:/ {print $2}' "$tmp/cg.out"
}
a=$(total "$n1")
b=$(total "$n2")
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$tmp/cg.out" "$KEEP/callgrind.out"
echo "$workload kinds=$kinds $1 $(( (b - a) / (n2 - n1) ))"
