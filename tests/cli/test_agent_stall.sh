#!/bin/sh
# test_agent_stall.sh — a sick GPU is isolated within a deadline (issue 40
# (e); docs/agent.md, "A GPU that hangs"), on the NVML test double with 8
# GPUs whose FAKE_NVML_STALL file makes every call on GPU 3 take longer, as
# a hung GSP call does (about 6 s a call):
#  1. GPU 3 stalls 6 s a call, the default --gpu-call-timeout (2 s): the
#     sampling loop goes on (WATCHDOG=1 keeps coming, to our notify sink,
#     while GPU 3's blocked sample has not returned; before deadlines the
#     loop waited a minute per round); GPU 3 is reported unavailable
#     ("timeout": log, pfi_gpu_up, /v1/node); a PUT of 300 W on all eight
#     caps the seven healthy ones and lists GPU 3 under "skipped"; a PUT
#     that releases them puts the seven back; the figures (each request's
#     time) are printed; /v1/control says why GPU 3 is not capped, and a
#     controller's event report names it (gpus_not_capped);
#  2. the driver-wide variant (FAKE_NVML_STALL_GLOBAL: the stall holds a
#     lock every GPU's call takes), 1.5 s a call with a 1 s deadline: the
#     GPUs that overran together come back at their rescans, one at a time;
#     GPU 3 alone stays unavailable, and later requests cap the seven.
# No elapsed time is asserted; every wait polls with a deadline.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${FAKE_NVML:?}" "${TOOLS:?}"
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"
kill_daemons_on_exit
new_token "$T/token" "$T/ctok"
TOKEN=$(cat "$T/token")
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
mkdir -p "$T/jobs"
printf '{"job_id": "j0", "gpus": [0, 1, 2, 3], "tier": 3}\n' >"$T/jobs/j0.json"
printf '{"job_id": "j1", "gpus": [4, 5, 6, 7], "tier": 3}\n' >"$T/jobs/j1.json"
export PFI_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=8 FAKE_NVML_STATE=$T/nvml FAKE_NVML_STALL=$T/stall
: >"$T/stall"
NS=$T/notify.sock
"$TOOLS/notify_sink" "$NS" "$T/notify" 300 2>>"$T/sink.err" &
SINK=$!
wait_for 10 "the notify sink" '[ -S "$NS" ]'

# moved in whole: the fake NVML may be reading the file (see test_agent_faults.sh)
set_limits() { for _ in 1 2 3 4 5 6 7 8; do echo 700000; done >"$T/nvml.new" && mv "$T/nvml.new" "$T/nvml"; }
limit() { sed -n "$(($1 + 1))p" "$T/nvml" | awk '{print $1 / 1000}'; }
put() { # LEASE_S GENERATION GPUS-JSON -> $CODE, body in $T/body, seconds in $SECS
  out=$(curl -s -m 30 -o "$T/body" -w '%{http_code} %{time_total}' -X PUT -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary "{\"lease_s\":$1,\"controller\":\"c\",\"generation\":$2,\"gpus\":[$3]}" "$URL/v1/caps")
  CODE=${out% *} SECS=${out#* }
}
ALL='{"index":0,"cap_w":300},{"index":1,"cap_w":300},{"index":2,"cap_w":300},{"index":3,"cap_w":300},{"index":4,"cap_w":300},{"index":5,"cap_w":300},{"index":6,"cap_w":300},{"index":7,"cap_w":300}'
pings() { grep -c "^WATCHDOG=1" "$T/notify" 2>/dev/null || true; }
up3() { curl -s -m 5 "$URL/metrics" | grep '^pfi_gpu_up{gpu="3"'; }
seven_at() { for g in 0 1 2 4 5 6 7; do [ "$(limit $g)" = "$1" ] || return 1; done; }

start_agent() { # NAME [options]
  n=$1; shift
  rm -f "$T/state.json"
  start_daemon "$n" "$T/$n.log" "$T/port" env NOTIFY_SOCKET="$NS" WATCHDOG_USEC=1000000 sh -c 'export WATCHDOG_PID=$$; exec "$@"' sh \
    "$PFI_AGENT" --backend nvml --listen 127.0.0.1:0 --port-file "$T/port" \
    --token-file "$T/token" --state-file "$T/state.json" --interval 0.2 --log "$T/$n.log" "$@"
  PID=$DPID; URL=http://127.0.0.1:$DPORT; LOG=$T/$n.log
}

# ---- 1. one GPU stalls 6 s a call, the default deadline (2 s) ----
set_limits
start_agent a1 --jobs-dir "$T/jobs"
wait_for 20 "a first sample" 'curl -s -m 5 "$URL/metrics" | grep -q "^pfi_gpu_power_watts{gpu=\"7\""'
echo "3 6000" >"$T/stall"
p0=$(pings)
wait_for 30 "GPU 3 reported unavailable (timeout)" 'grep -q "GPU 3 .*: timeout" "$LOG"'
up3 | grep -q 'state="timeout"} 0' || { up3 >&2; fail "pfi_gpu_up of GPU 3 is not timeout 0"; }; ok
curl -s -m 5 "$URL/v1/node" | grep -q '"state":"timeout"' || fail "/v1/node does not say timeout"; ok
# the loop goes on while GPU 3's sample is still blocked in the driver (it returns after about a minute)
wait_for 20 "5 watchdog pings while GPU 3 hangs" '[ "$(pings)" -ge $((p0 + 5)) ]'
lacks "$LOG" "abandoned at its deadline returned"
put 600 1 "$ALL"
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT 300 W: HTTP $CODE"; }; ok
echo "figure: one GPU stalling 6 s a call: PUT capping 7 of 8 answered in $SECS s"
grep -q '"skipped":\[{"index":3,[^]]*"state":"timeout"' "$T/body" || { cat "$T/body" >&2; fail "GPU 3 not skipped as timeout"; }; ok
seven_at 300 || fail "the seven healthy GPUs are not at 300 W: $(cat "$T/nvml" | tr '\n' ' ')"; ok
[ "$(limit 3)" = 700 ] || fail "GPU 3 changed"; ok
put 600 1 ""
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "release: HTTP $CODE"; }; ok
echo "figure: one GPU stalling 6 s a call: PUT restoring 7 of 8 answered in $SECS s"
seven_at 700 || fail "the seven are not back at 700 W"; ok
# the controller leaves GPU 3 out and names it in the event's report
curl -s -m 5 -H "Authorization: Bearer $TOKEN" "$URL/v1/control" | grep -q '\[null,null,null,null,"timeout"\]' \
  || fail "/v1/control does not say why GPU 3 is not capped"; ok
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 1,
 "baseline_window_s": 2, "lease_s": 30,
 "agents": [{"name": "n1", "url": "$URL", "token_file": "$T/token"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
CURL=http://127.0.0.1:$DPORT CPID=$DPID
wait_counter 30 "$CURL" pfi_ctl_cycles_total 3
S=$(date -u +%Y-%m-%dT%H:%M:%SZ)
[ "$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$T/ctok")" \
  --data-binary "{\"id\":\"ev1\",\"start\":\"$S\",\"duration_s\":60,\"reduction_pct\":10,\"ramp_s\":0}" "$CURL/v1/events")" = 201 ] \
  || { cat "$T/body" >&2; fail "POST /v1/events"; }; ok
wait_for 30 "the report naming GPU 3" \
  'curl -s -m 5 -H "Authorization: Bearer $(cat "$T/ctok")" "$CURL/v1/events/ev1/report" | tr -d " \n" | grep -q "\"gpus_not_capped\":\[{\"agent\":\"n1\",\"gpu\":3,\"reason\":\"timeout\"}\]"'
contains "$T/ctl.log" "event ev1: agent n1 GPU 3 is not capped (timeout): its draw cannot be shed"
stop_daemon $CPID
stop_daemon $PID
[ "$STOP_RC" = 0 ] || fail "agent exit $STOP_RC at stop"; ok

# ---- 2. a driver-wide stall: 1.5 s a call holding a lock every GPU's call takes ----
: >"$T/stall"
set_limits
export FAKE_NVML_STALL_GLOBAL=1
start_agent a2 --gpu-call-timeout 1
wait_for 20 "a first sample" 'curl -s -m 5 "$URL/metrics" | grep -q "^pfi_gpu_power_watts{gpu=\"7\""'
echo "3 1500" >"$T/stall"
wait_for 30 "GPU 3 reported unavailable (timeout)" 'grep -q "GPU 3 .*: timeout" "$LOG"'
# the episode ends when GPU 3's sample returns (11 calls of 1.5 s); the rescans then find it alone
wait_for 120 "GPU 3 found to overrun alone" 'grep -q "GPU 3: a rescan abandoned.*it alone overran" "$LOG"'
wait_for 60 "the seven healthy GPUs available" \
  '[ "$(curl -s -m 5 "$URL/metrics" | grep "^pfi_gpu_up{" | grep -c "state=\"ok\"} 1")" = 7 ]'
up3 | grep -q 'state="timeout"} 0' || { up3 >&2; fail "GPU 3 is not reported timeout"; }; ok
put 600 2 "$ALL"
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "PUT 300 W: HTTP $CODE"; }; ok
echo "figure: driver-wide stall, GPU 3 isolated: PUT capping 7 of 8 answered in $SECS s"
seven_at 300 || fail "the seven healthy GPUs are not at 300 W"; ok
put 600 2 ""
echo "figure: driver-wide stall, GPU 3 isolated: PUT restoring 7 of 8 answered in $SECS s"
seven_at 700 || fail "the seven are not back at 700 W"; ok
: >"$T/stall"
stop_daemon $PID
kill "$SINK" 2>/dev/null
done_ok
