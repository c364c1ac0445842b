#!/usr/bin/env bash
# Portico developer entry point for a fresh Debian 12 machine: installs what is missing, builds, then
#   installers/dev.sh run    opens Portico on the bundled demo site (the desktop app with a display,
#                            else `portico serve` on http://127.0.0.1:8080/ and https://localhost:8443/)
#   installers/dev.sh test   runs the whole test suite (ctest)
#   installers/dev.sh sanitize  builds the suite with clang, ASan+UBSan and the libFuzzer targets
#                            (preset asan, build/asan), runs it all and each fuzz target for 20 s
#                            (FUZZ_SECONDS), then the threading tests with TSan (preset tsan,
#                            build/tsan); .ci/run runs it after `test` (docs/security.md, "CI")
#   installers/dev.sh fuzz [SECONDS [TARGET...]]  installers/fuzz.sh with clang installed first
#   installers/dev.sh build  only builds
# Idempotent: packages already installed are not touched; the build directory is reused.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PORTICO_BUILD_DIR:-$here/build}
mode=${1:-build}

# Build and run dependencies, all from Debian 12.
packages=(
  build-essential cmake ninja-build pkg-config git curl ca-certificates
  qt6-base-dev qt6-base-dev-tools libgl-dev libqcustomplot-dev
  libboost-dev libssl-dev libnghttp2-dev libyaml-cpp-dev libbrotli-dev zlib1g-dev libcli11-dev libpcre2-dev
  libsqlite3-dev nlohmann-json3-dev libprotobuf-dev python3 dpkg-dev file
)
# Real clients the integration tests drive over loopback (chromium: the headless live-reload test).
# sqlite3: old session files made by hand; iproute2 (ip) and util-linux (unshare): a network
# namespace without IPv6 loopback and a private /etc/hosts (tst_client_addresses); bsdutils (script):
# a pseudo-terminal for the bench's live line.
test_packages=(curl nghttp2-client openssl python3 python3-h2 python3-websockets python3-grpcio protobuf-compiler
  php8.2-fpm groff-base appstream chromium lintian sqlite3 iproute2 util-linux bsdutils)
# Only for `sanitize` and `fuzz`: clang with its sanitizer and libFuzzer runtimes (only recommended
# by clang on Debian 12, so not installed with --no-install-recommends), llvm-symbolizer, and gdb
# (a server that outlives its SIGTERM in a test gets its threads' stacks in the log).
sanitize_packages=()
case "$mode" in sanitize | fuzz) sanitize_packages=(clang libclang-rt-14-dev llvm gdb) ;; esac
# Only for `test` and `sanitize`: Node.js and npm run hdr-histogram-js (tst_hdr_js), from Debian only
# when missing: a machine may have nodesource's nodejs, which bundles npm and conflicts with Debian's
# npm package.
node_packages=()
if [ "$mode" = test ] || [ "$mode" = sanitize ]; then
  command -v node >/dev/null || node_packages+=(nodejs)
  command -v npm >/dev/null || node_packages+=(npm)
fi

missing=()
for p in "${packages[@]}" "${test_packages[@]}" "${sanitize_packages[@]}" "${node_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "dev.sh: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc 2>/dev/null || echo 2)
# ccache, when the machine has it, makes rebuilds of a fresh clone cheap; it is not required.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the clone, and the build folder's path not hashed, so that another clone of
  # the same sources (CI's fresh clone) finds what this one compiled.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$here} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fi

# tests/js's pinned packages (hdr-histogram-js) in BUILD_DIR/js, where tst_hdr_js looks for them;
# `npm ci` again only when the lock file changed or node_modules is gone. If npm cannot reach its
# registry, tst_hdr_js fails and says so; the other suites still run.
install_js() {
  local js="$1/js"
  mkdir -p "$js"
  if ! cmp -s "$here/tests/js/package-lock.json" "$js/node_modules/.portico-lock.json"; then
    cp "$here/tests/js/package.json" "$here/tests/js/package-lock.json" "$js/"
    if npm ci --prefix "$js" --no-audit --no-fund --loglevel=error >/dev/null; then
      cp "$js/package-lock.json" "$js/node_modules/.portico-lock.json"
    else
      echo "dev.sh: npm ci in $js failed (tst_hdr_js will fail)" >&2
    fi
  fi
}

if [ "$mode" = fuzz ]; then
  shift
  exec "$here/installers/fuzz.sh" "$@"
fi

if [ "$mode" = sanitize ]; then
  cd "$here"
  status=0
  failed=""
  for preset in asan tsan; do
    # A failed build fails the stage but does not skip the other preset.
    { cmake --preset "$preset" "${launcher[@]}" >/dev/null && cmake --build --preset "$preset" -j "$jobs"; } ||
      { status=1; failed+=" $preset:build"; continue; }
    install_js "$here/build/$preset"
    # A suite that fails is run once more and fails the stage only if it fails again; the first
    # failure stays in the log.
    ctest --preset "$preset" -j "$jobs" --timeout 900 --repeat until-pass:2 ||
      { status=1; failed+=" $preset:$(tr '\n' ' ' <"$here/build/$preset/Testing/Temporary/LastTestsFailed.log" 2>/dev/null)"; }
    if [ "$preset" = asan ]; then
      FUZZ_BUILD="$here/build/asan" FUZZ_JOBS=$jobs "$here/installers/fuzz.sh" "${FUZZ_SECONDS:-20}" ||
        { status=1; failed+=" fuzz: $(tr '\n' ';' <"$here/build/asan/fuzz-failed.txt" 2>/dev/null)"; }
    fi
  done
  # The last lines of a long log: what failed, so that a log's tail names it.
  [ -n "$failed" ] && echo "dev.sh sanitize: failed:$failed" >&2
  exit $status
fi

cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$jobs"

case "$mode" in
  run)
    shift || true
    # The desktop app when there is a display to show it on, else the headless server.
    if [ $# -eq 0 ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; } && [ -x "$build/app/portico" ]; then
      exec "$build/app/portico" gui   # the last project, or on first start a copy of the demo
    fi
    exec "$build/app/portico" serve --config "$here/resources/demo/portico.yaml" "$@"
    ;;
  test)
    install_js "$build"
    cd "$build"
    exec ctest --output-on-failure -j "$jobs" --timeout 600
    ;;
  build) ;;
  *) echo "usage: installers/dev.sh [run|test|sanitize|fuzz|build]" >&2; exit 2 ;;
esac
