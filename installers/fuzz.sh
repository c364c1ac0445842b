#!/bin/sh
# Builds the libFuzzer targets (clang, ASan+UBSan, build-fuzz/) and runs each for SECONDS
# (default 60) from its seed corpus, keeping the grown corpus in build-fuzz/corpus/NAME.
#   installers/fuzz.sh [SECONDS] [TARGET...]     targets: http1_parser h2_session ws_frames
#                                                ws_observer config_loader har_import route_pattern
# A crash, leak, sanitizer report, failed invariant, 10 s timeout or 2 GiB RSS stops a target; its
# input is written to build-fuzz/artifacts/. Put a fixed reproducer in tests/fuzz/crashes/NAME so
# every build replays it. Results of long runs: docs/security.md.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-http1_parser h2_session ws_frames ws_observer config_loader har_import route_pattern}
build=$here/build-fuzz
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang (apt-get install clang)" >&2; exit 2; }
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DPORTICO_FUZZ=ON -DPORTICO_BUILD_UI=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target $(for t in $targets; do printf 'fuzz_%s ' "$t"; done)
mkdir -p "$build/artifacts"
status=0
for t in $targets; do
  mkdir -p "$build/corpus/$t"
  echo "== $t: ${secs}s"
  if ! "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$t-" "$build/corpus/$t" "$here/tests/fuzz/corpus/$t" 2>"$build/fuzz-$t.log"; then
    echo "   FAILED: see $build/fuzz-$t.log and $build/artifacts/" >&2
    status=1
  fi
  grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb' "$build/fuzz-$t.log" | sed 's/^/   /'
  grep -E '^#[0-9]+ +DONE' "$build/fuzz-$t.log" | tail -1 | sed 's/^/   /'
done
exit $status
