#!/bin/sh
# test_check_layers.sh — scripts/check-layers.sh catches what it is for, on
# a small made-up tree: a core object calling an io function, an io object
# calling a runtime one, a relative include, a core source including an io
# header, a public header declaring a core and an io function, a non-pfi_
# export, an export no header declares and a declared function the library
# lacks. Each is named in one line, and a clean tree passes.
. "$SRC/tests/cli/lib.sh"
S="$T/src" B="$T/build"
mkdir -p "$S/include/pfi" "$S/src/core" "$S/src/io" "$S/src/runtime" "$S/src/report" "$B"
cat >"$S/include/pfi/thing.h" <<'H'
#define PFI_API __attribute__((visibility("default")))
PFI_API int pfi_thing(int x);
H
printf '#include "pfi/thing.h"\nint pfi_core_fn(int x) { return x; }\nint pfi_thing(int x) { return x; }\n' >"$S/src/core/core.c"
printf '#include "pfi/thing.h"\nint pfi_io_fn(int x) { return x + 1; }\n' >"$S/src/io/io.c"
printf 'int pfi_rt_fn(int x) { return x + 2; }\n' >"$S/src/runtime/rt.c"
build() {
  for l in core io runtime; do
    cc -c -fPIC -fvisibility=hidden -I"$S/include" -o "$B/$l.o" "$S/src/$l/"*.c || fail "compile $l"
    rm -f "$B/libpfi_$l.a"; ar rcs "$B/libpfi_$l.a" "$B/$l.o"
  done
  cc -shared -o "$B/libpfi.so" "$B/core.o" "$B/io.o" || fail "link"
}
check() { sh "$SRC/scripts/check-layers.sh" "$B" "$S" >"$T/out" 2>&1; }
build
check || { cat "$T/out" >&2; fail "a clean tree fails"; }; ok
# core calls io; io calls runtime
printf '#include "pfi/thing.h"\nint pfi_io_fn(int);\nint pfi_core_fn(int x) { return pfi_io_fn(x); }\nint pfi_thing(int x) { return x; }\n' >"$S/src/core/core.c"
printf '#include "pfi/thing.h"\nint pfi_rt_fn(int);\nint pfi_io_fn(int x) { return pfi_rt_fn(x); }\n' >"$S/src/io/io.c"
build
! check || fail "layer violations pass"; ok
contains "$T/out" "core object core.o: references pfi_io_fn, defined in io"
contains "$T/out" "io object io.o: references pfi_rt_fn, defined in runtime"
# includes: relative, and core including an io header
printf 'int pfi_io_fn(int x);\n' >"$S/src/io/io.h"
printf '#include "pfi/thing.h"\n#include "../io/io.h"\n#include "io.h"\nint pfi_core_fn(int x) { return x; }\nint pfi_thing(int x) { return x; }\n' >"$S/src/core/core.c"
printf '#include "pfi/thing.h"\nint pfi_io_fn(int x) { return x + 1; }\n' >"$S/src/io/io.c"
printf 'int pfi_core_fn(int x);\n' >"$S/src/core/io.h" # so that it compiles; the check looks at the tree
build
rm "$S/src/core/io.h"
! check || fail "include violations pass"; ok
contains "$T/out" "src/core/core.c:2: includes ../io/io.h by a relative path"
contains "$T/out" "src/core/core.c:3: includes io.h, which is not in include/pfi src/core"
# a public header declaring a core function beside an io one
cp "$S/include/pfi/thing.h" "$T/thing.h"
printf 'PFI_API int pfi_io_fn(int x);\n' >>"$S/include/pfi/thing.h"
printf '#include "pfi/thing.h"\nint pfi_core_fn(int x) { return x; }\nint pfi_thing(int x) { return x; }\n' >"$S/src/core/core.c"
build
! check || fail "a public header of two layers passes"; ok
contains "$T/out" "include/pfi/thing.h declares functions of core (pfi_thing) and of io (pfi_io_fn): one public header per layer"
cp "$T/thing.h" "$S/include/pfi/thing.h"
# exports: a non-pfi_ symbol, an undeclared pfi_ one, a declared one missing
printf '#include "pfi/thing.h"\n__attribute__((visibility("default"))) int helper(int x) { return x; }\n__attribute__((visibility("default"))) int pfi_secret(int x) { return x; }\n' >"$S/src/core/core.c"
printf 'int pfi_io_fn(int x) { return x + 1; }\n' >"$S/src/io/io.c"
build
! check || fail "export violations pass"; ok
contains "$T/out" "libpfi.so exports helper: not pfi_-prefixed"
contains "$T/out" "libpfi.so exports pfi_secret, which no public header declares PFI_API"
contains "$T/out" "a public header declares pfi_thing PFI_API, but libpfi.so does not export it"
done_ok
