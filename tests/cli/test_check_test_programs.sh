#!/bin/sh
# test_check_test_programs.sh — scripts/check-test-programs.py (issue 39)
# catches what it is for, on small made-up scripts: a program that is not
# installed at all, and one whose package the bootstrap does not list (here
# sqlite3, removed from a copy of the bootstrap), each fail the check with
# the program's name and the script:line that calls it; programs behind the
# wrappers the tests use (timeout, setpriv with its options, a function that
# runs "$@", wait_for's shell string, sh -c '...') are found; a program used
# only where `command -v` found it is optional, `command -v X || fail` makes
# X required; builtins, functions and "$PFI" are not programs.
. "$SRC/tests/cli/lib.sh"
C="$SRC/scripts/check-test-programs.py"
command -v shfmt >/dev/null || fail "shfmt is not installed (scripts/bootstrap.sh test installs it)"
command -v sqlite3 >/dev/null || fail "sqlite3 is not installed (scripts/bootstrap.sh test installs it)"
check() { python3 "$C" "$SRC" --bootstrap "${BOOT:-$SRC/scripts/bootstrap.sh}" --scripts "$@" >"$T/out" 2>"$T/err"; }

# a script with only what a fresh root has after the bootstrap
cat >"$T/good.sh" <<'EOF'
S() { shift; timeout 5 "$@"; }
helper() { echo "$1"; }
helper x
S name sort </dev/null
"$PFI" --version
wait_for 5 "a file" '[ -s "$T/f" ] && grep -q x "$T/f"'
setpriv --reuid 65534 --regid 65534 --clear-groups env A=1 sleep 0
sh -c 'od -An /dev/null'
if command -v pfi-no-such-program-a >/dev/null; then pfi-no-such-program-a -n; fi
command -v pfi-no-such-program-b >/dev/null && pfi-no-such-program-b
EOF
check "$T/good.sh" || { cat "$T/err" >&2; fail "a script calling only installed programs fails the check"; }; ok
python3 "$C" "$SRC" --list --scripts "$T/good.sh" >"$T/list" || fail "--list failed"
for p in sort timeout setpriv env sleep sh od grep; do
  grep -qx "$p" "$T/list" || { cat "$T/list" >&2; fail "--list lacks $p"; }
  ok
done
for p in helper S 65534 echo pfi-no-such-program-a pfi-no-such-program-b '"$PFI"'; do
  ! grep -qx -- "$p" "$T/list" || { cat "$T/list" >&2; fail "--list names $p, which is not a program to install"; }
  ok
done

# a program that is not installed at all: named, with its script and line
printf 'echo start\nS() { timeout 5 "$@"; }\nS pfi-no-such-program-c --help\n' >"$T/missing.sh"
check "$T/missing.sh" && fail "a script calling a program nobody installs passes the check"
contains "$T/err" "missing.sh:3: calls 'pfi-no-such-program-c', which is not installed"
# required by `command -v X || fail`, inside a for loop over literal words
printf 'for b in sh pfi-no-such-program-d; do command -v $b >/dev/null || fail "$b"; done\n' >"$T/loop.sh"
check "$T/loop.sh" && fail "a program required with command -v || fail passes the check"
contains "$T/err" "'pfi-no-such-program-d'"
lacks "$T/err" "'sh'"

# installed here, but from a package no bootstrap list has: sqlite3 taken
# out of a copy of the bootstrap's test list
sed 's/ sqlite3 / /; s/ sqlite3"/"/' "$SRC/scripts/bootstrap.sh" >"$T/bootstrap.sh"
! grep -qw sqlite3 "$T/bootstrap.sh" || fail "could not take sqlite3 out of the bootstrap's copy"
printf 'row() { sqlite3 "$T/db" "SELECT 1"; }\nrow\n' >"$T/db.sh"
BOOT="$T/bootstrap.sh" check "$T/db.sh" && fail "sqlite3 passes the check though no bootstrap list installs it"
contains "$T/err" "db.sh:1: calls 'sqlite3' from package sqlite3, which scripts/bootstrap.sh does not install"
n=$(wc -l <"$T/err")
[ "$n" -eq 1 ] || { cat "$T/err" >&2; fail "expected one line for one problem, got $n"; }; ok
# with the real bootstrap the same script passes
check "$T/db.sh" || { cat "$T/err" >&2; fail "sqlite3 fails the check with the real bootstrap"; }; ok
done_ok
