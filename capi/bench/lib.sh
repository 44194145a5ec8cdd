# Shared by the capi bench scripts (sourced, not run).

# The release directory cargo builds into for the workspace at $1:
# $CARGO_TARGET_DIR/release (relative to $1, where the scripts run cargo) if
# it is set, else $1/target/release.
bench_target_dir() {
  local root=$1 target=${CARGO_TARGET_DIR:-}
  case "$target" in
    '') target="$root/target" ;;
    /*) ;;
    *) target="$root/$target" ;;
  esac
  printf '%s\n' "$target/release"
}

# The libposixrt.so a bench preloads: $2 if given (--lib), else the one in
# bench_target_dir, built first (always: a no-op when fresh, and a stale
# library must not be measured). Prints the path; fails if the library is not
# there.
bench_lib() {
  local root=$1 lib=${2:-}
  if [ -z "$lib" ]; then
    lib="$(bench_target_dir "$root")/libposixrt.so"
    (cd "$root" && cargo build --release -p posixrt-capi >&2)
  fi
  [ -e "$lib" ] || { echo "no $lib" >&2; return 1; }
  printf '%s\n' "$lib"
}
