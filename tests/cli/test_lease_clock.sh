#!/bin/sh
# test_lease_clock.sh — pfi-agent's leases run on the monotonic clock (issue
# 14 item 5): with the agent's wall clock stepped 1 h back (and then 1 h
# forward) by the clockshift shim, a 6 s lease still ends 6 s after it was
# granted — neither kept for an hour nor ended at once; and a lease in the
# state file that ends further than --max-lease away (written before a
# clock step, or by hand) is dropped at start-up and the baseline restored.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${TOOLS:?}"
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"
SHIM=$TOOLS/libclockshift.so
[ -f "$SHIM" ] || fail "$SHIM is not built"
new_token "$T/token"
TOKEN=$(cat "$T/token")
HW=$T/hw.json
STATE=$T/state.json
PID=
echo 0 >"$T/shift"

uptime_s() { cut -d' ' -f1 /proc/uptime; }
start_agent() { # extra options...
  start_daemon agent "$T/agent.log" "$T/port" env LD_PRELOAD="$SHIM" PFI_CLOCKSHIFT_FILE="$T/shift" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    "$PFI_AGENT" --backend "sim:gpus=2,state=$HW" --listen 127.0.0.1:0 --port-file "$T/port" --token-file "$T/token" \
    --state-file "$STATE" --interval 0.2 --log "$T/agent.log" "$@"
  PID=$DPID; URL=http://127.0.0.1:$DPORT
}
put() { # GENERATION LEASE_S CAP_W
  CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
    --data-binary "{\"lease_s\":$2,\"controller\":\"c\",\"generation\":$1,\"gpus\":[{\"index\":0,\"cap_w\":$3}]}" "$URL/v1/caps")
  [ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT: HTTP $CODE"; }
  ok
}
cap_is() { num "$(hw_cap 0)" "==" "$1"; } # GPU 0's cap is W
expires_in() { curl -s -m 5 "$URL/metrics" | awk '$1=="pfi_lease_expires_in_seconds"{print $2}'; }

start_agent
grep -q 'pfi-agent' "$T/agent.log" || fail "no log"
# the shim works: the agent's wall clock (the node view's "time") is an hour behind once the file says so
echo -3600 >"$T/shift"
t=$(curl -s -m 5 "$URL/v1/node" | sed -n 's/.*"time":\([0-9.e+]*\).*/\1/p')
awk -v t="$t" -v w="$(date +%s)" 'BEGIN{d = w - t; exit !(d > 3590 && d < 3610)}' || fail "the shim did not step the agent's wall clock (time $t)"; ok
echo 0 >"$T/shift"

# step_during_lease GENERATION SHIFT NAME: a 6 s lease, then the agent's wall
# clock stepped by SHIFT s: the lease still ends 6 s after it was granted
step_during_lease() {
  put "$1" 6 400
  t0=$(uptime_s)
  cap_is 400 || fail "cap not set"; ok
  echo "$2" >"$T/shift"
  e=$(expires_in)
  awk -v e="$e" 'BEGIN{exit !(e > 0 && e <= 6)}' || fail "after a 1 h $3 step the lease expires in '$e' s (want <= 6)"; ok
  wait_for 30 "the baseline after the lease ($3 step)" 'cap_is 700'
  d=$(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN{print b - a}')
  awk -v d="$d" 'BEGIN{exit !(d >= 5.5 && d < 20)}' || fail "restored $d s after a 6 s lease was granted ($3 step; ended early?)"; ok
  echo "$3 step: 6 s lease restored after $d s"
  echo 0 >"$T/shift"
}
# ---- a 1 h backward step during a 6 s lease: it still ends after 6 s (not kept for an hour) ----
step_during_lease 1 -3600 backward
# ---- a 1 h forward step: the lease is not cut short ----
step_during_lease 2 3600 forward

# ---- the state file keeps wall-clock time; a lease beyond --max-lease is dropped at load ----
put 3 60 400
contains "$STATE" '"expires_at"'
stop_daemon $PID KILL; PID=
cap_is 400 || fail "the cap should survive kill -9"; ok
far=$(( $(date +%s) + 7200 ))
sed -i -E "s/\"expires_at\": *[-0-9.e+]+/\"expires_at\": $far/" "$STATE"
contains "$STATE" "\"expires_at\": $far"
start_agent --max-lease 3600
wait_for 30 "the baseline after dropping the far lease" 'cap_is 700'
contains "$T/agent.log" "more than --max-lease 3600 s; dropped"
# a lease within --max-lease is still honoured after a restart
put 4 60 400
stop_daemon $PID KILL; PID=
start_agent --max-lease 3600
contains "$T/agent.log" "still live for"
cap_is 400 || fail "a live lease from the state file was not honoured"; ok
stop_daemon $PID TERM; rc=$STOP_RC; PID=
[ $rc -eq 0 ] || fail "agent exit $rc on SIGTERM"; ok
cap_is 700 || fail "SIGTERM did not restore"; ok
done_ok
