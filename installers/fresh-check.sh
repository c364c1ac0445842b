#!/usr/bin/env bash
# Runs COMMAND on a clean clone of the current commit inside a minimal, fresh Debian 12 root, as a
# new user's machine starts: no compiler, CMake, Ninja or curl, a stock /etc/hosts (localhost on
# 127.0.0.1 and ::1). Checks that the README's two commands need nothing done by hand first.
#
#   installers/fresh-check.sh 'installers/dev.sh test' [TIMEOUT_SECONDS]
#
# The root is made once with debootstrap (--variant=minbase, cached in $FRESH_ROOT, default
# /var/tmp/portico-fresh-root) and copied for each run ($FRESH_WORK). Only committed work is
# cloned. Prints the last lines of the run and its exit status; the whole log stays in
# $FRESH_WORK.log. Needs root (debootstrap, chroot, bind mounts).
set -u
if [ $# -lt 1 ]; then
  echo "usage: installers/fresh-check.sh 'COMMAND' [TIMEOUT_SECONDS]" >&2
  exit 2
fi
cmd=$1
limit=${2:-5400}
base=${FRESH_ROOT:-/var/tmp/portico-fresh-root}
work=${FRESH_WORK:-/var/tmp/portico-fresh-try}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && git rev-parse --show-toplevel) || exit 2
if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-check: needs root (debootstrap, chroot and bind mounts)" >&2
  exit 2
fi
[ -z "$(git -C "$repo" status --porcelain)" ] ||
  echo "fresh-check: note: uncommitted changes are not part of the check (it clones HEAD)"

if [ ! -x "$base/usr/bin/apt-get" ]; then
  if ! command -v debootstrap >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
      { echo "fresh-check: cannot install debootstrap" >&2; exit 2; }
  fi
  # The mirror this machine uses (deb822 sources on Debian 12, else the classic list).
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
  [ -n "$mirror" ] || mirror=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  security=$(awk '/^URIs:/{u=$2} /^Suites:.*security/{print u; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
  [ -n "$mirror" ] || { echo "fresh-check: no Debian mirror found in /etc/apt" >&2; exit 2; }
  rm -rf --one-file-system "$base"
  echo "fresh-check: making a minimal Debian 12 root in $base (once)"
  if ! debootstrap --variant=minbase bookworm "$base" "$mirror" >"$base.log" 2>&1; then
    tail -5 "$base.log"
    rm -rf --one-file-system "$base"
    exit 2
  fi
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
    "$mirror" "$mirror" "${security:-$mirror}" >"$base/etc/apt/sources.list"
  # What a stock Debian 12 install writes: localhost on both address families.
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$base/etc/hosts"
  cp /etc/resolv.conf "$base/etc/resolv.conf" 2>/dev/null || true
fi

mounts=(proc sys dev dev/pts)
unmount() {
  local m
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    m=${mounts[i]}
    umount "$work/$m" 2>/dev/null || umount -l "$work/$m" 2>/dev/null || true
  done
}
unmount # a run killed before its trap
if grep -q " $work/" /proc/mounts; then
  echo "fresh-check: still mounted under $work; not removing it" >&2
  exit 2
fi
rm -rf --one-file-system "$work"
cp -a "$base" "$work"
commit=$(git -C "$repo" rev-parse HEAD)
git clone -q "$repo" "$work/usr/src/portico" && git -C "$work/usr/src/portico" checkout -q "$commit" ||
  { echo "fresh-check: cannot clone $repo" >&2; exit 2; }
for m in "${mounts[@]}"; do mount --bind "/$m" "$work/$m"; done

run=""
finish() { # end what still runs inside the root, then unmount
  [ -n "$run" ] && kill "$run" 2>/dev/null
  for p in /proc/[0-9]*; do
    case "$(readlink "$p/root" 2>/dev/null)" in "$work"*) kill -9 "${p#/proc/}" 2>/dev/null ;; esac
  done
  sleep 1
  unmount
}
trap finish EXIT
trap 'exit 143' TERM INT

log=$work.log
echo "fresh-check: running '$cmd' on $commit in $work (log: $log)"
timeout "$limit" chroot "$work" /bin/bash -lc "cd /usr/src/portico && $cmd" >"$log" 2>&1 &
run=$!
wait $run
code=$?
run=""
tail -40 "$log"
echo "fresh-check: '$cmd' exited $code after ${SECONDS} s (commit ${commit:0:7}; full log: $log)"
exit $code
