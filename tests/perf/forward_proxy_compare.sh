#!/bin/bash
# Intercepted HTTPS through a forward proxy (issue 28), bounded: ROUNDS rounds (default 2), each
# run SECS seconds (default 8), one proxy running at a time, everything on 127.0.0.1 with free
# ports picked by binding port 0.
#   Origin (CPU 1, with the client): Portico serving a 1 KiB file over TLS (`tls: auto`, its own CA).
#   Proxies (CPU 0), capture on in both, the origin's CA trusted for upstream verification:
#     portico: `portico proxy -w 1 --record FILE --upstream-cacert ORIGIN_CA` (intercepts);
#     mitmdump 8.1: `--set ssl_verify_upstream_trusted_ca=ORIGIN_CA -w FILE` (intercepts).
#     Also Portico's reverse proxy (a TLS listener, `proxy: https://ORIGIN`, capture on, 1 worker)
#     for the issue's CPU bound (intercepted ≤ 1.3× reverse-proxied CPU per request).
#   Client (CPU 1): portico bench -c CONN (keep-alive HTTP/1.1, closed model) with
#     `--proxy http://127.0.0.1:P --cacert PROXY_CA` for the forward proxies, direct otherwise.
#     The latency runs use the open model at a rate every proxy sustains (-R RATE) for p50/p99.
#   CPU µs/req: the proxy's utime+stime (/proc/PID/stat, process and children) over the run /
#   requests completed.
# usage: tests/perf/forward_proxy_compare.sh [ROUNDS=2] [SECS=8] [CONN=4] [RATE=300]
# Needs: mitmdump (apt-get install mitmproxy), jq.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-2}
secs=${2:-8}
conn=${3:-4}
rate=${4:-300}
bin=${PORTICO_BIN:-$here/build/app/portico}
command -v mitmdump > /dev/null || { echo "needs mitmdump (apt-get install mitmproxy)" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
freeport() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ticks() {
  local t=0
  for p in $1 $(pgrep -P "$1" || true); do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat" 2> /dev/null || echo 0))); done
  echo $t
}
waitport() { for _ in $(seq 100); do (exec 3<> /dev/tcp/127.0.0.1/$1) 2> /dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }
hz=$(getconf CLK_TCK)

mkdir -p "$tmp/site"
head -c 1024 /dev/urandom | base64 -w 0 | head -c 1024 > "$tmp/site/1k.txt"
origin=$(freeport)
printf 'listen: [{address: "127.0.0.1:%s", tls: auto}]\nworkers: 1\nvhosts:\n  - root: %s/site\n' "$origin" "$tmp" > "$tmp/origin.yaml"
PORTICO_DATA_DIR=$tmp/origin-data taskset -c 1 "$bin" serve --config "$tmp/origin.yaml" --no-reload -q > "$tmp/origin.log" 2>&1 &
pids+=($!)
waitport "$origin"
originCa=$tmp/origin-data/ca/ca.crt
url=https://127.0.0.1:$origin/1k.txt

start_portico() {
  port=$(freeport)
  PORTICO_DATA_DIR=$tmp/proxy-data taskset -c 0 "$bin" proxy --port "$port" -w 1 -q --record "$tmp/portico-$1.db" \
    --upstream-cacert "$originCa" > "$tmp/portico.log" 2>&1 &
  pid=$!
  waitport "$port"
  proxyCa=$tmp/proxy-data/ca/ca.crt
}
start_mitm() {
  port=$(freeport)
  taskset -c 0 mitmdump --listen-host 127.0.0.1 -p "$port" -q --set confdir="$tmp/mitm" \
    --set ssl_verify_upstream_trusted_ca="$originCa" -w "$tmp/mitm-$1.flows" > "$tmp/mitm.log" 2>&1 &
  pid=$!
  waitport "$port"
  proxyCa=$tmp/mitm/mitmproxy-ca-cert.pem
}
start_reverse() {
  port=$(freeport)
  printf 'listen: [{address: "127.0.0.1:%s", tls: auto}]\nworkers: 1\ncapture: {enabled: true, store: %s/reverse-%s.db}\nvhosts:\n  - routes:\n      - path: /*\n        proxy: https://127.0.0.1:%s\n' \
    "$port" "$tmp" "$1" "$origin" > "$tmp/reverse.yaml"
  PORTICO_DATA_DIR=$tmp/proxy-data taskset -c 0 "$bin" serve --config "$tmp/reverse.yaml" --no-reload -q > "$tmp/reverse.log" 2>&1 &
  pid=$!
  waitport "$port"
  proxyCa=$tmp/proxy-data/ca/ca.crt
}

# One closed-model run and one open-model run; prints "req/s cpu_us p50_ms p99_ms".
measure() { # kind: forward | reverse | direct
  local kind=$1 target=$url args=()
  case $kind in
  forward) args=(--proxy "http://127.0.0.1:$port" --cacert "$proxyCa") ;;
  reverse) target=https://127.0.0.1:$port/1k.txt; args=(--cacert "$proxyCa") ;;
  direct) args=(--cacert "$originCa") ;;
  esac
  # Warm: the leaf is minted, connections open.
  taskset -c 1 "$bin" bench --no-save -c "$conn" -n 200 "${args[@]}" "$target" > /dev/null
  local t0=0 t1=0
  [ "$kind" != direct ] && t0=$(ticks "$pid")
  taskset -c 1 "$bin" bench --no-save -c "$conn" -d "${secs}s" "${args[@]}" --json "$tmp/run.json" "$target" > /dev/null
  [ "$kind" != direct ] && t1=$(ticks "$pid")
  local done rps cpu
  done=$(jq '.requests.completed' "$tmp/run.json")
  rps=$(jq '.requests.completed / .measuredSeconds' "$tmp/run.json")
  cpu=$(echo "($t1 - $t0) * 1000000 / $hz / $done" | bc -l)
  taskset -c 1 "$bin" bench --no-save -c "$conn" -R "$rate" -d "${secs}s" --warmup 1s "${args[@]}" --json "$tmp/lat.json" "$target" > /dev/null
  local p50 p99
  p50=$(jq '.latency.percentiles["50"] / 1e6' "$tmp/lat.json")
  p99=$(jq '.latency.percentiles["99"] / 1e6' "$tmp/lat.json")
  printf '%.0f %.1f %s %s\n' "$rps" "$cpu" "$p50" "$p99"
}

printf '%-6s %-8s %10s %12s %9s %9s\n' round path 'req/s' 'cpu_us/req' 'p50_ms' 'p99_ms'
for r in $(seq "$rounds"); do
  read -r rps cpu p50 p99 < <(measure direct)
  printf '%-6s %-8s %10s %12s %9s %9s\n' "$r" direct "$rps" - "$p50" "$p99"
  order=(portico mitmdump reverse)
  [ $((r % 2)) -eq 0 ] && order=(mitmdump portico reverse)
  for which in "${order[@]}"; do
    case $which in
    portico) start_portico "$r"; kind=forward ;;
    mitmdump) start_mitm "$r"; kind=forward ;;
    reverse) start_reverse "$r"; kind=reverse ;;
    esac
    read -r rps cpu p50 p99 < <(measure "$kind")
    printf '%-6s %-8s %10s %12s %9s %9s\n' "$r" "$which" "$rps" "$cpu" "$p50" "$p99"
    kill -INT "$pid"
    wait "$pid" 2> /dev/null || true
  done
done
