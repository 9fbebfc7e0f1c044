#!/bin/sh
# test_event_bounds.sh — the controller refuses grid events it cannot run or
# store (issue 14 item 9): through the API and the OpenADR 3 webhook, a
# malformed ("P1e303W"), negative or past-9999 duration and an 8.9e12 kW
# target are each a 400 with a one-line error naming the field, and nothing
# is listed; a 32-day event is accepted (issue 29: no bound below 9999); an explicitly open-ended event runs until cancelled, is
# listed with its id, has a report (200) before and after its end, and
# survives controller restarts, running and cancelled.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
kill_daemons_on_exit

start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 1 --log "$T/a.log"
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5, "baseline_window_s": 20,
 "lease_s": 30, "tiers": {"j1": 3}, "non_gpu_offset_kw": 10,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$(cat "$T/a.port")", "token_file": "$T/atok"}]}
EOF
start_ctl() {
  start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
  CP=$DPID; URL=http://127.0.0.1:$DPORT
}
start_ctl
req() { # METHOD PATH [BODY]
  CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $CTOK" ${3:+--data-binary "$3"} "$URL$2")
}
# refused CODE FIELD: HTTP CODE, one line {"error": ...} naming FIELD
refused() {
  [ "$CODE" = "$1" ] || { cat "$T/body" >&2; fail "HTTP $CODE, expected $1 ($2)"; }
  contains "$T/body" "$2"
  [ "$(grep -c . "$T/body")" = 1 ] && grep -q '^{"error":' "$T/body" || { cat "$T/body" >&2; fail "not a one-line error"; }; ok
}
NOW=$(awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.0f", e + (w - e) * 20 + 40}')
S=$(date -u -d "@$NOW" +%Y-%m-%dT%H:%M:%SZ)

# ---- out of bounds: refused, nothing listed ----
req POST /v1/events "{\"id\":\"long\",\"start\":\"$S\",\"duration_s\":2.6e11,\"level\":1}"; refused 400 "duration_s"
req POST /v1/events "{\"id\":\"neg\",\"start\":\"$S\",\"duration\":\"-PT1H\",\"level\":1}"; refused 400 "duration"
req POST /v1/events "{\"id\":\"huge\",\"start\":\"$S\",\"duration_s\":600,\"target_kw\":8.9e12}"; refused 400 "target_kw"
adr() { # ID DURATION PAYLOAD
  printf '{"objectType":"EVENT","operation":"POST","object":{"id":"%s","intervalPeriod":{"start":"%s","duration":"%s"},"intervals":[{"payloads":[%s]}]}}' \
    "$1" "$S" "$2" "$3"
}
req POST /openadr3/events "$(adr forever P1e303W '{"type":"SIMPLE","values":[1]}')"; refused 400 "duration P1e303W"
req POST /openadr3/events "$(adr neg -PT1H '{"type":"SIMPLE","values":[1]}')"; refused 400 "duration"
req POST /openadr3/events "$(adr big PT1H '{"type":"IMPORT_CAPACITY_LIMIT","values":[8.9e12]}')"; refused 400 "values[0]"
req GET /v1/events
[ "$CODE" = 200 ] || fail "GET /v1/events: HTTP $CODE"; ok
contains "$T/body" '{"events":[]}'
# a month (over the 7 days of earlier versions), in openleadr-rs's full form: accepted
req POST /openadr3/events "$(adr month P0Y1M2DT0H0M0S '{"type":"SIMPLE","values":[1]}')"
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "P0Y1M2DT0H0M0S: HTTP $CODE"; }; ok
req DELETE /v1/events/month
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "cancel the month: HTTP $CODE"; }; ok
req POST /v1/events "{\"id\":\"d32\",\"start\":\"$S\",\"duration_s\":2764800,\"level\":1}"
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "32 days through the API: HTTP $CODE"; }; ok
req DELETE /v1/events/d32

# ---- an explicitly open-ended event: until cancelled ----
req POST /v1/events "{\"id\":\"open\",\"start\":\"$S\",\"open_ended\":true,\"reduction_pct\":20}"
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "open-ended: HTTP $CODE"; }; ok
contains "$T/body" '"open_ended":true'
lacks "$T/body" '"duration_s"'
contains "$T/ctl.log" "open-ended (until cancelled)"
status_is() { curl -s "$URL/v1/events/$1" | grep -q "\"status\":\"$2\""; }
wait_for 30 "the open-ended event active" 'status_is open active'
req GET /v1/events
contains "$T/body" '"id":"open"'
req GET /v1/events/open/report
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "report of a running open-ended event: HTTP $CODE"; }; ok
contains "$T/body" '"duration_s": null'
# a restart: the event is stored as it was sent and resumes
stop_daemon "$CP" TERM
start_ctl
contains "$T/ctl.log" "resuming event open"
lacks "$T/ctl.log" "does not parse"
req GET /v1/events/open
contains "$T/body" '"status":"active"'
contains "$T/body" '"open_ended":true'
req DELETE /v1/events/open
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "cancel: HTTP $CODE"; }; ok
wait_for 30 "the open-ended event ended" 'status_is open cancelled'
req GET /v1/events/open/report
[ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "report after the end: HTTP $CODE"; }; ok
grep -q '"duration_s": [0-9]' "$T/body" || { cat "$T/body" >&2; fail "no duration after the end"; }; ok
# stored with its end: read back after another restart
stop_daemon "$CP" TERM
start_ctl
lacks "$T/ctl.log" "does not parse"
req GET /v1/events/open
contains "$T/body" '"status":"cancelled"'
grep -q '"duration_s":[0-9]' "$T/body" || { cat "$T/body" >&2; fail "the cancelled event lost its duration"; }; ok
done_ok
