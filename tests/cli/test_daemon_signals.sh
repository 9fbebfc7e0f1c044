#!/bin/sh
# test_daemon_signals.sh — SIGHUP and SIGQUIT for pfi-agent and
# pfi-controller (issue 14 item 11). SIGHUP (logrotate's convention) reopens
# the log file after a rename and changes nothing else: the process lives,
# caps and the lease stay; without a log file it is harmless. SIGQUIT stops
# like SIGTERM: the agent restores the baselines and exits 0, the controller
# exits 0 leaving the caps under the agents' leases.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"
new_token "$T/token" "$T/ctok"
TOKEN=$(cat "$T/token")
HW=$T/hw.json

start_agent() { # LOGOPTS...: its stderr in agent.stderr (the log is renamed under it)
  start_daemon agent "$T/agent.stderr" "$T/port" "$PFI_AGENT" --log-level debug --backend "sim:gpus=2,state=$HW" --listen 127.0.0.1:0 \
    --port-file "$T/port" --token-file "$T/token" --state-file "$T/state.json" --interval 0.2 "$@"
  PID=$DPID; URL=http://127.0.0.1:$DPORT
}
cap0_is() { num "$(hw_cap 0)" "==" "$1"; } # GPU 0's cap is W
logged() { [ -f "$1" ] && grep -qF -- "$2" "$1"; }

# ---- agent: SIGHUP reopens --log after a rename; caps and lease unchanged ----
start_agent --log "$T/agent.log"
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
  --data-binary '{"lease_s":120,"controller":"c","generation":1,"gpus":[{"index":0,"cap_w":400}]}' "$URL/v1/caps")
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT: HTTP $CODE"; }; ok
mv "$T/agent.log" "$T/agent.log.1"
watch agent $PID "$T/agent.log.1" # its log, should it exit
kill -HUP $PID
wait_for 30 "the agent's new log" 'logged "$T/agent.log" "SIGHUP: log file $T/agent.log reopened"'
kill -0 $PID || fail "the agent died of SIGHUP"; ok
cap0_is 400 || fail "SIGHUP changed the cap"; ok
curl -s -m 5 "$URL/metrics" >"$T/m"
contains "$T/m" 'pfi_lease_active{controller="c"} 1'
lacks "$T/agent.log" "baseline restored"
lacks "$T/agent.log.1" "baseline restored"
# later lines go to the new file, none to the renamed one
n1=$(wc -l <"$T/agent.log.1")
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
  --data-binary '{"lease_s":120,"controller":"c","generation":1,"gpus":[{"index":0,"cap_w":450}]}' "$URL/v1/caps")
[ "$CODE" = 200 ] || fail "PUT: HTTP $CODE"; ok
contains "$T/agent.log" "cap 400 -> 450 W"
[ "$(wc -l <"$T/agent.log.1")" -eq "$n1" ] || fail "the renamed log still grows"; ok
# ---- agent: SIGQUIT restores like SIGTERM, exit 0 ----
stop_daemon $PID QUIT; rc=$STOP_RC; PID=
[ $rc -eq 0 ] || { cat "$T/agent.log" >&2; fail "agent exit $rc on SIGQUIT (expected 0)"; }; ok
cap0_is 700 || fail "SIGQUIT left the cap at $(hw_cap 0) W"; ok
contains "$T/agent.log" "signal 3: stopping"
contains "$T/agent.log" "baseline restored: agent stopping"
# ---- agent without --log: SIGHUP is harmless ----
start_agent
kill -HUP $PID
wait_for 30 "the SIGHUP line" 'logged "$T/agent.stderr" "SIGHUP: no --log file to reopen; ignored"'
kill -0 $PID || fail "the agent died of SIGHUP"; ok
APORT=$(cat "$T/port")

# ---- controller: SIGHUP reopens its log; SIGQUIT stops it like SIGTERM ----
cat >"$T/ctl.json" <<EOF2
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 1, "lease_s": 30,
 "log": "$T/ctl.log", "agents": [{"name": "n1", "url": "http://127.0.0.1:$APORT", "token_file": "$T/token"}]}
EOF2
start_daemon controller "$T/ctl.stderr" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
CPID=$DPID; CURL=http://127.0.0.1:$DPORT
mv "$T/ctl.log" "$T/ctl.log.1"
watch controller $CPID "$T/ctl.log.1"
kill -HUP $CPID
wait_for 30 "the controller's new log" 'logged "$T/ctl.log" "SIGHUP: log file $T/ctl.log reopened"'
kill -0 $CPID || fail "the controller died of SIGHUP"; ok
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$CURL/v1/status"); [ "$code" = 200 ] || fail "controller status: HTTP $code"; ok
stop_daemon $CPID QUIT; rc=$STOP_RC; CPID=
[ $rc -eq 0 ] || { cat "$T/ctl.log" >&2; fail "controller exit $rc on SIGQUIT (expected 0)"; }; ok
contains "$T/ctl.log" "signal 3: stopping"
stop_daemon $PID TERM; PID=
done_ok
