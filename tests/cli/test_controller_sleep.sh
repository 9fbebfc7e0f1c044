#!/bin/sh
# test_controller_sleep.sh — the control loop sleeps between periods (issue
# 43) and still answers at once: a stop signal ends a controller whose period
# is 60 s without waiting for the period, SIGHUP reopens the log the same
# way (the handlers write the loop's eventfd: a signal that lands on another
# thread does not interrupt the loop's epoll_wait, and which thread the
# kernel picks is not ours to choose, so this test cannot force that case),
# and a wall clock stepped 1 h back (the clockshift shim) does not stop the
# periods for an hour (it did: the next period was an hour ahead).
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${TOOLS:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
SHIM=$TOOLS/libclockshift.so
[ -f "$SHIM" ] || fail "$SHIM is not built"
new_token "$T/atok" "$T/ctok"
kill_daemons_on_exit
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=2,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" \
  --interval 0.5 --log "$T/a.log"
AP=$DPORT
echo 0 >"$T/shift"
start_ctl() { # PERIOD_S NAME
  cat >"$T/$2.json" <<EOF2
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/$2.db", "control_period_s": $1, "log": "$T/$2.log",
 "baseline_window_s": $((3 * $1)), "lease_s": $((3 * $1)), "profile": false,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF2
  start_daemon controller "$T/$2.out" "$T/$2.port" env LD_PRELOAD="$SHIM" PFI_CLOCKSHIFT_FILE="$T/shift" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    "$CTL" --config "$T/$2.json" --port-file "$T/$2.port"
  CPID=$DPID; URL=http://127.0.0.1:$DPORT
}
cycles() { curl -s -m 5 "$URL/healthz" | sed -n 's/.*"cycles":\([0-9]*\).*/\1/p'; }

# ---- a 60 s period: SIGHUP and SIGTERM act at once, between periods ----
start_ctl 60 slow
wait_for 30 "the first period" 'num "$(cycles)" ">=" 1'; ok
mv "$T/slow.log" "$T/slow.log.1"
kill -HUP "$CPID"
wait_for 10 "the log reopened after SIGHUP" '[ -s "$T/slow.log" ]'; ok
unwatch "$CPID"
kill -TERM "$CPID"
wait_for 10 "the controller gone after SIGTERM (its period is 60 s)" '! kill -0 "$CPID" 2>/dev/null'; ok
grep -q "stopping" "$T/slow.log" || { cat "$T/slow.log" >&2; fail "no stop logged"; }; ok

# ---- a 1 s period, the wall clock stepped 1 h back: periods go on ----
start_ctl 1 step
wait_for 30 "periods running" 'num "$(cycles)" ">=" 2'; ok
c0=$(cycles)
echo -3600 >"$T/shift"
wait_for 30 "periods after the clock stepped 1 h back" 'num "$(cycles)" ">=" $((c0 + 3))'; ok
done_ok
