#!/usr/bin/env bash
# Installs libposixrt.so, libposixrt.a, trace.h and posixrt.pc (pkg-config).
#
# Usage: capi/install.sh [--prefix DIR] [--libdir DIR] [--includedir DIR] [--profile release|debug]
#   --prefix      default /usr/local
#   --libdir      default PREFIX/lib
#   --includedir  default PREFIX/include (trace.h; AIO uses the system <aio.h>)
#   --profile     which build to install (default release; built if missing)
# DESTDIR and CARGO_TARGET_DIR are honoured.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=/usr/local
libdir=""
includedir=""
profile=release
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix|--libdir|--includedir|--profile)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "install.sh: $1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --libdir) libdir=$2; shift 2 ;;
    --includedir) includedir=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$profile" in release|debug) ;; *) echo "install.sh: --profile is release or debug, not '$profile' (see --help)" >&2; exit 2 ;; esac
libdir=${libdir:-$prefix/lib}
includedir=${includedir:-$prefix/include}
target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target="$root/$target" ;; esac
build="$target/$profile"
if [ ! -e "$build/libposixrt.so" ] || [ ! -e "$build/libposixrt.a" ]; then
  flag=""; [ "$profile" = release ] && flag=--release
  (cd "$root" && cargo build $flag -p posixrt-capi)
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/capi/Cargo.toml" | head -1)
dest="${DESTDIR:-}$libdir"
incdest="${DESTDIR:-}$includedir"
mkdir -p "$dest/pkgconfig" "$incdest"
install -m 755 "$build/libposixrt.so" "$dest/libposixrt.so"
install -m 644 "$build/libposixrt.a" "$dest/libposixrt.a"
install -m 644 "$root/capi/include/trace.h" "$incdest/trace.h"
sed -e "s|@PREFIX@|$prefix|" -e "s|@LIBDIR@|$libdir|" -e "s|@INCLUDEDIR@|$includedir|" \
  -e "s|@VERSION@|$version|" "$root/capi/posixrt.pc.in" >"$dest/pkgconfig/posixrt.pc"
echo "installed libposixrt.so, libposixrt.a and pkgconfig/posixrt.pc in $dest, trace.h in $incdest"
