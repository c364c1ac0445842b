#!/bin/bash
# Instructions per request of the server's user-space code, counted by valgrind's callgrind: a
# measure that does not move with the machine's load, for A/B of small changes on a noisy host
# (timings there vary ±10 % between rounds; this varies < 0.3 %). Kernel time is not counted.
# usage: tests/perf/ir_per_request.sh BIN [WORKLOAD=h1pipe] [N1=20000] [N2=120000]
# Workloads: h1pipe = h2load --h1 -c10 -m16 GET /plaintext (a respond route); h2c = h2load -c10
# -m16 (prior knowledge); h2tls = the same over TLS (tls: auto); proxy = h2load --h1 -c10 -m1
# through a proxy: route to ../shared/bench/limit_server.c. The server (workers: 1, 127.0.0.1, a free port) runs under callgrind
# twice, for N1 and for N2 requests; (Ir(N2) - Ir(N1)) / (N2 - N1) leaves start-up and shutdown
# out. Prints "WORKLOAD BIN Ir/request". Bounded: each run at most 300 s. Needs valgrind, h2load, curl.
# RULES=N adds N request-stage rules that match no request of the workload (`path:/nomatchI
# method:GET`, each setting a header): the rule engine's cost when nothing matches (issue 29).
set -euo pipefail
BIN=$(realpath "$1") workload=${2:-h1pipe} n1=${3:-20000} n2=${4:-120000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PORTICO_DATA_DIR=$tmp/data
read -r port tport uport < <(/usr/bin/python3 -c '
import socket
ss=[socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1",0))
print(*[s.getsockname()[1] for s in ss])')
cat >"$tmp/c.yaml" <<YAML
workers: 1
listen: [127.0.0.1:$port, {address: 127.0.0.1:$tport, tls: auto}]
vhosts:
  - routes:
      - path: /plaintext
        respond: {body: "Hello, World!", headers: {Content-Type: text/plain}}
      - path: /proxy
        proxy: {upstream: http://127.0.0.1:$uport}
YAML
if [ "${RULES:-0}" -gt 0 ]; then
    echo "rules:" >>"$tmp/c.yaml"
    for i in $(seq "$RULES"); do
        printf '  - match: "path:/nomatch%s method:GET"\n    actions: [{set_header: {X-Rule: "%s"}}]\n' "$i" "$i" >>"$tmp/c.yaml"
    done
fi
url=http://127.0.0.1:$port/plaintext
case $workload in
h1pipe) proto=(--h1 -c10 -m16) ;;
h2c) proto=(-c10 -m16) ;;
h2tls) proto=(-c10 -m16) url=https://127.0.0.1:$tport/plaintext ;;
proxy)
    proto=(--h1 -c10 -m1) url=http://127.0.0.1:$port/proxy
    here=$(cd "$(dirname "$0")/../.." && pwd)
    gcc -O2 -o "$tmp/limit" "$here/../shared/bench/limit_server.c"
    "$tmp/limit" "$uport" >/dev/null 2>&1 &
    limit=$!
    trap 'kill $limit 2>/dev/null; rm -rf "$tmp"' EXIT
    ;;
*) echo "unknown workload $workload" >&2; exit 2 ;;
esac
total() { # requests -> total Ir of one server run
    timeout 300 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$BIN" serve --config "$tmp/c.yaml" \
        >"$tmp/server.log" 2>&1 &
    local pid=$!
    for _ in $(seq 150); do curl -s -o /dev/null "http://127.0.0.1:$port/plaintext" && break; sleep 0.2; done
    timeout 240 h2load "${proto[@]}" -n "$1" "$url" | grep -q "$1 succeeded" ||
        { echo "h2load did not complete $1 requests" >&2; kill "$pid"; exit 1; }
    kill -INT "$pid"
    wait "$pid" || true
    awk '/^summary:/ {print $2}' "$tmp/cg.out"
}
a=$(total "$n1")
b=$(total "$n2")
echo "$workload $1 $(( (b - a) / (n2 - n1) ))"
