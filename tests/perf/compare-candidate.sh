#!/usr/bin/env bash
# Starts Portico the way ../shared/bench/compare.sh expects its candidate: 127.0.0.1:18080
# cleartext, 127.0.0.1:18443 TLS ($BENCH_CERT/$BENCH_KEY, ALPN h2), GET /plaintext → "Hello, World!" (text/plain), static root $BENCH_WWW, one worker
# (compare.sh pins the candidate to one core). Usage, from the repository root:
#   ../shared/bench/compare.sh -w h1,h1pipe,h1static,h2tls,static1m -- tests/perf/compare-candidate.sh
# PORTICO_BIN overrides the binary (default: build/app/portico next to this script's repo).
# PORTICO_CAPTURE=1 runs the capture-on variant (`capture: {enabled: true}`, default sizes):
#   ../shared/bench/compare.sh -w h1,h1pipe,h2tls -- env PORTICO_CAPTURE=1 tests/perf/compare-candidate.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${PORTICO_BIN:-$here/build/app/portico}
: "${BENCH_WWW:?compare.sh exports BENCH_WWW}"
capture=false
[ -n "${PORTICO_CAPTURE:-}" ] && [ "${PORTICO_CAPTURE}" != 0 ] && capture=true
cfg=$(mktemp --suffix=.yaml)
cat >"$cfg" <<YAML
workers: 1
listen:
  - 127.0.0.1:18080
  - {address: 127.0.0.1:18443, tls: {cert: "$BENCH_CERT", key: "$BENCH_KEY"}}
server_header: true
capture: {enabled: $capture}
vhosts:
  - root: $BENCH_WWW
    routes:
      - path: /plaintext
        respond: {body: "Hello, World!", headers: {Content-Type: text/plain}}
YAML
exec "$bin" serve --config "$cfg" --no-reload
