#!/bin/bash
# A/B of two portico binaries inside ../shared/bench/compare.sh runs, so that nginx, h2o and the
# limit server are measured in the same runs as the yardsticks. Bounded: PAIRS pairs of
# compare.sh runs (one round of SECS seconds per workload and server each), the binaries
# alternating (odd pairs BASE first, even pairs NEW first); loopback only, the candidate pinned to
# CPU 0 and the load generator to CPU 1 (compare.sh does both).
# usage: tests/perf/ab_compare.sh BASE_BIN NEW_BIN [PAIRS=3] [SECS=4] [WORKLOADS=h1,h1pipe,h2tls]
# Prints every compare.sh line prefixed with the pair and the binary (A = BASE, B = NEW), then per
# workload: the candidate's server CPU µs per request for A and B in each pair, B/A per pair and
# the median of those ratios, and the candidate's req/s over nginx's (h2o's for h2tls) in its own run.
# Needs what compare.sh needs (nginx h2o wrk h2load gcc openssl bc).
set -euo pipefail
A=$1 B=$2 pairs=${3:-3} secs=${4:-4} workloads=${5:-h1,h1pipe,h2tls}
here=$(cd "$(dirname "$0")/../.." && pwd)
compare=$here/../shared/bench/compare.sh
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for p in $(seq "$pairs"); do
  if ((p % 2)); then order="A B"; else order="B A"; fi
  for which in $order; do
    bin=$A; [ "$which" = B ] && bin=$B
    "$compare" -s "$secs" -r 1 -w "$workloads" -- env PORTICO_BIN="$bin" "$here/tests/perf/compare-candidate.sh" |
      awk -v p="$p" -v w="$which" 'NR > 1 && NF == 6 {print p, w, $0}' | tee -a "$out"
  done
done
echo
echo "workload pair A_us/req B_us/req B/A A_vs_anchor B_vs_anchor (anchor: nginx; h2o for h2tls)"
awk '
  { key = $3; pair = $1; bin = $2; srv = $4
    if (srv == "portico") { cpu[key, pair, bin] = $7; rate[key, pair, bin] = $5 }
    anchor = (key == "h2tls") ? "h2o" : "nginx"
    if (srv == anchor) arate[key, pair, bin] = $5
    wl[key] = 1; if (pair > np) np = pair }
  END {
    for (k in wl) {
      n = 0
      for (p = 1; p <= np; p++) {
        a = cpu[k, p, "A"]; b = cpu[k, p, "B"]
        if (a == "" || b == "" || a == 0) continue
        r[++n] = b / a
        printf "%-8s %d %8.2f %8.2f %6.3f %6.2f %6.2f\n", k, p, a, b, b / a,
          rate[k, p, "A"] / (arate[k, p, "A"] ? arate[k, p, "A"] : 1),
          rate[k, p, "B"] / (arate[k, p, "B"] ? arate[k, p, "B"] : 1)
      }
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
      if (n) printf "%-8s median B/A of server CPU per request: %.3f (%d pairs)\n", k,
        (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2, n
    }
  }' "$out"
