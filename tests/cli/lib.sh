# lib.sh — helpers for the CLI tests (POSIX sh). Each test script sources
# this, runs commands against $PFI (the built binary) and calls the checks;
# the first failed check prints what went wrong and exits 1.
set -u
: "${PFI:?PFI must point to the pfi binary}"
: "${SRC:?SRC must point to the source tree}"
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
NCHECK=0

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { NCHECK=$((NCHECK + 1)); }

# expect_status CODE CMD... : run, keep stdout in $T/out, stderr in $T/err
expect_status() {
  want=$1; shift
  "$@" >"$T/out" 2>"$T/err"
  got=$?
  [ "$got" -eq "$want" ] || { cat "$T/err" >&2; fail "exit $got, expected $want: $*"; }
  ok
}

# expect_error CODE SUBSTRING CMD... : non-zero exit, one-line stderr containing SUBSTRING
expect_error() {
  want=$1; sub=$2; shift 2
  expect_status "$want" "$@"
  grep -qF -- "$sub" "$T/err" || { cat "$T/err" >&2; fail "stderr lacks '$sub': $*"; }
  n=$(grep -cv 'warning:' "$T/err")
  [ "$n" -eq 1 ] || { cat "$T/err" >&2; fail "expected a one-line error, got $n lines: $*"; }
  ok
}

# contains FILE SUBSTRING
contains() { grep -qF -- "$2" "$1" || { head -20 "$1" >&2; fail "$1 lacks '$2'"; }; ok; }
lacks() { ! grep -qF -- "$2" "$1" || fail "$1 contains '$2'"; ok; }
lines() { n=$(wc -l <"$1"); [ "$n" -eq "$2" ] || fail "$1 has $n lines, expected $2"; ok; }

# csv_field FILE KEYCOL KEY COL: value of column COL on the row whose KEYCOL equals KEY
csv_field() {
  awk -F, -v kc="$2" -v k="$3" -v c="$4" 'NR==1{for(i=1;i<=NF;i++){if($i==kc)a=i;if($i==c)b=i};next} $a==k{print $b; exit}' "$1"
}

# near A B TOL
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d<=t)}' || fail "$1 != $2 (+-$3)"; ok; }

done_ok() { echo "ok: $NCHECK checks"; exit 0; }

# new_token FILE...: a random bearer token in each FILE, mode 0600
new_token() { for f in "$@"; do head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$f"; chmod 600 "$f"; done; }
# daemons started by a test go in $PIDS; on exit they are killed and $T removed
PIDS=
kill_daemons_on_exit() { trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; rm -rf "$T"' EXIT; }
