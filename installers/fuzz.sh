#!/bin/sh
# Builds the libFuzzer targets (clang, ASan+UBSan, build-fuzz/) and runs each for SECONDS
# (default 60) from its seed corpus and saved reproducers, keeping the grown corpus in
# BUILD/corpus/NAME.
#   installers/fuzz.sh [SECONDS] [TARGET...]     targets: http1_parser http1_response h2_session
#                                                ws_frames ws_observer config_loader har_import
#                                                route_pattern load_result hdr_histogram suite_file
#                                                h2_client client_hello
#   FUZZ_JOBS=N (default 1) runs N targets at a time, each on one core.
#   FUZZ_RUNS=N stops each target after N executions (libFuzzer -runs) if SECONDS does not come first.
#   FUZZ_SANITIZERS=undefined builds in build-fuzz-undefined/ without ASan: 2-4x more inputs per
#     second for long runs; replay their corpus under ASan afterwards (docs/security.md).
#   FUZZ_FLAGS="..." more libFuzzer flags, e.g. -max_len=8192.
#   FUZZ_BUILD=DIR uses an already configured PORTICO_FUZZ build (installers/dev.sh sanitize: the
#     asan preset's build/asan) instead of configuring one.
# A crash, leak, sanitizer report, failed invariant, 10 s timeout or 2 GiB RSS stops a target; its
# input is written to BUILD/artifacts/, the end of its log is printed, one line naming the target
# and the sanitizer's verdict goes to BUILD/fuzz-failed.txt (and last on stderr); the exit status is 1.
# Put a fixed reproducer in tests/fuzz/crashes/NAME so every build replays it. Results of long
# runs: docs/security.md.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-http1_parser http1_response h2_session ws_frames ws_observer config_loader har_import route_pattern load_result hdr_histogram suite_file h2_client client_hello}
jobs=${FUZZ_JOBS:-1}
case $jobs in '' | *[!0-9]* | 0) echo "fuzz.sh: FUZZ_JOBS must be a whole number >= 1" >&2; exit 2 ;; esac
runs=${FUZZ_RUNS:--1}
sanitizers=${FUZZ_SANITIZERS:-address,undefined}
if [ -n "${FUZZ_BUILD:-}" ]; then
  build=$FUZZ_BUILD
  grep -q '^PORTICO_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null ||
    { echo "fuzz.sh: $build is not a configured PORTICO_FUZZ build" >&2; exit 2; }
else
  build=$here/build-fuzz
  [ "$sanitizers" = address,undefined ] || build=$here/build-fuzz-$(echo "$sanitizers" | tr , -)
  command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
  launcher=""
  command -v ccache >/dev/null && launcher=-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DPORTICO_FUZZ=ON -DPORTICO_BUILD_UI=OFF \
    -DPORTICO_FUZZ_SANITIZERS="$sanitizers" -DCMAKE_BUILD_TYPE=RelWithDebInfo $launcher >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target $(for t in $targets; do printf 'fuzz_%s ' "$t"; done)
mkdir -p "$build/artifacts"
# One line per failed target, read by installers/dev.sh sanitize for the log's last line.
rm -f "$build/fuzz-failed.txt"

# One target: its log in BUILD/fuzz-NAME.log, its exit status in BUILD/fuzz-NAME.status.
run() {
  t=$1
  rm -f "$build/fuzz-$t.status" "$build/fuzz-$t.log"
  mkdir -p "$build/corpus/$t"
  crashes=$here/tests/fuzz/crashes/$t
  [ -d "$crashes" ] || crashes=$here/tests/fuzz/corpus/$t
  rc=0
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -runs="$runs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 ${FUZZ_FLAGS:-} \
    -artifact_prefix="$build/artifacts/$t-" "$build/corpus/$t" "$here/tests/fuzz/corpus/$t" "$crashes" \
    2>"$build/fuzz-$t.log" || rc=$?
  echo "$rc" >"$build/fuzz-$t.status"
}

# Prints a finished target's result; returns 1 if it failed.
report() {
  t=$1
  echo "== $t: ${secs}s"
  grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb' "$build/fuzz-$t.log" | sed 's/^/   /'
  grep -E '^#[0-9]+ +DONE' "$build/fuzz-$t.log" | tail -1 | sed 's/^/   /'
  st=$(cat "$build/fuzz-$t.status" 2>/dev/null || echo "none")
  [ "$st" = 0 ] && return 0
  echo "   FAILED (exit $st): $build/fuzz-$t.log, $build/artifacts/" >&2
  tail -n 60 "$build/fuzz-$t.log" | sed 's/^/   | /' >&2
  # One line for the summary: the sanitizer's or libFuzzer's verdict and the saved input.
  # The specific cause first (a UBSan or invariant line is followed by libFuzzer's "deadly signal").
  why=$(grep -m1 -E 'runtime error:|invariant failed|Assertion|^==[0-9]+== ?ERROR: (Address|Leak|Undefined)' "$build/fuzz-$t.log" ||
        grep -m1 -E '^==[0-9]+== ?(ERROR|WARNING)|^SUMMARY:|ALARM: working on the last Unit|out-of-memory|deadly signal' "$build/fuzz-$t.log" || true)
  art=$(grep -m1 -oE 'Test unit written to [^ ]+' "$build/fuzz-$t.log" | sed 's/Test unit written to //' || true)
  echo "$t (exit $st): ${why:-no sanitizer line; see $build/fuzz-$t.log} ${art:+[input $art]}" >>"$build/fuzz-failed.txt"
  return 1
}

status=0
set -- $targets
while [ $# -gt 0 ]; do
  batch=""
  while [ $# -gt 0 ] && [ "$(echo $batch | wc -w)" -lt "$jobs" ]; do
    batch="$batch $1"
    shift
  done
  for t in $batch; do run "$t" & done
  wait
  for t in $batch; do report "$t" || status=1; done
done
if [ "$status" != 0 ]; then
  echo "fuzz.sh: failed:" >&2
  sed 's/^/  /' "$build/fuzz-failed.txt" >&2
fi
exit $status
