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
  # bounded: a program that should fail at once but runs on (a daemon that
  # started after all) fails the test in 120 s, not at ctest's timeout
  case $(command -v "$1") in
    /*) timeout "${EXPECT_TIMEOUT_S:-120}" "$@" >"$T/out" 2>"$T/err" ;;
    *) "$@" >"$T/out" 2>"$T/err" ;;
  esac
  got=$?
  [ "$got" -ne 124 ] || echo "still running after ${EXPECT_TIMEOUT_S:-120} s: $*" >>"$T/err"
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

# in_chroot: true inside a chroot (the fresh-root tests skip there: no root
# inside a root). Inside a chroot, / is not the root of PID 1's mount
# namespace (when /proc/1/root can be read; a sandbox may forbid it), and no
# mount in /proc/self/mountinfo has the mount point "/" (the kernel lists
# only the mounts reachable from the process's root; a chroot into a plain
# directory has none at "/").
in_chroot() {
  r1=$(stat -c %d:%i /proc/1/root/. 2>/dev/null) && [ "$r1" != "$(stat -c %d:%i /)" ] && return 0
  ! awk '$5 == "/" { found = 1 } END { exit !found }' /proc/self/mountinfo
}

# new_token FILE...: a random bearer token in each FILE, mode 0600
new_token() { for f in "$@"; do head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$f"; chmod 600 "$f"; done; }
# daemons started by a test go in $PIDS; on exit they are killed and $T
# removed. kill_daemons_on_exit CMD: also run the shell command CMD (e.g. an
# umount) after the daemons are killed, before $T is removed
PIDS=
kill_daemons_on_exit() { KD_THEN=${1-}; trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; eval "$KD_THEN"; rm -rf "$T"' EXIT; }
kill_daemons_on_exit

# ---- waits (docs/testing.md): bounded in wall-clock seconds, polling the
# condition itself, failing at once (with the log) when a daemon has exited ----
mkdir -p "$T/.watch"
# watch NAME PID LOG: every wait_for fails at once if PID exits, showing LOG
watch() { printf '%s\n%s\n' "$1" "$3" >"$T/.watch/$2"; }
unwatch() { rm -f "$T/.watch/$1"; }
# alive PID: running (not exited, not a zombie)
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  case $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) in Z*|X*|'') return 1;; esac
}
# show_logs: the tail of every watched daemon's log
show_logs() {
  for f in "$T"/.watch/*; do
    [ -e "$f" ] || continue
    log=$(sed -n 2p "$f")
    echo "---- $(head -n 1 "$f") (pid ${f##*/}): tail -n 40 $log" >&2
    tail -n 40 "$log" >&2 2>/dev/null
  done
}
# check_daemons WHAT: fail if a watched daemon has exited
check_daemons() {
  for f in "$T"/.watch/*; do
    [ -e "$f" ] || continue
    alive "${f##*/}" && continue
    name=$(head -n 1 "$f"); log=$(sed -n 2p "$f")
    echo "---- $name (pid ${f##*/}) exited; tail -n 40 $log" >&2
    tail -n 40 "$log" >&2 2>/dev/null
    rm -f "$f"
    fail "$name exited while waiting for: $1"
  done
}
# wait_for SECONDS WHAT COND: evaluate the shell command COND (quote it so
# that it is expanded at each poll) every 50 ms until it succeeds; fail when
# a watched daemon exits or when SECONDS of wall clock have passed.
wait_for() {
  wf_end=$(( $(date +%s) + $1 + 1 )); wf_what=$2; wf_cond=$3
  until eval "$wf_cond"; do
    check_daemons "$wf_what"
    [ "$(date +%s)" -lt "$wf_end" ] || { show_logs; fail "not within $1 s: $wf_what"; }
    sleep 0.05
  done
}
# start_daemon NAME LOG PORTFILE CMD...: start CMD in the background (stdout
# and stderr appended to LOG; sanitizer reports land there too), watched and
# killed on exit; with a PORTFILE, wait until it is written (the daemon
# listens on port 0; the kernel picks a free port) and set $DPORT. $DPID is
# the daemon's pid.
start_daemon() {
  sd_name=$1 sd_log=$2 sd_port=$3; shift 3
  [ -z "$sd_port" ] || rm -f "$sd_port"
  "$@" >>"$sd_log" 2>&1 &
  DPID=$!; PIDS="$PIDS $DPID"
  watch "$sd_name" "$DPID" "$sd_log"
  DPORT=
  [ -z "$sd_port" ] || { wait_for "${START_S:-60}" "$sd_name to write its port file" '[ -s "$sd_port" ]'; DPORT=$(cat "$sd_port"); }
}
# stop_daemon PID [SIGNAL]: stop a daemon on purpose (no longer watched);
# wait at most $STOP_S (30) s for it to exit (then SIGKILL); its exit status in $STOP_RC
stop_daemon() {
  unwatch "$1"
  kill "-${2:-TERM}" "$1" 2>/dev/null
  st_end=$(( $(date +%s) + ${STOP_S:-30} + 1 ))
  while alive "$1" && [ "$(date +%s)" -lt "$st_end" ]; do sleep 0.05; done
  alive "$1" && { echo "pid $1 still running ${STOP_S:-30} s after SIG${2:-TERM}; killed" >&2; kill -9 "$1" 2>/dev/null; }
  wait "$1" 2>/dev/null; STOP_RC=$?
}
# hw_cap N: simulated GPU N's cap in W ("700", not "700.0") from $HW, the
# file the sim backend keeps its caps in (state=FILE)
hw_cap() { tr -d ' \n' <"$HW" | sed 's/.*"caps_w":\[//; s/\].*//' | cut -d, -f$(($1 + 1)) | sed 's/\.0$//'; }
# num A OP B: numeric comparison (awk), false when A or B is empty
num() { awk -v a="$1" -v b="$3" "BEGIN{exit !(a != \"\" && b != \"\" && (a + 0) $2 (b + 0))}"; }
# metric URL NAME: a sample's value from Prometheus text at URL/metrics (first match of NAME at line start)
metric() { curl -s -m 5 "$1/metrics" | awk -v n="$2" 'index($0, n) == 1 && (substr($0, length(n) + 1, 1) == " " || substr($0, length(n) + 1, 1) == "{") {print $NF; exit}'; }
# wait_counter SECONDS URL NAME K: wait until the counter NAME has grown by K
# (a positive signal that K control periods or sampling rounds have passed)
wait_counter() {
  wc0=$(metric "$2" "$3")
  [ -n "$wc0" ] || { show_logs; fail "$2/metrics lacks $3"; }
  wc_want=$((${wc0%.*} + $4)); wc_url=$2 wc_name=$3
  wait_for "$1" "$3 to reach $wc_want" 'num "$(metric "$wc_url" "$wc_name")" ">=" "$wc_want"'
}
# chromium_dom URL: headless Chromium loads URL (the page's script runs under
# its Content-Security-Policy, 4 s of virtual time), bounded (120 s); the DOM
# in $T/dom, the chart points the script drew (<body data-points>) in $DOM_POINTS
CHROMIUM_FLAGS="--headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking --disable-component-update --disable-sync --disable-quic"
chromium_dom() {
  # shellcheck disable=SC2086
  timeout 120 chromium $CHROMIUM_FLAGS --user-data-dir="$T/chromium-dom" --virtual-time-budget=4000 --dump-dom "$1" >"$T/dom" 2>"$T/chrome.err" \
    || { tail -5 "$T/chrome.err" >&2; fail "chromium --dump-dom failed"; }
  DOM_POINTS=$(sed -n 's/.*<body data-points="\([0-9]*\)".*/\1/p' "$T/dom" | head -1)
}

# the demo's outcome in $T/demo.out and $T/pfi-demo-report.*, whichever path
# its event took (test_demo.sh, test_demo_openadr.sh): a timeline before,
# during and after the event; measured power within 2% of the target in its
# steady part; 4 jobs, none over its tier; the report met, 30% asked, 28-35%
# achieved, a PNG chart; no daemon of the demo left in DIR
demo_outcome() {
  n=$(grep -cE '^ +[+-][0-9]+\.[0-9] ' "$T/demo.out")
  [ "$n" -ge 15 ] || fail "timeline has $n rows"; ok
  awk '$1 ~ /^\+[0-9]/ && $1+0 >= 2 && $1+0 <= 9.5 { if ($3 > $2 * 1.02) bad++; n++ } END { exit !(n >= 10 && bad == 0) }' "$T/demo.out" \
    || fail "measured power above target + 2% during the event"; ok
  grep -E '^    job[0-9] Flex' "$T/demo.out" >"$T/jobs"
  lines "$T/jobs" 4
  lacks "$T/jobs" "VIOLATED"
  R="$T/pfi-demo-report.json"
  [ -s "$R" ] || fail "no pfi-demo-report.json"; ok
  contains "$R" '"met": true'
  contains "$R" '"requested_reduction_pct": 30'
  ach=$(grep -o '"achieved_reduction_pct": [0-9.]*' "$R" | awk '{print $2}')
  awk -v a="$ach" 'BEGIN { exit !(a >= 28 && a <= 35) }' || fail "achieved reduction $ach%"; ok
  [ "$(head -c 8 "$T/pfi-demo-report.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "pfi-demo-report.png is not a PNG"; ok
  ! pgrep -f "$1" >/dev/null || fail "a daemon of the demo is still running"; ok
}
