#!/bin/bash
# Memory of the load generator per open connection, against wrk and h2load in the same run: each
# tool's peak RSS (/usr/bin/time %M) at N1 and N2 connections to a limit server on loopback
# (../shared/bench/limit_server.c for HTTP/1.1, tests/perf/h2_limit_server.c for h2c), and
# (RSS(N2) - RSS(N1)) / (N2 - N1) in bytes. Every connection sends at least one request (4 × N2
# requests in all). Bounded: each run at most 120 s.
# usage: tests/perf/load_memory.sh [BIN=build/app/portico] [N1=100] [N2=10000]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$(realpath "${1:-$here/build/app/portico}") n1=${2:-100} n2=${3:-10000}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
export PORTICO_DATA_DIR=$tmp/data
ulimit -n $((n2 + 1000))
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
gcc -O2 -o "$tmp/limit1" "$here/../shared/bench/limit_server.c"
gcc -O2 -o "$tmp/limit2" "$here/tests/perf/h2_limit_server.c"
p1=$(port) p2=$(port)
"$tmp/limit1" "$p1" >/dev/null 2>&1 &
"$tmp/limit2" "$p2" >/dev/null 2>&1 &
sleep 0.5
rss() { # command... -> peak RSS in KiB
    /usr/bin/time -f '%M' -o "$tmp/rss" timeout 120 "$@" >/dev/null 2>&1 || true
    cat "$tmp/rss"
}
per() { # rss1 rss2 -> bytes per connection
    echo $(( ($2 - $1) * 1024 / (n2 - n1) ))
}
requests=$((4 * n2))
for tool in portico wrk h2load; do
    if [ "$tool" != portico ] && ! command -v "$tool" >/dev/null; then
        echo "$tool: not installed (apt-get install $( [ "$tool" = wrk ] && echo wrk || echo nghttp2-client)), skipped"
        continue
    fi
    for proto in h1 h2c; do
        case $tool/$proto in
        portico/h1) cmd() { rss "$BIN" bench --no-save -t1 -c "$1" -n $requests "http://127.0.0.1:$p1/"; } ;;
        portico/h2c) cmd() { rss "$BIN" bench --no-save -t1 --h2 -c "$1" -n $requests "http://127.0.0.1:$p2/"; } ;;
        wrk/h1) cmd() { rss wrk -t1 -c "$1" -d 2s "http://127.0.0.1:$p1/"; } ;;
        wrk/h2c) continue ;; # wrk has no HTTP/2
        h2load/h1) cmd() { rss h2load --h1 -t1 -c "$1" -n $requests "http://127.0.0.1:$p1/"; } ;;
        h2load/h2c) cmd() { rss h2load -t1 -c "$1" -n $requests "http://127.0.0.1:$p2/"; } ;;
        esac
        a=$(cmd "$n1") b=$(cmd "$n2")
        echo "$tool $proto rss(${n1})=${a}KiB rss(${n2})=${b}KiB per-connection=$(per "$a" "$b")B"
    done
done
