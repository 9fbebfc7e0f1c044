#!/bin/sh
# test_check_function_length.sh — scripts/check-function-length.sh catches
# what it is for, on a small made-up tree: a 100-line function passes, a
# 101-line one in src/core and one in src/daemon fail, named FILE:LINE with
# the function and its length; a function declared on several lines is
# named by its signature; an exemption lets its function through, and an
# exemption that no longer matches is named without failing.
. "$SRC/tests/cli/lib.sh"
S="$T/src"
mkdir -p "$S/src/core" "$S/src/daemon/agent"
# fn FILE NAME LINES: a function NAME of LINES lines, braces included
fn() {
  {
    printf 'static int %s(int a,\n              int b)\n{\n    int x = a + b;\n' "$2"
    i=3; while [ $i -lt "$3" ]; do printf '    x += %d;\n' $i; i=$((i + 1)); done
    printf '}\n\n'
  } >>"$1"
}
check() { sh "$SRC/scripts/check-function-length.sh" "$S" "$T/exempt" >"$T/out" 2>&1; }
printf '#include <stdio.h>\n\nstruct s {\n    int a;\n};\n\n' >"$S/src/core/a.c"
fn "$S/src/core/a.c" short 10
fn "$S/src/core/a.c" hundred 100
: >"$T/exempt"
check || { cat "$T/out" >&2; fail "a tree without functions over 100 lines fails"; }; ok
contains "$T/out" "2 functions in 1 files"
# 101 lines in core (its "{" on line 125 of a.c: 6 lines of head, 13 of short
# and 103 of hundred, each with its 2-line signature and a blank line, then
# long_one's signature) and 150 in the daemon
fn "$S/src/core/a.c" long_one 101
fn "$S/src/daemon/agent/b.c" main 150
! check || { cat "$T/out" >&2; fail "a 101-line function passes"; }; ok
contains "$T/out" "src/core/a.c:125: long_one is 101 lines, over 100"
contains "$T/out" "src/daemon/agent/b.c:3: main is 150 lines, over 100"
contains "$T/out" "2 function(s) over 100 lines"
lacks "$T/out" "hundred"
# exempt: the core one passes, the daemon one still fails
printf '# a comment\nsrc/core/a.c long_one  # being split\n' >"$T/exempt"
! check || fail "an unexempted long function passes"; ok
contains "$T/out" "src/core/a.c:125: long_one is 101 lines (exempt)"
contains "$T/out" "1 function(s) over 100 lines"
# both exempt, one stale exemption named: passes
printf 'src/core/a.c long_one\nsrc/daemon/agent/b.c main\nsrc/core/a.c hundred\n' >"$T/exempt"
check || { cat "$T/out" >&2; fail "exempt functions fail"; }; ok
contains "$T/out" "src/core/a.c hundred is exempt, but no function of that name there is over 100 lines"
# the exemption names a file, not only a function: main elsewhere fails
fn "$S/src/daemon/agent/c.c" main 120
! check || fail "an exemption of main in one file lets main through in another"; ok
contains "$T/out" "src/daemon/agent/c.c:3: main is 120 lines, over 100"
done_ok
