#!/usr/bin/env bash
# A SCHED_FIFO thread's AIO read latency (capi/bench/rt_read.c: aio_read of
# 4 KiB of a cached file, then aio_suspend, with pauses between the reads), on
# glibc's AIO and under LD_PRELOAD=libposixrt.so on both engines, interleaved,
# with the CPUs idle and with one busy SCHED_OTHER loop per CPU beside it (the
# case where the thread engine's workers must preempt to serve it soon).
# Prints one JSON line: p50/p90/p99/max in ns of each run, and the load average.
#
# Usage: capi/bench/rt_read.sh [--reads N] [--rounds N] [--lib PATH]
#   --reads   reads per run (default 2000)
#   --rounds  rounds of all six runs (default 2)
#   --lib     libposixrt.so to preload (default target/release/libposixrt.so,
#             built first)
# Needs CAP_SYS_NICE or RLIMIT_RTPRIO (SCHED_FIFO 50): exits 2 without it.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
reads=2000
rounds=2
lib=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reads|--rounds|--lib)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "rt_read.sh: $1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --reads) reads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "rt_read.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$reads" in
  ''|*[!0-9]*|0*) echo "rt_read.sh: --reads needs a whole number of 1 or more, not '$reads' (see --help)" >&2; exit 2 ;;
esac
case "$rounds" in
  ''|*[!0-9]*|0*) echo "rt_read.sh: --rounds needs a whole number of 1 or more, not '$rounds' (see --help)" >&2; exit 2 ;;
esac
# shellcheck source=lib.sh
. "$root/capi/bench/lib.sh"
lib=$(bench_lib "$root" "$lib")

dir=$(mktemp -d)
busy_pids=()
cleanup() {
  for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
cc -std=c99 -Wall -Wextra -O2 -o "$dir/rt_read" "$root/capi/bench/rt_read.c" -lrt
head -c 262144 /dev/urandom >"$dir/f"
cat "$dir/f" >/dev/null
"$dir/rt_read" "$dir/f" 10 >/dev/null || exit $?

# One run: $1 the name, then the environment for it.
run() {
  local name=$1; shift
  printf '"%s": %s' "$name" "$(env "$@" "$dir/rt_read" "$dir/f" "$reads")"
}

busy() {
  local n
  n=$(nproc)
  for _ in $(seq 1 "$n"); do
    (while :; do :; done) &
    busy_pids+=($!)
  done
}

unbusy() {
  for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${busy_pids[@]}" 2>/dev/null || true
  busy_pids=()
}

out=""
for r in $(seq 1 "$rounds"); do
  for load in idle busy; do
    [ "$load" = busy ] && busy
    for e in glibc uring threads; do
      case $e in
        glibc) one=$(run "$load.$e.$r") ;;
        *) one=$(run "$load.$e.$r" LD_PRELOAD="$lib" POSIXRT_AIO_BACKEND="$e") ;;
      esac
      out="$out${out:+, }$one"
    done
    [ "$load" = busy ] && unbusy
  done
done
printf '{"bench": "SCHED_FIFO 50 thread, aio_read 4 KiB cached + aio_suspend, %s reads a run", %s, "loadavg": "%s"}\n' \
  "$reads" "$out" "$(cut -d' ' -f1-3 /proc/loadavg)"
