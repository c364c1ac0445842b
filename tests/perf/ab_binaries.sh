#!/bin/bash
# A/B of two portico binaries, alternating, bounded: ROUNDS rounds × 4 workloads × SECS seconds.
# Server pinned to CPU 0 (workers: 1), h2load and the limit server on CPU 1; loopback only.
# usage: tests/perf/ab_binaries.sh BASE_BIN NEW_BIN [ROUNDS=5] [SECS=4] [WORKLOADS="h1 h2c h2tls proxy"]
# Workloads (h2load on CPU 1): h1 = --h1 -c50 GET /plaintext (respond route); h1pipe = --h1 -c100
# -m16 (16 requests pipelined per connection, as compare.sh's h1pipe); h2c = -c50 -m16;
# h2tls = the same over TLS (tls: auto); h2static = h2c -c50 -m16 GET /hello.txt (13 bytes from the
# static root, the file issue 31 compares with h2o); proxy = --h1 -c50 through a proxy: route to the limit
# server. Prints one line per round, workload and binary: req/s and server CPU µs per request
# (utime+stime from /proc/PID/stat over the measured run). Odd rounds run A first, even rounds B.
# Needs: h2load (nghttp2-client), gcc, curl, bc, python3.
set -euo pipefail
A=$1 B=$2 rounds=${3:-5} secs=${4:-4} workloads=${5:-h1 h2c h2tls proxy}
shared=$(cd "$(dirname "$0")/../.." && pwd)/../shared/bench
tmp=$(mktemp -d)
export PORTICO_DATA_DIR=$tmp/data
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
read -r P T U < <(/usr/bin/python3 -c '
import socket
ss=[socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1",0))
print(*[s.getsockname()[1] for s in ss])')
gcc -O2 -o "$tmp/limit" "$shared/limit_server.c"
taskset -c 1 "$tmp/limit" "$U" >/dev/null 2>&1 & pids+=($!)
mkdir "$tmp/www" && printf 'Hello, World!' >"$tmp/www/hello.txt"
cat >"$tmp/c.yaml" <<YAML
workers: 1
listen: [127.0.0.1:$P, {address: 127.0.0.1:$T, tls: auto}]
vhosts:
  - root: $tmp/www
    routes:
      - path: /plaintext
        respond: {body: "Hello, World!", headers: {Content-Type: text/plain}}
      - path: /proxy
        proxy: {upstream: http://127.0.0.1:$U}
YAML
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
run() { # bin workload -> "reqs/s usPerReq"
  local bin=$1 w=$2 url args
  taskset -c 0 "$bin" serve --config "$tmp/c.yaml" --no-reload >"$tmp/s.log" 2>&1 & local sp=$!
  for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$P/plaintext" && break; sleep 0.1; done
  case $w in
    h1) args=(--h1 -c50 -m1); url=http://127.0.0.1:$P/plaintext;;
    h1pipe) args=(--h1 -c100 -m16); url=http://127.0.0.1:$P/plaintext;;
    h2c) args=(-c50 -m16); url=http://127.0.0.1:$P/plaintext;;
    h2tls) args=(-c50 -m16); url=https://127.0.0.1:$T/plaintext;;
    h2static) args=(-c50 -m16); url=http://127.0.0.1:$P/hello.txt;;
    proxy) args=(--h1 -c50 -m1); url=http://127.0.0.1:$P/proxy;;
  esac
  taskset -c 1 h2load -t1 "${args[@]}" -D 1 "$url" >/dev/null 2>&1 || true   # warm-up
  local c0; c0=$(cpu $sp)
  local out; out=$(taskset -c 1 h2load -t1 "${args[@]}" -D "$secs" "$url" 2>&1)
  local c1; c1=$(cpu $sp)
  kill $sp; wait $sp 2>/dev/null || true
  local done_; done_=$(echo "$out" | awk '/^requests:/{for(i=1;i<=NF;i++) if($(i+1)=="succeeded,") print $i}')
  local rps; rps=$(echo "$out" | awk '/^finished in/{gsub(",","",$4); print $4}')
  local tck; tck=$(getconf CLK_TCK)
  echo "$rps $(echo "scale=3; ($c1-$c0)*1000000/$tck/$done_" | bc)"
}
echo "round workload bin req/s us/req"
for r in $(seq "$rounds"); do
  for w in $workloads; do
    if ((r % 2)); then order="A B"; else order="B A"; fi
    for which in $order; do
      bin=$A; [ $which = B ] && bin=$B
      echo "$r $w $which $(run "$bin" "$w")"
    done
  done
done
