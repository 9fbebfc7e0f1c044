#!/bin/sh
# test_install.sh — `make install PREFIX=...` equivalent: the binaries, the
# Slurm plugin, the shared and static library, headers, pkg-config file and
# man pages land under the prefix, and a program compiled against the installed library
# through pkg-config computes Eq. 1.
. "$(dirname "$0")/lib.sh"
: "${BUILD:?}"
P="$T/prefix"
cmake --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "install failed"; }
ok
for f in bin/pfi sbin/pfi-agent sbin/pfi-controller include/pfi/pfi.h include/pfi/curve.h include/pfi/version.h \
  share/man/man1/pfi.1 share/man/man8/pfi-agent.8 share/man/man8/pfi-controller.8 share/man/man8/pfi-spank.8; do
  [ -f "$P/$f" ] || fail "missing $f"; ok
done
ls "$P"/lib*/libpfi.so* >/dev/null 2>&1 || fail "no shared library"; ok
# the Slurm plugin, when Slurm's headers were there at build time
if [ -n "${PFI_SPANK:-}" ]; then ls "$P"/lib*/pfi/spank_pfi.so >/dev/null 2>&1 || fail "no SPANK plugin installed"; ok; fi
"$P/sbin/pfi-controller" --version | grep -q '^pfi-controller ' || fail "installed pfi-controller"; ok
ls "$P"/lib*/libpfi.a >/dev/null 2>&1 || fail "no static library"; ok
pc=$(ls "$P"/lib*/pkgconfig/pfi.pc) || fail "no pfi.pc"; ok
"$P/bin/pfi" --version | grep -q '^pfi ' || fail "installed binary"; ok
cat >"$T/eq1.c" <<'C'
#include <math.h>
#include <stdio.h>
#include <pfi/pfi.h>
int main(void) {
    pfi_point pts[2] = {{600, 950, 98, NAN, NAN, 1}, {700, 1000, 100, NAN, NAN, 1}};
    pfi_curve c;
    if (pfi_curve_init(&c, pts, 2, NULL) != PFI_OK) return 1;
    pfi_eq1_result r;
    pfi_eq1(&c, &r);
    printf("%.3f\n", r.pfi);
    pfi_curve_free(&c);
    return 0;
}
C
# outside sanitizer builds only: an instrumented library needs the sanitizer runtime
if [ "${PFI_SANITIZED:-0}" != "1" ]; then
  PKG_CONFIG_PATH=$(dirname "$pc") cc -o "$T/eq1" "$T/eq1.c" $(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs pfi) \
    -Wl,-rpath,"$(dirname "$(dirname "$pc")")" || fail "compile against installed libpfi"
  ok
  [ "$("$T/eq1")" = "2.500" ] || fail "installed libpfi computes Eq. 1 wrong"; ok
fi
done_ok
