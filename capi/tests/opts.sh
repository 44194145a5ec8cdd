#!/usr/bin/env bash
# Runs Open POSIX Test Suite conformance tests (from an LTP checkout, not part
# of this repository; by default the AIO interfaces) against glibc and
# libposixrt, and prints one line per test: glibc, LD_PRELOAD on io_uring,
# LD_PRELOAD on the thread engine, linked with -lposixrt on io_uring and on
# the thread engine. A test that defines test_main() instead of main() (the
# newer ones, which LTP's own harness starts) gets a main() that calls it. Besides
# aio_*, libposixrt interposes pthread_mutex_{lock,trylock,unlock} and the
# signal calls (kill, sigqueue, pthread_kill, pthread_sigqueue, sigwait,
# sigwaitinfo, sigtimedwait): --ifaces runs their directories too. Verdicts
# are the tests' exit codes (posixtest.h): PASS 0, FAIL 1, UNRES 2, UNSUP 4,
# UNTEST 5; HANG is the timeout. With --runs N each test runs N times and a
# cell lists every verdict seen with its count. A line where glibc passed every run and libposixrt did
# not is marked "<--".
#
# usage: capi/tests/opts.sh OPTS_DIR [--lib DIR] [--runs N] [--timeout S] [--only REGEX]
#                                   [--ifaces LIST] [--cflags FLAGS]
#   OPTS_DIR  testcases/open_posix_testsuite of an LTP checkout
#   --lib     the directory holding libposixrt.so (default: cargo's release
#             directory: $CARGO_TARGET_DIR/release if set, else target/release)
#   --only    run only the tests whose "interface/name" matches REGEX
#   --ifaces  the interface directories to run (under conformance/interfaces),
#             separated by commas or spaces (default: the AIO ones); "interposed"
#             names the mutex and signal interfaces libposixrt interposes
#   --cflags  more compiler flags for the tests (e.g. "-include FILE" with a
#             .symver line, to build them against an older symbol version)
set -u
case "${1:-}" in
  -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
if [ $# -lt 1 ]; then
    echo "opts.sh: OPTS_DIR is needed: testcases/open_posix_testsuite of an LTP checkout (see --help)" >&2
    exit 2
fi
opts=$1
shift
here=$(cd "$(dirname "$0")/../.." && pwd)
# The library cargo builds, also under CARGO_TARGET_DIR (as the benches find it).
# shellcheck source=../bench/lib.sh
. "$here/capi/bench/lib.sh"
lib=$(bench_target_dir "$here")
runs=1
limit=30
only=
aio_ifaces="aio_cancel aio_error aio_fsync aio_read aio_return aio_suspend aio_write lio_listio"
interposed="kill sigqueue pthread_kill sigwait sigwaitinfo sigtimedwait pthread_mutex_lock pthread_mutex_trylock pthread_mutex_unlock"
ifaces=$aio_ifaces
extra=
while [ $# -gt 0 ]; do
    case $1 in
    --lib|--runs|--timeout|--only|--ifaces|--cflags)
        [ $# -ge 2 ] && [ -n "$2" ] || { echo "opts.sh: $1 needs a value (see --help)" >&2; exit 2; } ;;
    esac
    case $1 in
    --lib) lib=$(cd "$2" 2>/dev/null && pwd) || { echo "opts.sh: --lib $2: no such directory" >&2; exit 2; }; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --ifaces) ifaces=${2//,/ }; shift 2 ;;
    --cflags) extra=$2; shift 2 ;;
    *) echo "opts.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $runs in
''|*[!0-9]*|0*) echo "opts.sh: --runs needs a whole number of 1 or more, not '$runs' (see --help)" >&2; exit 2 ;;
esac
case $limit in
''|*[!0-9]*|0*) echo "opts.sh: --timeout needs a whole number of seconds, 1 or more, not '$limit' (see --help)" >&2; exit 2 ;;
esac
[ -f "$lib/libposixrt.so" ] || { echo "no $lib/libposixrt.so (cargo build --release -p posixrt-capi)" >&2; exit 2; }
[ -d "$opts/conformance/interfaces" ] && [ -f "$opts/include/posixtest.h" ] ||
    { echo "$opts is not open_posix_testsuite" >&2; exit 2; }
ifaces=${ifaces//interposed/$interposed}
for iface in $ifaces; do
    [ -d "$opts/conformance/interfaces/$iface" ] || { echo "no interface directory $iface" >&2; exit 2; }
done

work=$(mktemp -d /tmp/posixrt-opts.XXXXXX)
trap 'rm -rf "$work"' EXIT
verdict() {
    case $1 in
    0) echo PASS ;; 1) echo FAIL ;; 2) echo UNRES ;; 4) echo UNSUP ;; 5) echo UNTEST ;;
    124 | 137) echo HANG ;;
    *) if [ "$1" -gt 128 ]; then echo "SIG$(($1 - 128))"; else echo "rc$1"; fi ;;
    esac
}
# one run of $2 (an executable) in mode $1; prints the verdict
run_one() {
    local dir
    dir=$(mktemp -d "$work/run.XXXXXX")
    (
        cd "$dir" || exit 2
        export TMPDIR=$dir
        case $1 in
        glibc) timeout -k 5 "$limit" "$2" ;;
        uring) POSIXRT_AIO_BACKEND=uring LD_PRELOAD=$lib/libposixrt.so timeout -k 5 "$limit" "$2" ;;
        threads) POSIXRT_AIO_BACKEND=threads LD_PRELOAD=$lib/libposixrt.so timeout -k 5 "$limit" "$2" ;;
        linked) POSIXRT_AIO_BACKEND=uring timeout -k 5 "$limit" "$2.linked" ;;
        linked-threads) POSIXRT_AIO_BACKEND=threads timeout -k 5 "$limit" "$2.linked" ;;
        esac
    ) >"$dir.out" 2>&1
    verdict $?
    rm -rf "$dir" "$dir.out"
}
# the verdicts of $runs runs, as "V" or "V:n/W:m" (most frequent first)
cell() {
    local i out=()
    for ((i = 0; i < runs; i++)); do out+=("$(run_one "$1" "$2")"); done
    printf '%s\n' "${out[@]}" | sort | uniq -c | sort -rn |
        awk -v n="$runs" '{ c[NR] = $2 ":" $1; v[NR] = $2 } END {
            if (NR == 1) { print v[1]; exit }
            s = c[1]; for (i = 2; i <= NR; i++) s = s "/" c[i]; print s }'
}

# main() for a test that has only test_main() (LTP's harness provides one).
shim=$work/test_main.c
printf '%s\n' 'int test_main(int, char **);' \
    'int main(int argc, char **argv) { return test_main(argc, argv); }' >"$shim"
printf '%-28s %-14s %-14s %-14s %-14s %-14s\n' test glibc preload-uring preload-thr linked-uring linked-thr
for iface in $ifaces; do
    for src in $(ls "$opts/conformance/interfaces/$iface"/*.c | sort -V); do
        name=$iface/$(basename "$src" .c)
        [ -n "$only" ] && ! [[ $name =~ $only ]] && continue
        exe=$work/${iface}_$(basename "$src" .c)
        # shellcheck disable=SC2206 # --cflags is split into words on purpose
        cflags=(-D_GNU_SOURCE -I"$opts/include" -pthread -w $extra)
        srcs=("$src")
        if ! grep -qE '^[[:space:]]*int[[:space:]]+main[[:space:]]*\(' "$src" &&
            grep -qE 'int[[:space:]]+test_main[[:space:]]*\(' "$src"; then
            srcs+=("$shim")
        fi
        if ! cc "${cflags[@]}" -o "$exe" "${srcs[@]}" -lrt 2>/dev/null ||
            ! cc "${cflags[@]}" -o "$exe.linked" "${srcs[@]}" -L"$lib" -lposixrt -Wl,-rpath,"$lib" -lrt 2>/dev/null; then
            printf '%-28s build failed\n' "$name"
            continue
        fi
        g=$(cell glibc "$exe")
        u=$(cell uring "$exe")
        t=$(cell threads "$exe")
        l=$(cell linked "$exe")
        lt=$(cell linked-threads "$exe")
        mark=
        if [ "$g" = PASS ] && { [ "$u" != PASS ] || [ "$t" != PASS ] || [ "$l" != PASS ] || [ "$lt" != PASS ]; }; then
            mark=" <--"
        fi
        printf '%-28s %-14s %-14s %-14s %-14s %-14s%s\n' "$name" "$g" "$u" "$t" "$l" "$lt" "$mark"
    done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
