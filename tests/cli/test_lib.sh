#!/bin/sh
# test_lib.sh — the waiting helpers of lib.sh that keep the other tests from
# hanging or flaking: wait_for fails at once (with the log) when a watched
# daemon exits, fails after its wall-clock deadline when the condition never
# holds, and returns as soon as it holds; start_daemon reads the port file;
# stop_daemon is bounded and gives the exit status.
. "$SRC/tests/cli/lib.sh"
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b - a}'; }

# a daemon that dies at start: the wait for its port file fails at once, with its log
t0=$(date +%s.%N)
( start_daemon dier "$T/dier.log" "$T/dier.port" sh -c 'echo "cannot bind: Address already in use"; exit 3' ) 2>"$T/err1"
rc=$?; d=$(elapsed "$t0")
[ $rc -ne 0 ] || fail "start_daemon succeeded for a daemon that exited"; ok
num "$d" "<" 5 || fail "a dead daemon was noticed after $d s (deadline 60 s)"; ok
contains "$T/err1" "dier exited while waiting for: dier to write its port file"
contains "$T/err1" "cannot bind: Address already in use"
echo "dead daemon noticed after $d s"

# a daemon that dies later: a wait on something else fails at once
( start_daemon later "$T/later.log" "" sh -c 'sleep 0.3; echo "fatal: gone"; exit 1'
  wait_for 60 "something that never happens" false ) 2>"$T/err2"
rc=$?; d=$(elapsed "$t0")
[ $rc -ne 0 ] || fail "wait_for succeeded"; ok
contains "$T/err2" "later exited while waiting for: something that never happens"
contains "$T/err2" "fatal: gone"

# a condition that never holds: fails after the deadline (wall clock), with the logs
t0=$(date +%s.%N)
( start_daemon sleeper "$T/sleeper.log" "" sh -c 'echo "sleeper up"; exec sleep 60'
  wait_for 2 "never" false ) 2>"$T/err3"
rc=$?; d=$(elapsed "$t0")
[ $rc -ne 0 ] || fail "wait_for succeeded on false"; ok
num "$d" ">=" 2 && num "$d" "<" 10 || fail "a 2 s deadline took $d s"; ok
contains "$T/err3" "not within 2 s: never"
contains "$T/err3" "sleeper up"

# a condition that holds: returns without waiting for the deadline
touch "$T/later-file"
t0=$(date +%s.%N)
( sleep 0.3; rm "$T/later-file" ) &
wait_for 30 "the file to go" '[ ! -e "$T/later-file" ]'
d=$(elapsed "$t0"); num "$d" "<" 5 || fail "wait_for took $d s for a 0.3 s condition"; ok

# the port file: start_daemon waits for it and sets DPORT; stop_daemon gives the status
start_daemon fixture "$T/fixture.log" "$T/port" "$TOOLS/http_fixture" "$T/port"
[ -n "$DPORT" ] && [ "$DPORT" -gt 0 ] || fail "no port from the port file"; ok
curl -s -m 5 "http://127.0.0.1:$DPORT/metrics" | grep -q DCGM_FI_DEV_POWER_USAGE || fail "fixture not on port $DPORT"; ok
stop_daemon $DPID TERM
[ ! -e "$T/.watch/$DPID" ] || fail "a stopped daemon is still watched"; ok
alive $DPID && fail "fixture still running after stop_daemon"; ok
# a daemon that ignores SIGTERM: stop_daemon kills it within its bound
start_daemon stubborn "$T/stubborn.log" "" sh -c 'trap "" TERM; while :; do sleep 0.1; done'
t0=$(date +%s.%N)
STOP_S=2 stop_daemon $DPID TERM
d=$(elapsed "$t0")
alive $DPID && fail "stop_daemon left a stubborn daemon running"; ok
num "$d" "<" 10 || fail "stop_daemon took $d s"; ok
# kill_daemons_on_exit CMD: at exit the daemons are killed, then CMD runs (e.g. an umount)
OUTER=$T sh -c '. "$SRC/tests/cli/lib.sh"
  start_daemon sleeper "$T/s.log" "" sleep 60; echo $DPID >"$OUTER/kd.pid"
  kill_daemons_on_exit "touch \"\$OUTER/kd.ran\""' || fail "a script with kill_daemons_on_exit CMD failed"
[ -e "$T/kd.ran" ] || fail "kill_daemons_on_exit did not run its command"; ok
wait_for 10 "the daemon killed at exit" '! alive "$(cat "$T/kd.pid")"'
done_ok
