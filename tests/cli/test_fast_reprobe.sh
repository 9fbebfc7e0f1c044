#!/bin/sh
# test_fast_reprobe.sh — an agent that fell back to HTTP after missed
# datagrams returns to datagrams once they work (issue 27 c; docs/controller.md,
# "Fast trigger datagrams"). The agent's wall clock is stepped 10 s ahead
# (the clockshift shim: beyond the datagrams' 5 s skew, so it drops every
# one as not fresh), the controller finds 3 misses in a row and reads it
# by HTTP alone; the clock is stepped back, and within a probe interval
# (30 s) a datagram is tried again, answered, and the period's views go by
# datagram again. Before, the agent stayed on HTTP until the controller
# restarted. About 45 s; no elapsed time is asserted beyond the deadlines.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
SHIM=$TOOLS/libclockshift.so
[ -f "$SHIM" ] || fail "the clockshift shim was not built ($SHIM)"
kill_daemons_on_exit
new_token "$T/atok" "$T/ctok"
echo 0 >"$T/shift"
# (the shim is not instrumented: a sanitized agent needs ASan told so, as in
# test_lease_clock.sh)
start_daemon agent "$T/agent.log" "$T/a.port" env LD_PRELOAD="$SHIM" PFI_CLOCKSHIFT_FILE="$T/shift" \
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$PFI_AGENT" --backend "sim:gpus=2" --listen 127.0.0.1:0 --port-file "$T/a.port" \
  --token-file "$T/atok" --state-file "$T/a.state" --interval 0.5 --log "$T/agent.log"
PA=$DPORT
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5,
 "baseline_window_s": 2, "lease_s": 30,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$PA", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
answers() { metric "$URL" 'pfi_ctl_fast_answers_total{kind="view"}'; }
wait_for 20 "views answered by datagram" 'num "$(answers)" ">=" 3'
# the agent's clock 10 s ahead: its datagrams' seqs are stale to it
echo 10 >"$T/shift"
wait_for 20 "the controller to fall back to HTTP" 'grep -q "agent n1 answered none of 3 datagrams in a row: HTTP only" "$T/ctl.log"'
a0=$(answers)
echo 0 >"$T/shift"
# HTTP only now; within the probe interval (30 s; the agent's last seq, raised
# to its stepped clock by HTTP, is behind the real time again after 10 s)
wait_for 60 "datagrams again" 'grep -q "agent n1 answers datagrams again" "$T/ctl.log"'
wait_for 10 "views by datagram again" 'num "$(answers)" ">" "$(( ${a0%.*} + 2 ))"'
[ "$(grep -c "answered none of 3 datagrams" "$T/ctl.log")" = 1 ] || fail "the fall back logged more than once"; ok
done_ok
