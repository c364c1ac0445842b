#!/bin/bash
# WebSocket echo: Portico (one worker, `websocket: echo`) against the Node.js `ws` anchor
# (../shared/bench/ws_echo_node.js), alternating, server on CPU 0 and ws_bench on CPU 1,
# 100 connections x 64-byte messages, window 16 and window 1, 5 s each after a 1 s warm-up.
# Then a room broadcast to 1,000 members (tests/perf/ws_room_bench.c).
# usage: tests/perf/ws_compare.sh [ROUNDS=3]   (needs node + `npm install ws` in $NODE_DIR)
# Env: PORTICO (binary, default build/app/portico), NODE_DIR (a folder with node_modules/ws).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
PORTICO=${PORTICO:-$here/build/app/portico}
NODE_DIR=${NODE_DIR:-$(mktemp -d)}
[ -d "$NODE_DIR/node_modules/ws" ] || (cd "$NODE_DIR" && npm install ws --silent --no-audit --no-fund)
work=$(mktemp -d)
gcc -O2 -o "$work/ws_bench" "$here/../shared/bench/ws_bench.c"
gcc -O2 -o "$work/ws_room_bench" "$here/tests/perf/ws_room_bench.c"
cat > "$work/bench.yaml" <<'YAML'
listen: [127.0.0.1:18572]
workers: 1
vhosts:
  - routes:
      - {path: /, websocket: echo}
      - {path: /rooms/:room, websocket: room}
YAML
ulimit -n 4096
for round in $(seq "${1:-3}"); do
  taskset -c 0 "$PORTICO" serve -c "$work/bench.yaml" > /dev/null 2>&1 & P=$!
  sleep 0.5
  a=$(taskset -c 1 "$work/ws_bench" 18572 / 100 16 64 5); b=$(taskset -c 1 "$work/ws_bench" 18572 / 100 1 64 5)
  r=$(taskset -c 1 "$work/ws_room_bench" 18572 /rooms/bench 1000 8 64 5)
  kill $P; wait $P 2>/dev/null || true
  NODE_PATH=$NODE_DIR/node_modules taskset -c 0 node "$here/../shared/bench/ws_echo_node.js" 18573 > /dev/null 2>&1 & N=$!
  sleep 1.5
  c=$(taskset -c 1 "$work/ws_bench" 18573 / 100 16 64 5); d=$(taskset -c 1 "$work/ws_bench" 18573 / 100 1 64 5)
  kill $N; wait $N 2>/dev/null || true
  echo "round $round portico w16: $a | w1: $b | room: $r"
  echo "round $round node    w16: $c | w1: $d"
done
rm -rf "$work"
