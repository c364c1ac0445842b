#!/bin/bash
# h2c (HTTP/2 with prior knowledge, RFC 9113 §3.3) against h2o (issue 31): GET /hello.txt (13 bytes,
# a static file) from h2o 2.2 and Portico, one worker/thread each, both pinned to CPU 0 (run one
# at a time), 50 connections × 16 streams from CPU 1, measured with h2load and with
# `portico bench --h2` (whose client costs a third of h2load's CPU per request against the h2
# limit server, so the server, not the client, sets the pace), tools and server order alternating,
# ROUNDS rounds of SECS seconds (default 3, 5) after a 1 s warm-up of the same load. Prints req/s
# and each server's CPU µs per request (utime+stime from /proc/PID/stat over the measured run).
# compare.sh has no h2c workload; this is its h2c twin.
# usage: tests/perf/h2c_compare.sh [ROUNDS=3] [SECS=5]; PORTICO_BIN picks the binary.
# Needs: h2o h2load curl bc (Debian packages). Everything binds 127.0.0.1.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
secs=${2:-5}
bin=${PORTICO_BIN:-$here/build-release/app/portico}
[ -x "$bin" ] || bin=$here/build/app/portico
for tool in h2o h2load curl bc; do
  command -v $tool >/dev/null || { echo "h2c_compare.sh: $tool is not installed" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$tmp"' EXIT
export PORTICO_DATA_DIR=$tmp/data
mkdir -p "$tmp/www"
printf 'Hello, World!' >"$tmp/www/hello.txt"
read -r HP PP < <(/usr/bin/python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
cat >"$tmp/h2o.conf" <<YAML
num-threads: 1
user: root
listen:
  host: 127.0.0.1
  port: $HP
hosts:
  default:
    paths:
      /:
        file.dir: $tmp/www
YAML
cat >"$tmp/portico.yaml" <<YAML
workers: 1
listen: [127.0.0.1:$PP]
server_header: true
capture: {enabled: false}
vhosts:
  - root: $tmp/www
YAML
taskset -c 0 h2o -c "$tmp/h2o.conf" >"$tmp/h2o.log" 2>&1 &
taskset -c 0 "$bin" serve --config "$tmp/portico.yaml" --no-reload >"$tmp/portico.log" 2>&1 &
for port in "$HP" "$PP"; do
  for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$port/hello.txt" && break; sleep 0.1; done
  [ "$(curl -s --http2-prior-knowledge "http://127.0.0.1:$port/hello.txt")" = "Hello, World!" ] ||
    { echo "port $port does not serve h2c" >&2; exit 1; }
done
pid_on() { ss -ltnpH "sport = :$1" | sed -E 's/.*pid=([0-9]+).*/\1/' | head -1; }
declare -A pid=([h2o]=$(pid_on "$HP") [portico]=$(pid_on "$PP"))
declare -A port=([h2o]=$HP [portico]=$PP)
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
load() { # tool url seconds -> requests completed
  if [ "$1" = h2load ]; then
    taskset -c 1 h2load -t1 -c50 -m16 -D "$3" "$2" | awk '/^requests:/ {print $8}'
  else
    taskset -c 1 "$bin" bench --no-save --h2 --streams 16 -t1 -c50 -d"${3}s" "$2" | awk '/requests in/ {print $1}'
  fi
}
declare -A rate cpu
printf '%-6s %-8s %-7s %10s %10s %6s\n' round server tool 'req/s' 'cpu us/req' 'cpu%'
for r in $(seq "$rounds"); do
  order="h2o portico"; [ $((r % 2)) -eq 0 ] && order="portico h2o"
  for tool in h2load bench; do
    for srv in $order; do
      url="http://127.0.0.1:${port[$srv]}/hello.txt"
      load $tool "$url" 1 >/dev/null # warm-up
      t0=$(ticks "${pid[$srv]}")
      n=$(load $tool "$url" "$secs")
      t1=$(ticks "${pid[$srv]}")
      rate[$r,$srv,$tool]=$((n / secs))
      cpu[$r,$srv,$tool]=$(echo "($t1 - $t0) * 1000000 / $hz / $n" | bc -l)
      printf '%-6s %-8s %-7s %10d %10.3f %6d\n' "$r" "$srv" "$tool" "${rate[$r,$srv,$tool]}" \
        "${cpu[$r,$srv,$tool]}" $(((t1 - t0) * 100 / hz / secs))
    done
  done
done
echo "Portico / h2o per round (req/s ratio, CPU per request ratio):"
for tool in h2load bench; do
  line="  $tool:"
  for r in $(seq "$rounds"); do
    line+=" $(printf '%.2f' "$(echo "${rate[$r,portico,$tool]} / ${rate[$r,h2o,$tool]}" | bc -l)")"
    line+="/$(printf '%.2f' "$(echo "${cpu[$r,portico,$tool]} / ${cpu[$r,h2o,$tool]}" | bc -l)")"
  done
  echo "$line"
done
