#!/bin/sh
# test_controller_openadr.sh — the controller as an OpenADR 3 VEN (issue 16):
# the specification's examples (tests/openadr3/) POSTed to /openadr3/events
# as a bare EVENT (what a VTN serves) and as a 3.1 CREATE notification are
# listed with their steps' targets (the capacity-limit schedule 10 kW ->
# 8 kW as two steps, minus the non-GPU offset); an UPDATE with a newer
# modificationDateTime changes a scheduled step's target and an active
# event's level at once; the older version afterwards and a unit KVA are
# refused once each, counted in pfi_ctl_openadr_rejected_total{reason};
# of two overlapping events the one of higher priority sets the budget.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER:-$(dirname "$PFI_AGENT")/pfi-controller}
FIX=$SRC/tests/openadr3
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
kill_daemons_on_exit

start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 1 --log "$T/a.log"
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5, "baseline_window_s": 20,
 "lease_s": 30, "tiers": {"j1": 3}, "non_gpu_offset_kw": 4, "ramp_s": 0, "ramp_down_s": 0, "openadr": {"version": "3.1", "ven_name": "ven-a"},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$(cat "$T/a.port")", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
req() { # METHOD PATH [BODY-FILE]
  CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $CTOK" ${3:+--data-binary "@$3"} "$URL$2")
}
expect_code() { [ "$CODE" = "$1" ] || { cat "$T/body" >&2; fail "$2: HTTP $CODE, expected $1"; }; ok; }
ev() { curl -s -m 5 "$URL/v1/events/$1" >"$T/ev"; }
ev_is() { curl -s -m 5 "$URL/v1/events/$1" | grep -q "\"status\":\"$2\""; }
# the examples are dated 2023 and 2025: moved a day ahead of the controller's clock
NOW=$(awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.0f", e + (w - e) * 20}')
S=$(date -u -d "@$((NOW + 86400))" +%Y-%m-%dT%H:%M:%S.000Z)
S30=$(date -u -d "@$((NOW + 86400 + 1800))" +%Y-%m-%dT%H:%M:%SZ)
ahead() { sed "s/2023-02-10T00:00:00.000Z/$S/; s/2025-03-14T00:00:00.000Z/$S/" "$FIX/$1" >"$T/$1"; }

# ---- a bare EVENT as a VTN serves it (SIMPLE, Example 8.2-1) ----
ahead vtn_simple_event.json
req POST /openadr3/events "$T/vtn_simple_event.json"; expect_code 200 "bare EVENT"
contains "$T/body" '"result":"applied"'
ev simple-1; contains "$T/ev" '"level":1'; contains "$T/ev" '"status":"scheduled"'; contains "$T/ev" '"duration_s":14400'

# ---- a 3.1 CREATE notification: two steps, 10 kW and 8 kW minus 4 kW ----
ahead n31_create_capacity_limit.json
req POST /openadr3/events "$T/n31_create_capacity_limit.json"; expect_code 200 "3.1 CREATE"
ev cap-1.0; contains "$T/ev" '"target_kw":6'; contains "$T/ev" "\"start\":\"$(echo "$S" | sed 's/\.000Z/Z/')\""; contains "$T/ev" '"duration_s":1800'
ev cap-1.1; contains "$T/ev" '"target_kw":4'; contains "$T/ev" "\"start\":\"$S30\""
# the same version again (a repeated delivery): unchanged
req POST /openadr3/events "$T/n31_create_capacity_limit.json"; expect_code 200 "same version"
contains "$T/body" '"result":"unchanged"'
# ---- UPDATE, newer: the second step is 7 kW -> 3 kW ----
ahead n31_update_capacity_limit.json
req POST /openadr3/events "$T/n31_update_capacity_limit.json"; expect_code 200 "3.1 UPDATE"
ev cap-1.1; contains "$T/ev" '"target_kw":3'
ev cap-1.0; contains "$T/ev" '"target_kw":6'
# the older version afterwards: ignored, reported once
req POST /openadr3/events "$T/n31_create_capacity_limit.json"; expect_code 200 "older version"
contains "$T/body" '"reason":"stale"'
req POST /openadr3/events "$T/n31_create_capacity_limit.json"
ev cap-1.1; contains "$T/ev" '"target_kw":3'
[ "$(grep -c 'cap-1 (webhook): not acted on (stale)' "$T/ctl.log")" = 1 ] || fail "stale version not logged once"; ok

# ---- an event that runs now (0001-01-01, P9999Y), updated while active ----
req POST /openadr3/events "$FIX/vtn_simple_now_p9999y.json"; expect_code 200 "now, until cancelled"
wait_for 30 "now-forever to start" 'ev_is now-forever active'
ev now-forever; contains "$T/ev" '"open_ended":true'; contains "$T/ev" '"level":1'
sed 's/"modificationDateTime": "2025-03-01T00:00:00.000Z"/"modificationDateTime": "2025-03-02T00:00:00.000Z"/' \
  "$FIX/vtn_simple_now_p9999y.json" | tr -d '\n' | sed 's/"values": \[ *1 *\]/"values": [2]/' >"$T/upd.json"
printf '{"objectType":"EVENT","operation":"UPDATE","object":%s}' "$(cat "$T/upd.json")" >"$T/upd-n.json"
req POST /openadr3/events "$T/upd-n.json"; expect_code 200 "UPDATE while active"
ev now-forever; contains "$T/ev" '"level":2'; contains "$T/ev" '"status":"active"'
# DELETE ends it
sed 's/"UPDATE"/"DELETE"/' "$T/upd-n.json" >"$T/del.json"
req POST /openadr3/events "$T/del.json"; expect_code 200 "DELETE"
wait_for 30 "now-forever to be cancelled" 'ev_is now-forever cancelled'

# ---- overlapping events: the higher priority wins, even with a higher target ----
now_icl() { # ID LIMIT_KW PRIORITY
  printf '{"id":"%s","objectType":"EVENT","modificationDateTime":"2026-01-01T00:00:00Z","priority":%s,"intervalPeriod":{"start":"0001-01-01","duration":"P9999Y"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[%s]}]}]}' "$1" "$3" "$2" >"$T/$1.json"
  req POST /openadr3/events "$T/$1.json"; expect_code 200 "event $1"
}
now_icl hi 6 0  # 2 kW GPU target, priority 0
now_icl lo 5 3  # 1 kW, priority 3
wait_for 30 "both to start" 'ev_is hi active && ev_is lo active'
wait_for 30 "the budget of the priority-0 event" '[ "$(metric "$URL" pfi_ctl_target_watts)" = 2000 ]'
sed 's/"priority":0/"priority":5/; s/2026-01-01T00:00:00Z/2026-01-02T00:00:00Z/' "$T/hi.json" >"$T/hi2.json"
req POST /openadr3/events "$T/hi2.json"; expect_code 200 "hi demoted"
wait_for 30 "the budget of the priority-3 event" '[ "$(metric "$URL" pfi_ctl_target_watts)" = 1000 ]'

# ---- refused once per version, counted by reason ----
req POST /openadr3/events "$FIX/bad_unit_kva.json"; expect_code 400 "unit KVA"
contains "$T/body" 'KVA'
req POST /openadr3/events "$FIX/bad_unit_kva.json"; expect_code 400 "unit KVA again"
[ "$(metric "$URL" 'pfi_ctl_openadr_rejected_total{reason="unit"}')" = 1 ] || fail "unit rejections not counted once"; ok
[ "$(metric "$URL" 'pfi_ctl_openadr_rejected_total{reason="stale"}')" = 1 ] || fail "stale not counted"; ok
curl -s "$URL/metrics" >"$T/m"; contains "$T/m" '# TYPE pfi_ctl_openadr_rejected_total counter'
# not for this VEN (3.1 targets name ven-a and site-7: ours is ven-a; another id)
sed 's/"cap-1"/"cap-other"/; s/"ven-a"/"ven-z"/; s/"site-7"/"site-z"/' "$FIX/n31_create_targeted.json" >"$T/other.json"
req POST /openadr3/events "$T/other.json"; expect_code 200 "not targeted"
contains "$T/body" '"reason":"targets"'
req GET /v1/events/cap-other.0; expect_code 404 "untargeted event listed"
# for us, then a newer version for another VEN: its steps are cancelled
ahead n31_create_targeted.json
sed 's/"cap-1"/"cap-t"/' "$T/n31_create_targeted.json" >"$T/t1.json"
req POST /openadr3/events "$T/t1.json"; expect_code 200 "targeted"
ev cap-t.0; contains "$T/ev" '"status":"scheduled"'
sed 's/"ven-a"/"ven-z"/; s/"site-7"/"site-z"/; s/2023-02-01T10:00:00.000Z/2023-02-01T12:00:00.000Z/' "$T/t1.json" >"$T/t2.json"
req POST /openadr3/events "$T/t2.json"; expect_code 200 "retargeted away"
ev cap-t.0; contains "$T/ev" '"status":"cancelled"'
ev cap-t.1; contains "$T/ev" '"status":"cancelled"'
done_ok
