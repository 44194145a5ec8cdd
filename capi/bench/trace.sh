#!/usr/bin/env bash
# The C side of POSIX trace against the Rust side, in one run:
#  - posix_trace_event from C (capi/bench/trace_event.c, linked with -lposixrt)
#    against posixrt::trace::event from Rust (the example trace_overhead), both
#    with 8 bytes of data into a running stream, a stopped one, and filtered out;
#    runs interleaved, medians of the runs, ratio C / Rust (target <= 1.2 running);
#  - the interposed pthread_mutex_lock/unlock (capi/bench/trace_mutex.c, built
#    against glibc only) plain and under LD_PRELOAD=libposixrt.so with no stream
#    running: the added ns per lock (target <= 2 ns), and with a stream recording
#    the mutex events.
# Prints one JSON line with the load average.
#
# Usage: capi/bench/trace.sh [--runs N]   (default 7)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
runs=7
while [ $# -gt 0 ]; do
  case "$1" in
    --runs)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "trace.sh: $1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "trace.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$runs" in
  ''|*[!0-9]*|0*) echo "trace.sh: --runs needs a whole number of 1 or more, not '$runs' (see --help)" >&2; exit 2 ;;
esac

# shellcheck source=lib.sh
. "$root/capi/bench/lib.sh"
rel=$(bench_target_dir "$root")
(cd "$root" && cargo build --release -p posixrt-capi --lib >&2 &&
  cargo build --release -p posixrt --example trace_overhead >&2)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cc -std=c99 -O2 -Wall -Wextra -I"$root/capi/include" -o "$dir/trace_event" \
  "$root/capi/bench/trace_event.c" -L"$rel" -lposixrt -Wl,-rpath,"$rel"
cc -std=c99 -O2 -Wall -Wextra -o "$dir/trace_mutex" "$root/capi/bench/trace_mutex.c" -lpthread -ldl

field() { sed -E "s/.*\"$1\": ?([0-9.]+).*/\1/"; }
: >"$dir/r"
for i in $(seq 1 "$runs"); do
  rs=$("$rel/examples/trace_overhead" --json --events 1000000)
  c=$("$dir/trace_event" --events 1000000)
  plain=$("$dir/trace_mutex")
  pre=$(LD_PRELOAD="$rel/libposixrt.so" "$dir/trace_mutex")
  rec=$(LD_PRELOAD="$rel/libposixrt.so" "$dir/trace_mutex" --stream)
  echo "$(echo "$rs" | field running_ns) $(echo "$rs" | field stopped_ns) $(echo "$rs" | field filtered_ns)" \
    "$(echo "$c" | field running_ns) $(echo "$c" | field stopped_ns) $(echo "$c" | field filtered_ns)" \
    "$(echo "$plain" | field pair_ns) $(echo "$pre" | field pair_ns) $(echo "$rec" | field pair_ns)" >>"$dir/r"
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$dir/r" "$runs" "$load" <<'PY'
import json, statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
m = [statistics.median(c) for c in zip(*rows)]
r_run, r_stop, r_filt, c_run, c_stop, c_filt, plain, pre, rec = m
print(json.dumps({
    "runs": int(sys.argv[2]),
    "rust_event_ns": {"running": r_run, "stopped": r_stop, "filtered": r_filt},
    "c_event_ns": {"running": c_run, "stopped": c_stop, "filtered": c_filt},
    "c_over_rust": {"running": round(c_run / r_run, 3), "stopped": round(c_stop / r_stop, 3),
                    "filtered": round(c_filt / r_filt, 3)},
    "mutex_pair_ns": {"glibc": plain, "preloaded_no_stream": pre, "preloaded_recording": rec},
    "mutex_added_ns_per_call_no_stream": round((pre - plain) / 2, 3),
    "loadavg": sys.argv[3],
}))
PY
