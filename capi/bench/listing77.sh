#!/usr/bin/env bash
# The seed's listing 7.7 (capi/tests/seed/listing_7_7.c), unchanged, built once
# against glibc and timed on glibc's AIO and under LD_PRELOAD=libposixrt.so
# (both engines), interleaved, on 16 cached text files of ~6.6 MB (106 MB).
# Prints JSON: median wall times in ms, the ratio to glibc (target <= 0.5) and
# the load average. Also checks each count against `wc -l`.
#
# Usage: capi/bench/listing77.sh [--runs N] [--lib PATH]
#   --runs  runs of each variant (default 11)
#   --lib   libposixrt.so (default target/release/libposixrt.so, built first)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
runs=11
lib=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs|--lib)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "listing77.sh: $1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "listing77.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$runs" in
  ''|*[!0-9]*|0*) echo "listing77.sh: --runs needs a whole number of 1 or more, not '$runs' (see --help)" >&2; exit 2 ;;
esac
# shellcheck source=lib.sh
. "$root/capi/bench/lib.sh"
lib=$(bench_lib "$root" "$lib")

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cc -std=gnu99 -w -O2 -o "$dir/listing77" "$root/capi/tests/seed/listing_7_7.c" -lpthread
files=()
for i in $(seq 1 16); do
  f="$dir/f$i.txt"
  awk -v n="$i" 'BEGIN { for (k = 0; k < 110000; k++) printf "file %d line %d some text to count\n", n, k }' >"$f"
  files+=("$f")
done
cat "${files[@]}" >/dev/null
want=$(cat "${files[@]}" | wc -l)

ms() { # prints wall ms of one run, checks the count
  local t0 t1 out
  t0=$(date +%s%N)
  out=$(env "$@" "$dir/listing77" "${files[@]}" </dev/null)
  t1=$(date +%s%N)
  [ "$out" = "$want" ] || { echo "listing77.sh: count $out != wc -l $want ($*)" >&2; exit 1; }
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", (b - a) / 1e6 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

load=$(cut -d' ' -f1-3 /proc/loadavg)
g=() u=() t=()
for _ in $(seq 1 "$runs"); do
  g+=("$(ms POSIXRT_UNUSED=1)")
  u+=("$(ms LD_PRELOAD="$lib" POSIXRT_AIO_BACKEND=uring)")
  t+=("$(ms LD_PRELOAD="$lib" POSIXRT_AIO_BACKEND=threads)")
done
mg=$(printf '%s\n' "${g[@]}" | median)
mu=$(printf '%s\n' "${u[@]}" | median)
mt=$(printf '%s\n' "${t[@]}" | median)
cat <<EOF
{
  "bench": "listing 7.7, 16 cached files, $want lines, $runs interleaved runs, medians",
  "load_avg_before": "$load",
  "load_avg_after": "$(cut -d' ' -f1-3 /proc/loadavg)",
  "glibc_ms": $mg,
  "preload_uring_ms": $mu,
  "preload_threads_ms": $mt,
  "preload_uring_vs_glibc": $(awk -v a="$mu" -v b="$mg" 'BEGIN { printf "%.2f", a / b }'),
  "preload_threads_vs_glibc": $(awk -v a="$mt" -v b="$mg" 'BEGIN { printf "%.2f", a / b }'),
  "target": 0.5
}
EOF
