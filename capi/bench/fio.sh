#!/usr/bin/env bash
# fio, 4 KiB random reads of a cached 256 MiB file (--invalidate=0), or random
# buffered writes to it (--rw randwrite), at QD1 and QD32, three ways in the
# same run:
#   posixaio          glibc's POSIX AIO (user-space threads)
#   posixaio+preload  the same fio under LD_PRELOAD=libposixrt.so
#   io_uring          fio's own io_uring engine (the floor)
# Prints one JSON document: IOPS and mean latency of each run, the medians
# over the repeats, the ratios the targets are stated in (of the medians), and
# the load average (the machine may be shared).
#
# Usage: capi/bench/fio.sh [--rw randread|randwrite] [--runtime SECONDS] [--repeat N] [--dir DIR] [--lib PATH]
#   --rw       the workload (default randread; the targets are stated for it)
#   --runtime  seconds per fio run (default 5)
#   --repeat   rounds of all six runs, interleaved (default 3)
#   --dir      where the 256 MiB file goes (default: a new temporary directory)
#   --lib      libposixrt.so to preload (default: target/release/libposixrt.so,
#              built first with `cargo build --release -p posixrt-capi`)
# fio is installed with apt-get (Debian's package) when missing.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
runtime=5
repeat=3
rw=randread
dir=""
lib=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runtime|--repeat|--dir|--lib|--rw)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "fio.sh: $1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --runtime) runtime=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --rw) rw=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fio.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$rw" in
  randread|randwrite) ;;
  *) echo "fio.sh: --rw is randread or randwrite, not '$rw' (see --help)" >&2; exit 2 ;;
esac
case "$runtime" in
  ''|*[!0-9]*|0*) echo "fio.sh: --runtime needs a whole number of 1 or more, not '$runtime' (see --help)" >&2; exit 2 ;;
esac
case "$repeat" in
  ''|*[!0-9]*|0*) echo "fio.sh: --repeat needs a whole number of 1 or more, not '$repeat' (see --help)" >&2; exit 2 ;;
esac

if ! command -v fio >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "fio.sh: fio is not installed (apt-get install fio as root)" >&2
    exit 1
  fi
  echo "fio.sh: installing fio" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >&2
fi

# shellcheck source=lib.sh
. "$root/capi/bench/lib.sh"
lib=$(bench_lib "$root" "$lib")

made_dir=""
if [ -z "$dir" ]; then
  dir=$(mktemp -d)
  made_dir=$dir
fi
file="$dir/posixrt-fio.dat"
cleanup() { rm -f "$file"; [ -n "$made_dir" ] && rmdir "$made_dir" 2>/dev/null; true; }
trap cleanup EXIT

# The file, written once and read once so it sits in the page cache.
if [ ! -e "$file" ] || [ "$(stat -c %s "$file")" != 268435456 ]; then
  head -c 268435456 /dev/urandom >"$file"
fi
cat "$file" >/dev/null

# One fio run; prints "IOPS MEAN_LATENCY_US" (terse v3: fields 8 and 40 are
# the read IOPS and mean total latency in microseconds, 49 and 81 the write
# ones).
run() {
  local engine=$1 qd=$2 preload=${3:-}
  local out
  out=$(env ${preload:+LD_PRELOAD="$preload"} fio --name="$rw" --filename="$file" \
    --rw="$rw" --bs=4k --size=256m --invalidate=0 --ioengine="$engine" \
    --iodepth="$qd" --time_based --runtime="$runtime" --ramp_time=1 \
    --output-format=terse --terse-version=3 2>/dev/null | tail -1)
  if [ "$rw" = randread ]; then
    echo "$out" | awk -F';' '{ printf "%s %s\n", $8, $40 }'
  else
    echo "$out" | awk -F';' '{ printf "%s %s\n", $49, $81 }'
  fi
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
results=()
declare -A iops lat
for rep in $(seq 1 "$repeat"); do
  for qd in 1 32; do
    for mode in posixaio posixaio+preload io_uring; do
      case $mode in
        posixaio) r=$(run posixaio "$qd") ;;
        posixaio+preload) r=$(run posixaio "$qd" "$lib") ;;
        io_uring) r=$(run io_uring "$qd") ;;
      esac
      read -r i l <<<"$r"
      iops[$mode,$qd]+="$i "
      lat[$mode,$qd]+="$l "
      results+=("{\"round\": $rep, \"engine\": \"$mode\", \"qd\": $qd, \"iops\": $i, \"lat_mean_us\": $l, \"load1\": $(cut -d' ' -f1 /proc/loadavg)}")
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A med medlat
for qd in 1 32; do
  for mode in posixaio posixaio+preload io_uring; do
    med[$mode,$qd]=$(echo "${iops[$mode,$qd]}" | median)
    medlat[$mode,$qd]=$(echo "${lat[$mode,$qd]}" | median)
  done
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "null" }'; }
{
  echo "{"
  echo "  \"bench\": \"fio 4k $rw, cached 256 MiB file, --invalidate=0, ${runtime}s per run, $repeat interleaved rounds\","
  echo "  \"fio\": \"$(fio --version)\","
  echo "  \"nproc\": $(nproc),"
  echo "  \"load_avg_before\": \"$load\","
  echo "  \"load_avg_after\": \"$load_after\","
  echo "  \"runs\": ["
  n=${#results[@]}
  for k in "${!results[@]}"; do
    sep=","; [ "$k" = $((n - 1)) ] && sep=""
    echo "    ${results[$k]}$sep"
  done
  echo "  ],"
  echo "  \"medians\": ["
  for qd in 1 32; do
    for mode in posixaio posixaio+preload io_uring; do
      sep=","; [ "$qd,$mode" = "32,io_uring" ] && sep=""
      echo "    {\"engine\": \"$mode\", \"qd\": $qd, \"iops\": ${med[$mode,$qd]}, \"lat_mean_us\": ${medlat[$mode,$qd]}}$sep"
    done
  done
  echo "  ],"
  echo "  \"ratios\": {"
  echo "    \"qd1_preload_vs_glibc_iops\": $(ratio "${med[posixaio+preload,1]}" "${med[posixaio,1]}"),"
  echo "    \"qd1_preload_vs_io_uring_iops\": $(ratio "${med[posixaio+preload,1]}" "${med[io_uring,1]}"),"
  echo "    \"qd32_preload_vs_glibc_iops\": $(ratio "${med[posixaio+preload,32]}" "${med[posixaio,32]}"),"
  echo "    \"qd32_preload_vs_io_uring_iops\": $(ratio "${med[posixaio+preload,32]}" "${med[io_uring,32]}")"
  echo "  },"
  if [ "$rw" = randread ]; then
    echo "  \"targets\": {\"qd1_vs_glibc\": 3.0, \"qd1_vs_io_uring\": 0.8, \"qd32_vs_glibc\": 1.2, \"qd32_vs_io_uring\": 0.9}"
  else
    echo "  \"targets\": null"
  fi
  echo "}"
}
