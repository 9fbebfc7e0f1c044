#!/bin/sh
# test_install.sh — `make install PREFIX=...` equivalent: the binaries, the
# Slurm plugin, the shared library (no static archive), the public headers
# only, pkg-config file, man pages, systemd units, the /etc samples and the
# docs land under the prefix; every installed
# header compiles on its own; a program that includes every installed header
# and takes the address of every function they declare links against the
# installed library through pkg-config only; one computes Eq. 1.
. "$(dirname "$0")/lib.sh"
: "${BUILD:?}"
# under DESTDIR: a build configured for prefix /usr (make install
# PREFIX=/usr) installs its /etc files at the absolute /etc, which must not
# be this machine's
D="$T/root"
P="$D/prefix"
DESTDIR="$D" cmake --install "$BUILD" --prefix /prefix >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "install failed"; }
ok
for f in bin/pfi sbin/pfi-agent sbin/pfi-controller include/pfi/pfi.h include/pfi/curve.h include/pfi/version.h \
  share/man/man1/pfi.1 share/man/man8/pfi-agent.8 share/man/man8/pfi-controller.8 share/man/man8/pfi-spank.8 \
  share/man/man5/pfi-controller.json.5 lib/systemd/system/pfi-agent.service lib/systemd/system/pfi-controller.service \
  share/doc/pfi/README.md share/doc/pfi/LICENSE share/doc/pfi/docs/agent.md; do
  [ -f "$P/$f" ] || fail "missing $f"; ok
done
# the /etc samples: PREFIX/etc, or /etc for prefix /usr
for f in etc/default/pfi-agent etc/pfi/controller.json etc/pfi/pfi.conf; do
  [ -f "$P/$f" ] || [ -f "$D/$f" ] || fail "missing $f"; ok
done
# the libdir: lib, lib64 or lib/<multiarch> (GNUInstallDirs for prefix /usr)
L=$(dirname "$(find "$P/lib"* -name libpfi.so | head -n 1)")
[ -f "$L/libpfi.so.1" ] || fail "no shared library"; ok
# the Slurm plugin, when Slurm's headers were there at build time
if [ -n "${PFI_SPANK:-}" ]; then [ -f "$L/pfi/spank_pfi.so" ] || fail "no SPANK plugin installed"; ok; fi
"$P/sbin/pfi-controller" --version | grep -q '^pfi-controller ' || fail "installed pfi-controller"; ok
[ ! -e "$L/libpfi.a" ] || fail "static archive installed (it cannot hide internal symbols)"; ok
# only the public API: include/pfi/ of the source tree, nothing internal
inst=$(cd "$P/include/pfi" && ls *.h | grep -v '^version.h$' | sort | tr '\n' ' ')
srch=$(cd "$SRC/include/pfi" && ls *.h | sort | tr '\n' ' ')
[ "$inst" = "$srch" ] || fail "installed headers differ from include/pfi: $inst"; ok
for h in gpu.h httpd.h lease.h util.h num.h datapath.h; do
  [ ! -e "$P/include/pfi/$h" ] || fail "internal header $h installed"; ok
done
pc=$L/pkgconfig/pfi.pc
[ -f "$pc" ] || fail "no pfi.pc"; ok
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
    pfi_curve_dispose(&c);
    return 0;
}
C
# outside sanitizer builds only: an instrumented library needs the sanitizer runtime
if [ "${PFI_SANITIZED:-0}" != "1" ]; then
  PKG_CONFIG_PATH=$(dirname "$pc") cc -o "$T/eq1" "$T/eq1.c" $(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs pfi) \
    -Wl,-rpath,"$(dirname "$(dirname "$pc")")" || fail "compile against installed libpfi"
  ok
  [ "$("$T/eq1")" = "2.500" ] || fail "installed libpfi computes Eq. 1 wrong"; ok
  PCP=$(dirname "$pc")
  cflags=$(PKG_CONFIG_PATH=$PCP pkg-config --cflags pfi)
  libs=$(PKG_CONFIG_PATH=$PCP pkg-config --libs pfi)
  # each installed header compiles on its own (C and C++)
  for h in "$P"/include/pfi/*.h; do
    printf '#include <pfi/%s>\n' "$(basename "$h")" >"$T/one.c"
    cc -std=c17 -Wall -Wextra -Werror -fsyntax-only $cflags "$T/one.c" 2>"$T/one.err" ||
      { cat "$T/one.err"; fail "$(basename "$h") does not compile on its own"; }
  done
  ok
  # every function an installed header declares is in the installed library
  : >"$T/all.c"
  for h in "$P"/include/pfi/*.h; do printf '#include <pfi/%s>\n' "$(basename "$h")" >>"$T/all.c"; done
  syms=$(cat "$P"/include/pfi/*.h | tr '\n' ' ' | sed 's/;/;\n/g' | grep 'PFI_API' |
    sed -n 's/.*[^A-Za-z0-9_]\(pfi_[A-Za-z0-9_]*\)[[:space:]]*[[(;].*/\1/p' | sort -u)
  n=$(printf '%s\n' $syms | wc -l)
  [ "$n" -gt 100 ] || fail "only $n API symbols found in the installed headers"; ok
  { printf '#include <stdio.h>\nstatic const void *api[] = {\n'
    for f in $syms; do printf '    (const void *)&%s,\n' "$f"; done
    printf '};\nint main(void) { printf("%%zu\\n", sizeof api / sizeof api[0]); return 0; }\n'; } >>"$T/all.c"
  cc -std=c17 -o "$T/all" "$T/all.c" $cflags $libs -Wl,-rpath,"$(dirname "$PCP")" -Wl,--no-undefined 2>"$T/all.err" ||
    { cat "$T/all.err"; fail "a program using every installed header does not link through pkg-config"; }
  [ "$("$T/all")" = "$n" ] || fail "API program"; ok
  # the library exports only pfi_ symbols
  other=$(nm -D --defined-only "$L/libpfi.so" | awk '{print $3}' | grep -v '^pfi_' | grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' || true)
  [ -z "$other" ] || fail "libpfi.so exports non-pfi_ symbols: $other"; ok
fi
done_ok
