#!/bin/sh
# test_event_capacity.sh — no silent loss and no lock-out (issue 29 item 8):
# a routine day-ahead OpenADR event of 96 PT15M intervals and a week of 672
# (openleadr-rs's full-form durations) are kept whole through the webhook;
# the grid's events then fill its bound of 16,384 pending intervals
# (ctl_state.h), and an event that would pass it is refused whole (413,
# pfi_ctl_openadr_rejected_total{reason="refused"}, none of its intervals
# listed), also a new version of a kept event that would (the old version
# stays); the operator's POST /v1/events and POST /v1/trigger still answer
# 201 while the grid's room is full.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
kill_daemons_on_exit
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 1 --log "$T/a.log"
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 2,
 "lease_s": 30, "tiers": {"j1": 3},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$(cat "$T/a.port")", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
# adr ID N MODIFIED: an OpenADR 3.1 EVENT of N PT15M intervals (full form),
# starting in an hour, into $T/ev.json
adr() {
  python3 - "$1" "$2" "$3" >"$T/ev.json" <<'PY'
import json, sys, time
i, n, mod = sys.argv[1], int(sys.argv[2]), sys.argv[3]
start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
print(json.dumps({"id": i, "objectType": "EVENT", "programID": "p1", "modificationDateTime": mod,
  "intervalPeriod": {"start": start, "duration": "P0Y0M0DT0H15M0S"},
  "intervals": [{"id": k, "payloads": [{"type": "SIMPLE", "values": [1 + k % 3]}]} for k in range(n)]}))
PY
}
post() { # PATH FILE
  CODE=$(curl -s -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $CTOK" -H 'Content-Type: application/json' --data-binary @"$2" "$URL$1")
}
listed() { # the steps of OpenADR event $1 in GET /v1/events
  curl -s "$URL/v1/events" | grep -o "\"id\":\"$1\.[0-9]*\"" | wc -l
}
adr day 96 2026-01-01T00:00:00Z; post /openadr3/events "$T/ev.json"
[ "$CODE" = 200 ] || { head -c 300 "$T/body" >&2; fail "96 intervals: HTTP $CODE"; }; ok
[ "$(listed day)" = 96 ] || fail "96 intervals sent, $(listed day) listed"; ok
contains "$T/ctl.log" "OpenADR event day (webhook): 96 intervals scheduled or updated"
adr week 672 2026-01-01T00:00:00Z; post /openadr3/events "$T/ev.json"
[ "$CODE" = 200 ] || { head -c 300 "$T/body" >&2; fail "672 intervals: HTTP $CODE"; }; ok
[ "$(listed week)" = 672 ] || fail "672 intervals sent, $(listed week) listed"; ok
# fill the grid's room: 768 + 15 x 1000 + 600 = 16,368 of 16,384
for k in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
  adr "fill$k" 1000 2026-01-01T00:00:00Z; post /openadr3/events "$T/ev.json"
  [ "$CODE" = 200 ] || { head -c 300 "$T/body" >&2; fail "fill$k: HTTP $CODE"; }
done; ok
adr fill16 600 2026-01-01T00:00:00Z; post /openadr3/events "$T/ev.json"
[ "$CODE" = 200 ] || { head -c 300 "$T/body" >&2; fail "fill16: HTTP $CODE"; }; ok
# 17 more would pass the bound: the whole event refused, nothing of it kept
adr over 17 2026-01-01T00:00:00Z; post /openadr3/events "$T/ev.json"
[ "$CODE" = 413 ] || { head -c 300 "$T/body" >&2; fail "over the bound: HTTP $CODE (expected 413)"; }; ok
contains "$T/body" "whole event is refused"
[ "$(listed over)" = 0 ] || fail "a refused event left $(listed over) intervals"; ok
contains "$T/ctl.log" "OpenADR event over (webhook): not acted on (refused)"
curl -s "$URL/metrics" | grep -q 'pfi_ctl_openadr_rejected_total{reason="refused"} 1' ||
  { curl -s "$URL/metrics" | grep rejected >&2; fail "the refusal not counted"; }; ok
# a new version of "week" with 700 intervals would pass it too: refused, the 672 stay
adr week 700 2026-02-01T00:00:00Z; post /openadr3/events "$T/ev.json"
[ "$CODE" = 413 ] || { head -c 300 "$T/body" >&2; fail "a larger version: HTTP $CODE"; }; ok
[ "$(listed week)" = 672 ] || fail "the kept version lost intervals: $(listed week) listed"; ok
# 16 fit exactly
adr last 16 2026-01-01T00:00:00Z; post /openadr3/events "$T/ev.json"
[ "$CODE" = 200 ] || { head -c 300 "$T/body" >&2; fail "the last 16: HTTP $CODE"; }; ok
# the operator and the trigger keep their own room
S=$(date -u -d "@$(($(date +%s) + 7200))" +%Y-%m-%dT%H:%M:%SZ)
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $CTOK" --data-binary "{\"id\":\"op1\",\"start\":\"$S\",\"duration_s\":600,\"reduction_pct\":10}" "$URL/v1/events")
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "operator event with the grid full: HTTP $CODE"; }; ok
CODE=$(curl -s -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $CTOK" --data-binary '{"level":1,"duration_s":5}' "$URL/v1/trigger")
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "trigger with the grid full: HTTP $CODE"; }; ok
done_ok
