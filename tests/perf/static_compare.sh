#!/bin/bash
# h1static (issue 2) with the fastest client at hand: GET /hello.txt (13 bytes, a static
# file) from h2o 2.2 and Portico, one worker each pinned to CPU 0, 100 keep-alive connections from
# CPU 1, measured with wrk and with `portico bench` (1.2–1.5× wrk's rate against the limit server:
# docs/benchmarks.md), tools and servers alternating, ROUNDS rounds of SECS seconds (default 3, 5).
# Prints req/s, the server's CPU µs per request (utime+stime from /proc/PID/stat over the run) and
# its CPU share; a server near 100 % set the pace, one well below it was waiting for the client.
# compare.sh's h1static runs only wrk, which tops out near 80k req/s here: below what 1.5× h2o needs.
# The limit server (../shared/bench/limit_server.c: a canned response to anything, no parsing, no
# file) runs beside as the physical bound: no server spends less CPU per request in the same run.
# usage: tests/perf/static_compare.sh [ROUNDS=3] [SECS=5]; PORTICO_BIN picks the binary.
# Needs: h2o wrk curl bc (Debian packages). Everything binds 127.0.0.1.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
secs=${2:-5}
bin=${PORTICO_BIN:-$here/build-release/app/portico}
[ -x "$bin" ] || bin=$here/build/app/portico
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$tmp"' EXIT
export PORTICO_DATA_DIR=$tmp/data
mkdir -p "$tmp/www"
printf 'Hello, World!' >"$tmp/www/hello.txt"
read -r HP PP LP < <(/usr/bin/python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
# h2o: the shared anchor config, cleartext listener only (no TLS needed here).
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
gcc -O2 -o "$tmp/limit" "$here/../shared/bench/limit_server.c"
taskset -c 0 "$tmp/limit" "$LP" >/dev/null 2>&1 &
taskset -c 0 h2o -c "$tmp/h2o.conf" >"$tmp/h2o.log" 2>&1 &
taskset -c 0 "$bin" serve --config "$tmp/portico.yaml" --no-reload >"$tmp/portico.log" 2>&1 &
for port in "$HP" "$PP" "$LP"; do
  for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$port/hello.txt" && break; sleep 0.1; done
  [ "$(curl -s "http://127.0.0.1:$port/hello.txt")" = "Hello, World!" ] || { echo "port $port not serving" >&2; exit 1; }
done
# The process that owns each listening socket (h2o forks a helper; its server is the listener).
pid_on() { ss -ltnpH "sport = :$1" | sed -E 's/.*pid=([0-9]+).*/\1/' | head -1; }
declare -A pid=([h2o]=$(pid_on "$HP") [portico]=$(pid_on "$PP") [limit]=$(pid_on "$LP"))
declare -A port=([h2o]=$HP [portico]=$PP [limit]=$LP)
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
declare -A rate
printf '%-6s %-8s %-6s %10s %10s %6s\n' round server tool 'req/s' 'cpu us/req' 'cpu%'
for r in $(seq "$rounds"); do
  order="limit h2o portico"; [ $((r % 2)) -eq 0 ] && order="portico h2o limit"
  for tool in wrk bench; do
    for srv in $order; do
      url="http://127.0.0.1:${port[$srv]}/hello.txt"
      t0=$(ticks "${pid[$srv]}")
      if [ $tool = wrk ]; then
        n=$(taskset -c 1 wrk -t1 -c100 -d"${secs}s" "$url" | awk '/requests in/ {print $1}')
      else
        n=$(taskset -c 1 "$bin" bench -t1 -c100 -d"${secs}s" --no-save "$url" | awk '/requests in/ {print $1}')
      fi
      t1=$(ticks "${pid[$srv]}")
      rps=$((n / secs))
      rate[$r,$srv,$tool]=$rps
      printf '%-6s %-8s %-6s %10d %10.2f %6d\n' "$r" "$srv" "$tool" "$rps" \
        "$(echo "($t1 - $t0) * 1000000 / $hz / $n" | bc -l)" $(((t1 - t0) * 100 / hz / secs))
    done
  done
done
for other in h2o limit; do
  echo "Portico / $other req/s per round:"
  for tool in wrk bench; do
    line="  $tool:"
    for r in $(seq "$rounds"); do
      line+=" $(printf '%.2f' "$(echo "${rate[$r,portico,$tool]} / ${rate[$r,$other,$tool]}" | bc -l)")"
    done
    echo "$line"
  done
done
