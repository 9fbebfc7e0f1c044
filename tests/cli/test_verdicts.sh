#!/bin/sh
# test_verdicts.sh — issue 30's verdicts: an event with nothing to shed (an
# agent, but no job mapped: its baseline is 0 W) and an event cancelled
# before it shed anything are never met. Each says so in the controller's
# log (a warning), the report ("verdict", "met": false), /v1/status (met
# null, verdict), /metrics (pfi_ctl_event_not_applicable{event_id,reason} 1,
# no pfi_ctl_event_met), `pfi event ls` (the verdict column, a warning on
# stderr) and `pfi status` (a warning line); a normal event beside them is
# still "met".
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
export PFI_TIME_SCALE=10 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
kill_daemons_on_exit
NOW() { awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.3f", e + (w - e) * 10}'; }
ISO() { date -u -d "@$(printf '%.0f' "$1")" +%Y-%m-%dT%H:%M:%SZ; }
# an agent with GPUs but no job (the trial's "agent but no jobs mapped")
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,idle,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 0.5 --log "$T/a.log"
A1=$DPORT
# and one whose job trains, for the cancelled and the normal events
start_daemon agent2 "$T/b.log" "$T/b.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw2.json" \
  --listen 127.0.0.1:0 --port-file "$T/b.port" --token-file "$T/atok" --state-file "$T/b.state" --interval 0.5 --log "$T/b.log"
A2=$DPORT
conf() { # AGENT-PORT DB
  cat >"$T/ctl-$2.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/$2.db", "control_period_s": 1,
 "baseline_window_s": 10, "ramp_s": 0, "ramp_down_s": 0, "lease_s": 60,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$1", "token_file": "$T/atok"}]}
EOF
}
conf "$A1" empty
start_daemon controller "$T/c1.log" "$T/c1.port" "$CTL" --config "$T/ctl-empty.json" --port-file "$T/c1.port"
U1=http://127.0.0.1:$DPORT
post() { # URL JSON
  c=$(curl -s -o "$T/body" -w '%{http_code}' -m 10 -X POST -H "Authorization: Bearer $(cat "$T/ctok")" \
    -H 'Content-Type: application/json' --data-binary "$2" "$1/v1/events")
  [ "$c" = 201 ] || { cat "$T/body" >&2; fail "POST /v1/events: HTTP $c"; }; ok
}
ev_is() { curl -s -m 5 "$1/v1/events/$2" | grep -q "\"status\":\"$3\""; }
S=$(ISO "$(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 15}')")
post "$U1" "{\"id\":\"empty\",\"start\":\"$S\",\"duration_s\":60,\"reduction_pct\":20}"
wait_for 30 "the empty event to start" 'ev_is "$U1" empty active'
contains "$T/c1.log" "warning: event empty: nothing to shed (no managed load: 0 jobs, baseline 0 W)"
wait_for 30 "the metric" 'curl -s -m 5 "$U1/metrics" | grep -qF "pfi_ctl_event_not_applicable{event_id=\"empty\",reason=\"nothing to shed\"} 1"'; ok
curl -s -m 5 "$U1/metrics" | grep -q '^pfi_ctl_event_met{event_id="empty"}' && fail "pfi_ctl_event_met for an event with nothing to shed"; ok
curl -s -m 5 "$U1/v1/status" >"$T/st"
contains "$T/st" '"verdict":"nothing to shed","met":null'
expect_status 0 "$PFI" status --controller "$U1"
contains "$T/out" "warning: event empty (active): nothing to shed"
wait_for 30 "the empty event to end" 'ev_is "$U1" empty done'
curl -s -m 5 "$U1/v1/events/empty/report" >"$T/r.json"
contains "$T/r.json" '"verdict": "nothing to shed"'
contains "$T/r.json" '"met": false'
expect_status 0 "$PFI" event ls --controller "$U1" --format csv
grep -q '^empty,api,done,.*,nothing to shed$' "$T/out" || { cat "$T/out" >&2; fail "event ls: no verdict column"; }; ok
contains "$T/err" "pfi event: warning: event empty: nothing to shed"

# ---- cancelled before it shed anything; and a normal event, met ----
conf "$A2" jobs
start_daemon controller "$T/c2.log" "$T/c2.port" "$CTL" --config "$T/ctl-jobs.json" --port-file "$T/c2.port"
U2=http://127.0.0.1:$DPORT
S=$(ISO "$(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 20}')")
# a 600 s ramp: the first periods ask for no cut yet; cancelled at once
post "$U2" "{\"id\":\"early\",\"start\":\"$S\",\"duration_s\":900,\"reduction_pct\":20,\"ramp_s\":600}"
wait_for 30 "early to start" 'ev_is "$U2" early active'
c=$(curl -s -o "$T/body" -w '%{http_code}' -m 10 -X DELETE -H "Authorization: Bearer $(cat "$T/ctok")" "$U2/v1/events/early")
[ "$c" = 200 ] || { cat "$T/body" >&2; fail "DELETE early: HTTP $c"; }; ok
wait_for 30 "early cancelled" 'ev_is "$U2" early cancelled'
contains "$T/c2.log" "warning: event early: cancelled before it shed anything: not applicable"
curl -s -m 5 "$U2/v1/events/early/report" >"$T/r.json"
contains "$T/r.json" '"verdict": "not applicable"'
contains "$T/r.json" '"met": false'
wait_for 30 "its metric" 'curl -s -m 5 "$U2/metrics" | grep -qF "pfi_ctl_event_not_applicable{event_id=\"early\",reason=\"not applicable\"} 1"'; ok
S=$(ISO "$(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 15}')")
post "$U2" "{\"id\":\"normal\",\"start\":\"$S\",\"duration_s\":60,\"reduction_pct\":20}"
wait_for 60 "normal done" 'ev_is "$U2" normal done'
curl -s -m 5 "$U2/v1/events/normal/report" >"$T/r.json"
contains "$T/r.json" '"verdict": "met"'
contains "$T/r.json" '"met": true'
expect_status 0 "$PFI" event ls --controller "$U2" --format csv
grep -q '^normal,api,done,.*,met$' "$T/out" || { cat "$T/out" >&2; fail "event ls: normal not met"; }; ok
grep -q '^early,api,cancelled,.*,not applicable$' "$T/out" || { cat "$T/out" >&2; fail "event ls: early"; }; ok
done_ok
