#!/bin/sh
# test_openadr_now.sh — "now" is fixed at the first receipt of an OpenADR
# event's id (issue 29): an event that starts at 0001-01-01T00:00:00Z (as a
# VTN that stores timestamps writes "now") keeps the start it got when it
# first arrived, through a new version (newer modificationDateTime, a
# deeper limit) and through a controller restart; its second interval,
# whose start is "now" too, starts where the first ends (User Guide 7.3),
# not at the wall clock.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
kill_daemons_on_exit
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 1 --log "$T/a.log"
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 1,
 "lease_s": 30, "tiers": {"j1": 3},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$(cat "$T/a.port")", "token_file": "$T/atok"}]}
EOF
start_ctl() {
  start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
  CP=$DPID URL=http://127.0.0.1:$DPORT
}
start_ctl
# ev MODIFIED KW: the event, two intervals of PT1H, both starting "now"
ev() {
  printf '{"id":"nowev","objectType":"EVENT","modificationDateTime":"%s","intervalPeriod":{"start":"0001-01-01T00:00:00Z","duration":"PT1H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[%s]}]},{"id":1,"intervalPeriod":{"start":"0001-01-01T00:00:00+00:00"},"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[%s]}]}]}' "$1" "$2" "$2"
}
post() {
  CODE=$(curl -s -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $CTOK" -H 'Content-Type: application/json' --data-binary "$1" "$URL/openadr3/events")
  [ "$CODE" = 200 ] || { cat "$T/body" >&2; fail "webhook: HTTP $CODE"; }; ok
}
start_of() { # STEP: its start in /v1/events
  curl -s "$URL/v1/events/$1" | sed -n 's/.*"start":"\([^"]*\)".*/\1/p'
}
post "$(ev 2026-01-01T00:00:00Z 2)"
S0=$(start_of nowev.0); S1=$(start_of nowev.1)
[ -n "$S0" ] && [ -n "$S1" ] || fail "steps not listed: $(curl -s "$URL/v1/events")"; ok
[ "$(date -u -d "$S1" +%s)" = "$(( $(date -u -d "$S0" +%s) + 3600 ))" ] || fail "the second interval's now: $S1 (first $S0)"; ok
# a new version two seconds later: the same start (not restarted)
T0=$(date +%s.%N)
wait_for 10 "two seconds" '[ "$(awk -v a="$T0" -v b="$(date +%s.%N)" "BEGIN{print (b - a >= 2)}")" = 1 ]'
post "$(ev 2026-01-02T00:00:00Z 1.5)"
[ "$(start_of nowev.0)" = "$S0" ] || fail "a new version restarted the event: $(start_of nowev.0), was $S0"; ok
# a restart: the stored first receipt holds, and the same version served again
stop_daemon "$CP" TERM
start_ctl
post "$(ev 2026-01-02T00:00:00Z 1.5)"
[ "$(start_of nowev.0)" = "$S0" ] || fail "a restart restarted the event: $(start_of nowev.0), was $S0"; ok
[ "$(start_of nowev.1)" = "$S1" ] || fail "the second interval moved: $(start_of nowev.1), was $S1"; ok
done_ok
