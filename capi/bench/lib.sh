# Shared by the capi bench scripts (sourced, not run).

# The libposixrt.so a bench preloads: $2 if given (--lib), else
# $1/target/release/libposixrt.so, built first (always: a no-op when fresh,
# and a stale library must not be measured). Prints the path; fails if the
# library is not there.
bench_lib() {
  local root=$1 lib=${2:-}
  if [ -z "$lib" ]; then
    lib="$root/target/release/libposixrt.so"
    (cd "$root" && cargo build --release -p posixrt-capi >&2)
  fi
  [ -e "$lib" ] || { echo "no $lib" >&2; return 1; }
  printf '%s\n' "$lib"
}
