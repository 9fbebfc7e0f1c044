#!/bin/sh
# make-deb.sh — build the Debian packages (docs/packaging.md) in a build
# directory of their own: configured for /usr (the data path compiled into
# pfi), /etc and the multiarch libdir (the SPANK plugin's path in
# pfi-spank(8)) and Debian's layout (PFI_DEB: man pages gzip -9n, each
# package's copyright and changelog.Debian.gz), built without tests,
# packaged by CPack's DEB generator
# (packaging/deb.cmake). The packages land in DIR/packages/ (old ones are
# removed first); their names are printed. `make deb` and
# tests/cli/test_deb.sh run it.
#
#   scripts/make-deb.sh [DIR]      (default build-deb; JOBS, CMAKE_FLAGS as make's)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build-deb}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
command -v dpkg-shlibdeps >/dev/null || { echo "make-deb: dpkg-shlibdeps is missing: install the Debian package dpkg-dev (scripts/bootstrap.sh deb)" >&2; exit 1; }
command -v file >/dev/null || { echo "make-deb: file is missing: install the Debian package file (CPack's DEB generator needs it for shlibdeps; scripts/bootstrap.sh deb)" >&2; exit 1; }
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
# shellcheck disable=SC2086 # CMAKE_FLAGS is a list of options
cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPFI_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_INSTALL_LIBDIR="lib/$multiarch" -DCMAKE_INSTALL_SYSCONFDIR=/etc -DPFI_DEB=ON ${CMAKE_FLAGS:-} >"$dir.configure.log" 2>&1 ||
  { cat "$dir.configure.log" >&2; exit 1; }
rm -f "$dir.configure.log"
cmake --build "$dir" -j "$jobs" -- --no-print-directory >"$dir/build.log" 2>&1 || { tail -n 40 "$dir/build.log" >&2; exit 1; }
rm -rf "$dir/packages"
(cd "$dir" && cpack -G DEB >cpack.log 2>&1) || { tail -n 40 "$dir/cpack.log" >&2; exit 1; }
ls "$dir"/packages/*.deb
