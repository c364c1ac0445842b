#!/bin/bash
# Memory per open tunnel of Portico's forward proxy (issue 28), bounded: N connections (default
# 1000) held open at once by one Python client, in three kinds, one proxy each, all on 127.0.0.1:
#   tunnel       CONNECT to a local TLS origin, passed through unread (--no-intercept), TLS done
#                with the origin through it;
#   intercepted  the same CONNECT intercepted: TLS with the proxy (a local-CA leaf), one request
#                answered over the proxy's own TLS to the origin, then idle;
#   forward      a keep-alive absolute-form request to a cleartext origin, then idle.
# Reported: the proxy's VmRSS before and with the N connections open, and the difference / N.
# Capture on (--record) as a user runs it. The origin is Portico too (`tls: auto`, its own CA).
# usage: tests/perf/tunnel_memory.sh [N=1000]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-1000}
bin=${PORTICO_BIN:-$here/build/app/portico}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
ulimit -n 65536 2> /dev/null || ulimit -n 8192
freeport() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitport() { for _ in $(seq 100); do (exec 3<> /dev/tcp/127.0.0.1/$1) 2> /dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

mkdir -p "$tmp/site"
echo hello > "$tmp/site/index.html"
op=$(freeport)
cat > "$tmp/origin.yaml" << Y
listen: [{address: "127.0.0.1:$op", tls: auto}, "127.0.0.1:$((op + 1))"]
limits: {max_connections_per_worker: 100000}
vhosts: [{root: $tmp/site}]
Y
PORTICO_DATA_DIR=$tmp/origin-data "$bin" serve --config "$tmp/origin.yaml" -q > "$tmp/origin.log" 2>&1 &
pids+=($!)
waitport "$op"
origin_ca=$tmp/origin-data/ca/ca.crt

cat > "$tmp/client.py" << 'PY'
import socket, ssl, sys, time
kind, proxy, origin, n, proxy_ca, origin_ca = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
held = []
def connect(target):
    s = socket.create_connection(("127.0.0.1", proxy))
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head
    return s
ctx = ssl.create_default_context(cafile=origin_ca if kind == "tunnel" else proxy_ca)
for i in range(n):
    if kind == "forward":
        s = socket.create_connection(("127.0.0.1", proxy))
        s.sendall(f"GET http://127.0.0.1:{origin + 1}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
    else:
        s = ctx.wrap_socket(connect(f"127.0.0.1:{origin}"), server_hostname="127.0.0.1")
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
    held.append(s)
print("open", len(held), flush=True)
time.sleep(60)  # bounded: the script reads the proxy's RSS meanwhile, then kills this client
PY

printf '| kind | connections | RSS before (KiB) | RSS with them open (KiB) | per connection (bytes) |\n| --- | ---: | ---: | ---: | ---: |\n'
for kind in tunnel intercepted forward; do
  pp=$(freeport)
  extra=()
  [ "$kind" = tunnel ] && extra=(--no-intercept)
  PORTICO_DATA_DIR=$tmp/proxy-data "$bin" proxy --port "$pp" -w 1 -q --record "$tmp/$kind.db" \
    --upstream-cacert "$origin_ca" "${extra[@]}" > "$tmp/proxy-$kind.log" 2>&1 &
  proxy=$!
  pids+=($proxy)
  waitport "$pp"
  sleep 0.5
  before=$(rss "$proxy")
  /usr/bin/python3 "$tmp/client.py" "$kind" "$pp" "$op" "$n" "$tmp/proxy-data/ca/ca.crt" "$origin_ca" > "$tmp/client.out" 2>&1 &
  client=$!
  pids+=($client)
  for _ in $(seq 600); do grep -q '^open' "$tmp/client.out" 2> /dev/null && break; kill -0 $client 2> /dev/null || break; sleep 0.1; done
  grep -q '^open' "$tmp/client.out" || { cat "$tmp/client.out" >&2; exit 1; }
  sleep 1
  with=$(rss "$proxy")
  kill $client $proxy 2> /dev/null || true
  wait $client $proxy 2> /dev/null || true
  printf '| %s | %d | %d | %d | %d |\n' "$kind" "$n" "$before" "$with" $(((with - before) * 1024 / n))
done
