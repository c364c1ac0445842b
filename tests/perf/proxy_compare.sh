#!/bin/bash
# Reverse proxy against nginx (issue 5), bounded: ROUNDS rounds (default 3), each run SECS seconds
# (default 5), Portico and nginx alternating (odd rounds Portico first, even rounds nginx first),
# one proxy running at a time, everything on 127.0.0.1 with free ports picked by binding port 0.
#   Proxies (pinned to CPU 0): Portico, `workers: 1`, capture off, routes `/plaintext` →
#     `proxy: {upstream: http://127.0.0.1:U}` and `/bench.Echo/*` → `grpc: h2c://127.0.0.1:G`;
#     nginx 1 worker (master + 1 worker), `proxy_pass` to `upstream {keepalive 64;}` with
#     `proxy_http_version 1.1; proxy_set_header Connection "";`, and `grpc_pass` as in
#     ../shared/bench/nginx-grpc.conf (keepalive 256), access log off.
#   Upstreams (pinned to CPU 1, with every load generator): the limit server
#     (../shared/bench/limit_server.c, HTTP/1.1) on U, the Go gRPC echo (../shared/bench/grpc_echo.go,
#     /bench.Echo/Echo returns the request) on G.
#   Per round and proxy:
#     http:   wrk -t1 -c50 -d SECS --latency GET /plaintext          -> req/s, p50/p99, proxy CPU µs/req
#     httpb:  portico bench -c50 -d SECS (closed model, the same load) -> req/s, proxy CPU µs/req
#             (a lighter client: with wrk, CPU 1 saturates before a fast proxy does)
#     grpc:   h2load -t1 -c10 -m10 -D SECS -d grpc_req.bin (unary Echo, 10-byte frame)
#                                                                    -> calls/s, proxy CPU µs/call
#     http latency: portico bench -R 5000 -c10 -d SECS --warmup 1s  (open model) -> p50, p99
#     grpc latency: portico bench --h2 -c10 -R 2000 -d SECS --warmup 1s, POST grpc_req.bin -> p50, p99
#   and per round the same four directly against the upstreams (no proxy; for wrk/h2load that puts
#   server and client on CPU 1 together, a reference only). Added latency = proxy minus direct,
#   per round. CPU µs/req is the proxy's utime+stime (process and children, /proc/PID/stat) over the
#   run / requests completed; cpu0%/cpu1% are the cores' busy share during the run (/proc/stat).
#   Before the first round each path is checked once: `Hello, World!` through both proxies, and
#   `grpc-status: 0` with the echoed bytes via nghttp, direct and through both proxies.
# usage: tests/perf/proxy_compare.sh [ROUNDS=3] [SECS=5]
# Env: PORTICO_BIN (default build-release/app/portico, else build/app/portico), NGINX (default
#   /usr/sbin/nginx), GRPC_ECHO (a built grpc_echo; else built here offline from Debian's
#   golang-go + golang-google-grpc-dev with GO111MODULE=off GOPROXY=off).
# Needs: nginx wrk h2load nghttp (nghttp2-client) gcc jq bc python3.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
secs=${2:-5}
bin=${PORTICO_BIN:-$here/build-release/app/portico}
[ -x "$bin" ] || bin=$here/build/app/portico
nginx=${NGINX:-/usr/sbin/nginx}
shared=$here/../shared/bench
req=$shared/grpc_req.bin
tmp=$(mktemp -d); chmod 755 "$tmp"   # nginx workers run as nobody
export PORTICO_DATA_DIR=$tmp/data
ups=() proxy_pid=""
cleanup() {
  if [ -n "$proxy_pid" ]; then kill "$proxy_pid" 2>/dev/null || true; fi
  for p in "${ups[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null; rm -rf "$tmp"
}
trap cleanup EXIT
ulimit -n 4096

# Five free loopback ports: bind port 0 five times at once, then release them.
read -r U G P NH NG < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(5)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')

gcc -O2 -o "$tmp/limit" "$shared/limit_server.c"
echo_bin=${GRPC_ECHO:-}
if [ -z "$echo_bin" ]; then
  mkdir -p "$tmp/go/src/grpcecho"; cp "$shared/grpc_echo.go" "$tmp/go/src/grpcecho/main.go"
  (cd "$tmp/go" && GO111MODULE=off GOPROXY=off GOFLAGS= GOPATH=$tmp/go:/usr/share/gocode GOCACHE=$tmp/go/cache \
    go build -o "$tmp/grpc_echo" grpcecho)
  echo_bin=$tmp/grpc_echo
fi

taskset -c 1 "$tmp/limit" "$U" >/dev/null 2>&1 & ups+=($!)
taskset -c 1 "$echo_bin" "$G" >/dev/null 2>&1 & ups+=($!)

cat >"$tmp/portico.yaml" <<YAML
workers: 1
listen: [127.0.0.1:$P]
vhosts:
  - routes:
      - path: /plaintext
        proxy: {upstream: http://127.0.0.1:$U}
      - path: /bench.Echo/*
        grpc: h2c://127.0.0.1:$G
YAML
# nginx: the shared gRPC config (scratch copy: @TMP@, ports), plus the HTTP proxy server.
grep -q '^worker_processes 1;' "$shared/nginx-grpc.conf"
sed -e "s|@TMP@|$tmp|g" -e "s|127.0.0.1:50061|127.0.0.1:$G|" -e "s|127.0.0.1:18446|127.0.0.1:$NG|" \
  "$shared/nginx-grpc.conf" | sed '$d' >"$tmp/nginx.conf"
cat >>"$tmp/nginx.conf" <<NGINX
  client_body_temp_path $tmp/client_body; proxy_temp_path $tmp/proxy_temp;
  fastcgi_temp_path $tmp/fastcgi; uwsgi_temp_path $tmp/uwsgi; scgi_temp_path $tmp/scgi;
  upstream u { server 127.0.0.1:$U; keepalive 64; keepalive_requests 100000000; }
  server {
    listen 127.0.0.1:$NH;
    location / { proxy_pass http://u; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
NGINX
tail -n 1 "$shared/nginx-grpc.conf" | grep -qx '}'   # the sed '$d' above removed the http block's end
grep -q "listen 127.0.0.1:$NG http2;" "$tmp/nginx.conf"

http_port() { case $1 in portico) echo "$P";; nginx) echo "$NH";; direct) echo "$U";; esac; }
grpc_port() { case $1 in portico) echo "$P";; nginx) echo "$NG";; direct) echo "$G";; esac; }
start_proxy() {
  case $1 in
    portico) taskset -c 0 "$bin" serve --config "$tmp/portico.yaml" --no-reload >"$tmp/portico.log" 2>&1 & proxy_pid=$!;;
    nginx) taskset -c 0 "$nginx" -p "$tmp" -c "$tmp/nginx.conf" >"$tmp/nginx.out" 2>&1 & proxy_pid=$!;;
  esac
  for _ in $(seq 50); do
    curl -sf -o /dev/null "http://127.0.0.1:$(http_port "$1")/plaintext" && return 0; sleep 0.1
  done
  echo "$1 is not answering on $(http_port "$1")" >&2; cat "$tmp/portico.log" "$tmp/nginx.out" "$tmp/error.log" 2>/dev/null >&2; exit 1
}
stop_proxy() { kill "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true; proxy_pid=""; sleep 0.3; }

tick=$(getconf CLK_TCK)
tree_cpu() { # utime+stime ticks of a process and its children (nginx: master + worker)
  local t=0 p
  for p in $1 $(pgrep -P "$1" || true); do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
  echo $t
}
cores() { awk '$1=="cpu0"||$1=="cpu1"{b=$2+$3+$4+$7+$8+$9; t=b+$5+$6; printf "%s %s ", b, t}' /proc/stat; }
busy() { # "b0 t0 b1 t1" before, after -> "cpu0% cpu1%"
  echo "$1 $2" | awk '{printf "%.0f %.0f\n", 100*($5-$1)/($6-$2), 100*($7-$3)/($8-$4)}'
}
ms() { awk '{v=$1; if (v ~ /us$/) {sub("us","",v); v/=1000} else if (v ~ /ms$/) sub("ms","",v); else if (v ~ /s$/) {sub("s","",v); v*=1000}; print v}'; }
res=$tmp/results   # lines: round server metric value
put() { echo "$round $1 $2 $3" >>"$res"; }

run_wrk() { # server
  local c0 k0 k1 c1 out n rate
  c0=$( [ "$1" = direct ] && echo 0 || tree_cpu "$proxy_pid"); k0=$(cores)
  out=$(taskset -c 1 wrk -t1 -c50 -d"${secs}s" --latency "http://127.0.0.1:$(http_port "$1")/plaintext" 2>&1)
  k1=$(cores); c1=$( [ "$1" = direct ] && echo 0 || tree_cpu "$proxy_pid")
  n=$(echo "$out" | awk '/requests in/{print $1}'); rate=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then echo "$1 wrk: $(grep 'Non-2xx\|Socket errors' <<<"$out")" >&2; fi
  put "$1" http_rps "$rate"
  put "$1" http_p50_ms "$(echo "$out" | awk '$1=="50%"{print $2}' | ms)"
  put "$1" http_p99_ms "$(echo "$out" | awk '$1=="99%"{print $2}' | ms)"
  put "$1" http_cpu_us "$(echo "($c1-$c0)*1000000/$tick/$n" | bc -l)"
  read -r b0 b1 < <(busy "$k0" "$k1"); put "$1" http_cpu0 "$b0"; put "$1" http_cpu1 "$b1"
}
check_bench() { # JSON label: says so when a `portico bench` run had requests failed or not 200
  local bad
  bad=$(jq '.requests.failed + .requests.cancelled + ([.statuses | to_entries[] | select(.key != "200") | .value] | add // 0)' "$1")
  [ "$bad" = 0 ] || echo "$2: $bad requests failed or not 200" >&2
}
run_bench() { # server: the same closed-model load with `portico bench` (50 connections) as client
  local c0 k0 k1 c1 j=$tmp/closed.json n
  c0=$( [ "$1" = direct ] && echo 0 || tree_cpu "$proxy_pid"); k0=$(cores)
  taskset -c 1 "$bin" bench "http://127.0.0.1:$(http_port "$1")/plaintext" -c 50 -d "${secs}s" \
    --no-save --json "$j" >/dev/null 2>&1
  k1=$(cores); c1=$( [ "$1" = direct ] && echo 0 || tree_cpu "$proxy_pid")
  n=$(jq .requests.completed "$j")
  check_bench "$j" "$1 portico bench"
  put "$1" httpb_rps "$(jq .requestsPerSecond "$j")"
  put "$1" httpb_cpu_us "$(echo "($c1-$c0)*1000000/$tick/$n" | bc -l)"
  read -r b0 b1 < <(busy "$k0" "$k1"); put "$1" httpb_cpu0 "$b0"; put "$1" httpb_cpu1 "$b1"
}
run_h2load() { # server
  local c0 k0 k1 c1 out n ok rate
  c0=$( [ "$1" = direct ] && echo 0 || tree_cpu "$proxy_pid"); k0=$(cores)
  out=$(taskset -c 1 timeout $((secs + 30)) h2load -t1 -c10 -m10 -D "$secs" -d "$req" \
    -H 'content-type: application/grpc' -H 'te: trailers' "http://127.0.0.1:$(grpc_port "$1")/bench.Echo/Echo" 2>&1)
  k1=$(cores); c1=$( [ "$1" = direct ] && echo 0 || tree_cpu "$proxy_pid")
  rate=$(echo "$out" | awk '/^finished in/{print $4}')
  n=$(echo "$out" | awk '/^requests:/{print $6}'); ok=$(echo "$out" | awk '/^status codes:/{print $3}')
  [ "${ok:-0}" = "${n:-x}" ] || { echo "$1 h2load: $n done, ${ok:-0} 2xx" >&2; echo "$out" | grep -E '^(requests|status)' >&2; }
  put "$1" grpc_rps "${rate:-0}"
  put "$1" grpc_cpu_us "$(echo "($c1-$c0)*1000000/$tick/${n:-1}" | bc -l)"
  read -r b0 b1 < <(busy "$k0" "$k1"); put "$1" grpc_cpu0 "$b0"; put "$1" grpc_cpu1 "$b1"
}
run_lat() { # server http|grpc
  local j=$tmp/lat.json
  if [ "$2" = http ]; then
    taskset -c 1 "$bin" bench "http://127.0.0.1:$(http_port "$1")/plaintext" \
      -R 5000 -c 10 -d "${secs}s" --warmup 1s --no-save --json "$j" >/dev/null 2>&1
  else
    # URL first: after -H, `portico bench` reads further words as more fields, not the URL
    taskset -c 1 "$bin" bench "http://127.0.0.1:$(grpc_port "$1")/bench.Echo/Echo" --h2 -R 2000 -c 10 -d "${secs}s" \
      --warmup 1s --no-save --json "$j" -m POST --body "$req" -H 'content-type: application/grpc' -H 'te: trailers' >/dev/null 2>&1
  fi
  check_bench "$j" "$1 $2 latency run"
  put "$1" "${2}_lat_rps" "$(jq .requestsPerSecond "$j")"
  put "$1" "${2}_lat_p50_us" "$(jq '.latency.percentiles["50"] / 1000' "$j")"
  put "$1" "${2}_lat_p99_us" "$(jq '.latency.percentiles["99"] / 1000' "$j")"
}
check_paths() { # server: one HTTP request and one gRPC call, answers checked
  local body out
  body=$(curl -sf "http://127.0.0.1:$(http_port "$1")/plaintext")
  [ "$body" = "Hello, World!" ] || { echo "$1: HTTP answer '$body'" >&2; exit 1; }
  out=$(timeout 10 nghttp -v -d "$req" -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$(grpc_port "$1")/bench.Echo/Echo" 2>&1 | tr -d '\000')
  grep -q 'grpc-status: 0' <<<"$out" && grep -q ':status: 200' <<<"$out" ||
    { echo "$1: gRPC call failed:"; echo "$out"; } >&2
  echo "$1: HTTP 'Hello, World!', gRPC $(echo "$out" | grep -c 'grpc-status: 0') x grpc-status 0"
}

sleep 0.5
round=0
check_paths direct
for s in portico nginx; do start_proxy $s; check_paths $s; stop_proxy; done
echo "ports: limit $U, grpc echo $G, portico $P, nginx http $NH, nginx grpc $NG; $rounds round(s) of ${secs}s runs"
: >"$res"
for round in $(seq "$rounds"); do
  run_wrk direct; run_bench direct; run_h2load direct; run_lat direct http; run_lat direct grpc
  order="portico nginx"; [ $((round % 2)) = 0 ] && order="nginx portico"
  for s in $order; do
    start_proxy $s
    run_wrk $s; run_bench $s; run_h2load $s; run_lat $s http; run_lat $s grpc
    stop_proxy
  done
done

# Per round, then medians. Added latency = proxy - direct of the same round.
val() { awk -v r="$1" -v s="$2" -v m="$3" '$1==r&&$2==s&&$3==m{print $4}' "$res"; }
median() { sort -g | awk '{a[NR]=$1} END{print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for round in $(seq "$rounds"); do
  for s in portico nginx; do
    for k in http grpc; do
      put "$s" "${k}_add_p50_us" "$(echo "$(val "$round" $s ${k}_lat_p50_us) - $(val "$round" direct ${k}_lat_p50_us)" | bc -l)"
      put "$s" "${k}_add_p99_us" "$(echo "$(val "$round" $s ${k}_lat_p99_us) - $(val "$round" direct ${k}_lat_p99_us)" | bc -l)"
    done
  done
done
metrics="http_rps http_p50_ms http_p99_ms http_cpu_us http_cpu0 http_cpu1 httpb_rps httpb_cpu_us httpb_cpu0 httpb_cpu1 grpc_rps grpc_cpu_us grpc_cpu0 grpc_cpu1
  http_lat_p50_us http_lat_p99_us http_add_p50_us http_add_p99_us grpc_lat_p50_us grpc_lat_p99_us grpc_add_p50_us grpc_add_p99_us"
echo
printf '%-16s %-8s' metric server; for r in $(seq "$rounds"); do printf ' %10s' "round$r"; done; printf ' %10s\n' median
for m in $metrics; do
  for s in direct portico nginx; do
    [ -n "$(awk -v s=$s -v m=$m '$2==s&&$3==m' "$res")" ] || continue
    printf '%-16s %-8s' "$m" "$s"
    for r in $(seq "$rounds"); do printf ' %10.2f' "$(val "$r" $s "$m")"; done
    printf ' %10.2f\n' "$(awk -v s=$s -v m=$m '$2==s&&$3==m{print $4}' "$res" | median)"
  done
done
med() { awk -v s="$1" -v m="$2" '$2==s&&$3==m{print $4}' "$res" | median; }
echo
printf 'HTTP proxying req/s, Portico / nginx: %.2f (target >= 1.2)\n' "$(echo "$(med portico http_rps) / $(med nginx http_rps)" | bc -l)"
printf '  the same with portico bench as the client: %.2f; proxy CPU per request, nginx / Portico: %.2f (wrk), %.2f (portico bench)\n' \
  "$(echo "$(med portico httpb_rps) / $(med nginx httpb_rps)" | bc -l)" \
  "$(echo "$(med nginx http_cpu_us) / $(med portico http_cpu_us)" | bc -l)" \
  "$(echo "$(med nginx httpb_cpu_us) / $(med portico httpb_cpu_us)" | bc -l)"
printf 'gRPC unary calls/s, Portico / nginx: %.2f (target >= 1.5)\n' "$(echo "$(med portico grpc_rps) / $(med nginx grpc_rps)" | bc -l)"
