#!/usr/bin/env bash
# User-space instructions per read of aio_peers' QD32 loop (4 KiB random reads
# of a cached file, 32 in flight), counted by valgrind's callgrind: a figure
# that does not move with the machine's load, where timings do.
#
# Each engine runs twice under callgrind, with --qd32-ops 3200 and 35200 (3
# rounds, 100 QD1 reads a round): the difference of the two totals over the
# 96,000 reads between them is the cost of one read, the set-up (the test
# file, the runtime, the QD1 reads) dropping out. Instructions, not time: a
# load that waits on memory counts once. Prints one JSON line:
#   {"instructions_per_read": {ENGINE: N, ...}, "ratios": {...}}
#
# Usage: benches/aio_instructions.sh [--engines E1,E2,...] [--help]
#   --engines  aio_peers engines (default posixrt_await,tokio_bare_uring,io_uring)
#
# aio_peers is built with `--features peers` and RUSTFLAGS="--cfg
# rustix_use_libc" into target/callgrind (valgrind cannot follow the vdso
# lookup of rustix's own backend). valgrind is installed with apt-get when
# missing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
engines=posixrt_await,tokio_bare_uring,io_uring
while [ $# -gt 0 ]; do
  case "$1" in
    --engines)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "aio_instructions.sh: $1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --engines) engines=$2; shift 2 ;;
    --help|-h) sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "aio_instructions.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

if ! command -v valgrind >/dev/null; then
  # As fio.sh: only root can install, and a fresh machine's package lists may be
  # empty until apt-get update has run.
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "aio_instructions.sh: valgrind is not installed (apt-get install valgrind as root)" >&2
    exit 1
  fi
  echo "aio_instructions.sh: installing valgrind (apt-get)" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind; } >/dev/null || {
    echo "aio_instructions.sh: valgrind is missing and apt-get could not install it" >&2
    exit 1
  }
fi

target="$root/target/callgrind"
(cd "$root" && RUSTFLAGS="--cfg rustix_use_libc" CARGO_TARGET_DIR="$target" \
  cargo build -q --release --features peers --example aio_peers)
bin="$target/release/examples/aio_peers"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The total instructions of one run of engine $1 with --qd32-ops $2.
total() {
  local out="$work/$1.$2"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --only "$1" \
    --rounds 3 --ops 100 --qd32-ops "$2" >/dev/null 2>"$work/err" || {
    echo "aio_instructions.sh: aio_peers --only $1 failed under valgrind:" >&2
    grep -v "^==" "$work/err" | tail -5 >&2
    exit 1
  }
  sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out"
}

json=""
declare -A per
for e in ${engines//,/ }; do
  a=$(total "$e" 3200)
  b=$(total "$e" 35200)
  per[$e]=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (b - a) / 96000 }')
  json="$json${json:+, }\"$e\": ${per[$e]}"
done

ratios=""
ratio() {
  if [ -n "${per[$1]:-}" ] && [ -n "${per[$2]:-}" ]; then
    ratios="$ratios${ratios:+, }\"$1_vs_$2\": $(awk -v a="${per[$1]}" -v b="${per[$2]}" 'BEGIN { printf "%.3f", a / b }')"
  fi
}
ratio posixrt_await tokio_bare_uring
ratio posixrt_await_join tokio_bare_uring_join
ratio posixrt_await io_uring
echo "{\"instructions_per_read\": {$json}, \"ratios\": {$ratios}}"
