#!/usr/bin/env bash
# Memory per idle keep-alive connection: RSS growth of each server with N connections that made
# one request each, divided by N. Servers: nginx, h2o (configs from ../shared/bench) and Portico,
# each with one worker, on 127.0.0.1 only. Usage: tests/perf/idle_memory.sh [N=8000]
set -euo pipefail
n=${1:-8000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bench=${BENCH_DIR:-$here/../shared/bench}
bin=${PORTICO_BIN:-$here/build/app/portico}
ulimit -n $((n + 1024))
tmp=$(mktemp -d); chmod 755 "$tmp"
export BENCH_WWW=$tmp/www
mkdir -p "$BENCH_WWW"; printf 'Hello, World!' >"$BENCH_WWW/hello.txt"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 2 -subj /CN=localhost 2>/dev/null
for c in nginx h2o; do
  sed "s|@WWW@|$BENCH_WWW|g; s|@CERT@|$tmp/cert.pem|g; s|@KEY@|$tmp/key.pem|g; s|@TMP@|$tmp|g" "$bench/$c.conf" >"$tmp/$c.conf"
done
sed -i "s/worker_connections 4096/worker_connections $((n + 100))/" "$tmp/nginx.conf"
sed -i "1i max-connections: $((n + 100))" "$tmp/h2o.conf"
cat >"$tmp/portico.yaml" <<YAML
workers: 1
listen: ["127.0.0.1:18080"]
vhosts:
  - root: $BENCH_WWW
YAML
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
nginx -c "$tmp/nginx.conf" >/dev/null 2>&1 & pids+=($!)
h2o -c "$tmp/h2o.conf" >"$tmp/h2o.log" 2>&1 & pids+=($!)
"$bin" serve --config "$tmp/portico.yaml" --no-reload >"$tmp/portico.log" 2>&1 & pids+=($!)
sleep 1.5
rss_tree() { local t=0 p; for p in $1 $(pgrep -P "$1"); do t=$((t + $(awk '/VmRSS/{print $2}' /proc/$p/status))); done; echo $t; }
printf '%-8s %10s %10s %12s\n' server rss0_kB rssN_kB bytes/conn
for entry in nginx:8081:0 h2o:8082:1 portico:18080:2; do
  IFS=: read -r name port idx <<<"$entry"
  pid=${pids[$idx]}
  curl -sf -o /dev/null "http://127.0.0.1:$port/hello.txt"
  r0=$(rss_tree "$pid")
  coproc CL { /usr/bin/python3 "$here/tests/perf/idle_clients.py" "$port" "$n"; }
  read -r line <&"${CL[0]}"
  sleep 1
  r1=$(rss_tree "$pid")
  exec {CL[1]}>&-; wait "$CL_PID" 2>/dev/null || true
  printf '%-8s %10d %10d %12.0f\n' "$name" "$r0" "$r1" "$(echo "($r1 - $r0) * 1024 / $n" | bc -l)"
done
