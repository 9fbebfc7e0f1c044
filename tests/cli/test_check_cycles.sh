#!/bin/sh
# test_check_cycles.sh — scripts/check-cycles.py finds a circle: two files
# of a daemon folder that call each other fail it, naming both and a symbol
# on each edge; the same files calling one way pass; a nested build's
# stale objects (BUILD/deb) are not read.
. "$SRC/tests/cli/lib.sh"
mkdir -p "$T/s/src/daemon/agent" "$T/b/CMakeFiles/x.dir/src/daemon/agent"
printf 'int b_fn(void);\nint a_fn(void) { return b_fn(); }\n' >"$T/s/src/daemon/agent/a.c"
printf 'int a_fn(void);\nint b_fn(void) { return a_fn() + 1; }\n' >"$T/s/src/daemon/agent/b.c"
for f in a b; do cc -c -o "$T/b/CMakeFiles/x.dir/src/daemon/agent/$f.c.o" "$T/s/src/daemon/agent/$f.c" || fail "cc $f"; done
expect_status 1 python3 "$SRC/scripts/check-cycles.py" "$T/b" "$T/s"
contains "$T/err" "src/daemon/agent: a circle of 2 files: a.c -> b.c (b_fn); b.c -> a.c (a_fn)"
# one way only: no circle
printf 'int b_fn(void) { return 1; }\n' >"$T/s/src/daemon/agent/b.c"
cc -c -o "$T/b/CMakeFiles/x.dir/src/daemon/agent/b.c.o" "$T/s/src/daemon/agent/b.c" || fail "cc b"
mkdir -p "$T/b/deb/CMakeFiles/x.dir/src/daemon/agent"
printf 'int a_fn(void);\nint b_fn(void) { return a_fn(); }\n' >"$T/old_b.c"
cc -c -o "$T/b/deb/CMakeFiles/x.dir/src/daemon/agent/b.c.o" "$T/old_b.c" || fail "cc old b"
expect_status 0 python3 "$SRC/scripts/check-cycles.py" "$T/b" "$T/s"
contains "$T/out" "check-cycles: no circles in src/daemon/agent"
done_ok
