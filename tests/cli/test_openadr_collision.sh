#!/bin/sh
# test_openadr_collision.sh — the grid creates, changes and cancels only its
# own events (docs/controller.md, "OpenADR 3"): OpenADR events (the webhook
# with the VTN's callback token, the poller) that reuse the id of an event
# of the operator (API) or of a trigger — active, scheduled, done, or one
# of a multi-interval event's step ids — are refused whole with 409 (the
# poller: logged), counted in pfi_ctl_openadr_rejected_total{reason=
# "collision"} and logged, and the operator's event keeps its source,
# target and status; an OpenADR DELETE of such an id cancels nothing. The
# grid's own events are still created and deleted, and the operator may
# still cancel them through the API. The callback token reaches none of
# the operator's endpoints (POST /v1/events, DELETE /v1/events/ID,
# POST /v1/trigger). Before the fix the webhook replaced the operator's
# active event (its source became "openadr") and then cancelled it.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok" "$T/cbtok"
CTOK=$(cat "$T/ctok") CB=$(cat "$T/cbtok")
printf 'ven-1\n' >"$T/cid"
printf 'secret\n' >"$T/csecret"
chmod 600 "$T/cid" "$T/csecret"
mkdir "$T/www"
echo '[]' >"$T/www/events.json"
kill_daemons_on_exit

# the plain poller's VTN: a directory served over http (its port file when listening)
cat >"$T/serve.py" <<'PY'
import functools, http.server, os, sys
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(H, directory=sys.argv[2]))
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
PY
start_daemon "events server" "$T/www.log" "$T/www.port" python3 "$T/serve.py" "$T/www.port" "$T/www"
POLL=http://127.0.0.1:$DPORT/events.json
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 0.5 --log "$T/a.log"
# a VTN out of reach (its callback token is what the webhook takes) and the plain poller
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5,
 "baseline_window_s": 1, "ramp_s": 0, "ramp_down_s": 0, "tiers": {"j1": 3},
 "openadr": {"poll_url": "$POLL", "poll_s": 1, "vtn_url": "http://127.0.0.1:9", "client_id_file": "$T/cid",
             "client_secret_file": "$T/csecret", "ven_name": "v1",
             "callback_url": "http://127.0.0.1:9/cb", "callback_token_file": "$T/cbtok"},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$(cat "$T/a.port")", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT

# req TOKEN METHOD PATH [BODY]: the answer in $T/body, the status in $CODE
req() { CODE=$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X "$2" -H "Authorization: Bearer $1" \
  -H 'Content-Type: application/json' ${4:+--data-binary "$4"} "$URL$3"); }
expect_code() { [ "$CODE" = "$1" ] || { cat "$T/body" >&2; fail "$2: HTTP $CODE, expected $1"; }; ok; }
ev_is() { curl -s -m 5 "$URL/v1/events/$1" | grep -q "\"status\":\"$2\""; }
# the operator's event is as the operator made it: ID SOURCE STATUS FIELD
operator_kept() {
  curl -s -m 5 "$URL/v1/events/$1" >"$T/ev"
  contains "$T/ev" "\"source\":\"$2\""; contains "$T/ev" "\"status\":\"$3\""; contains "$T/ev" "$4"
}
collisions() { metric "$URL" 'pfi_ctl_openadr_rejected_total{reason="collision"}'; }
# oadr ID OPERATION [START DURATION VALUE MODIFIED]: an OpenADR 3.1 notification of one SIMPLE interval
oadr() {
  printf '{"objectType":"EVENT","operation":"%s","object":{"id":"%s","objectType":"EVENT","modificationDateTime":"%s","intervalPeriod":{"start":"%s","duration":"%s"},"intervals":[{"id":0,"payloads":[{"type":"SIMPLE","values":[%s]}]}]}}' \
    "$2" "$1" "${6:-2026-01-01T00:00:00Z}" "${3:-0001-01-01}" "${4:-P9999Y}" "${5:-3}"
}
NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
LATER=$(date -u -d "@$(( $(date +%s) + 7200 ))" +%Y-%m-%dT%H:%M:%SZ)

# ---- the operator's events: active, scheduled, a step-like id, a trigger, one done ----
req "$CTOK" POST /v1/events '{"id":"op-1","start":"'$NOW'","duration_s":3600,"reduction_pct":10}'; expect_code 201 "op-1"
req "$CTOK" POST /v1/events '{"id":"op-2","start":"'$LATER'","duration_s":3600,"target_kw":2}'; expect_code 201 "op-2"
req "$CTOK" POST /v1/events '{"id":"multi.1","start":"'$LATER'","duration_s":600,"level":2}'; expect_code 201 "multi.1"
req "$CTOK" POST /v1/trigger '{"level":1,"id":"trig-1","duration_s":3600}'; expect_code 201 "trigger"
# its start taken just before it is sent, 5 s long: under load the requests
# before it can take longer than a 1 s event (it then ends before it arrives: 422)
req "$CTOK" POST /v1/events '{"id":"op-short","start":"'$(date -u +%Y-%m-%dT%H:%M:%SZ)'","duration_s":5,"reduction_pct":5}'; expect_code 201 "op-short"
wait_for 30 "op-1 active" 'ev_is op-1 active'
wait_for 30 "op-short done" 'ev_is op-short done'
curl -s -m 5 "$URL/v1/events" >"$T/list"; contains "$T/list" '"id":"op-1"' # the ids are public

# ---- the webhook (callback token) reuses them: refused, nothing changed ----
req "$CB" POST /openadr3/events "$(oadr op-1 CREATE)"; expect_code 409 "webhook CREATE op-1"
contains "$T/body" "its id op-1 is the id of an event of source api: the whole event is refused"
operator_kept op-1 api active '"reduction_pct":10'
req "$CB" POST /openadr3/events "$(oadr op-1 UPDATE 0001-01-01 P9999Y 1 2026-02-01T00:00:00Z)"; expect_code 409 "webhook UPDATE op-1"
req "$CB" POST /openadr3/events "$(oadr op-1 DELETE 0001-01-01 P9999Y 1 2026-02-01T00:00:00Z)"; expect_code 409 "webhook DELETE op-1"
contains "$T/body" "op-1 is the id of an event of source api: not cancelled"
operator_kept op-1 api active '"reduction_pct":10'
req "$CB" POST /openadr3/events "$(oadr op-2 CREATE "$NOW" PT1H 1)"; expect_code 409 "webhook CREATE op-2 (scheduled)"
operator_kept op-2 api scheduled '"target_kw":2'
req "$CB" POST /openadr3/events "$(oadr trig-1 CREATE)"; expect_code 409 "webhook CREATE trig-1"
contains "$T/body" "source trigger"
operator_kept trig-1 trigger active '"level":1'
req "$CB" POST /openadr3/events "$(oadr op-short CREATE "$LATER" PT1H 1)"; expect_code 409 "webhook CREATE op-short (done)"
operator_kept op-short api done '"reduction_pct":5'
# two intervals: steps multi.0 and multi.1, the second the operator's: refused whole
req "$CB" POST /openadr3/events '{"id":"multi","objectType":"EVENT","intervalPeriod":{"start":"'$LATER'","duration":"PT10M"},"intervals":[{"id":0,"payloads":[{"type":"SIMPLE","values":[1]}]},{"id":1,"payloads":[{"type":"SIMPLE","values":[3]}]}]}'
expect_code 409 "webhook multi"
contains "$T/body" "its step multi.1 is the id of an event of source api"
req "$CTOK" GET /v1/events/multi.0; expect_code 404 "multi.0 kept"
operator_kept multi.1 api scheduled '"level":2'
# the controller's own token on the webhook is the grid's path too
req "$CTOK" POST /openadr3/events "$(oadr op-2 DELETE)"; expect_code 409 "webhook DELETE op-2 with the controller's token"
operator_kept op-2 api scheduled '"target_kw":2'
[ "$(collisions)" = 8 ] || fail "collisions counted: $(collisions), expected 8"; ok
[ "$(grep -c 'OpenADR event op-1 (webhook): not acted on (collision)' "$T/ctl.log")" = 3 ] || fail "op-1's collisions not logged"; ok

# ---- the poller: the same ids served by a VTN ----
printf '[%s]\n' "$(oadr op-1 CREATE 0001-01-01 P9999Y 3 2026-03-01T00:00:00Z | sed 's/.*"object"://; s/}$//')" >"$T/www/events.json"
wait_for 30 "the poller's collision" '[ "$(collisions)" = 9 ]'
contains "$T/ctl.log" "OpenADR event op-1 (poll): not acted on (collision)"
operator_kept op-1 api active '"reduction_pct":10'

# ---- the grid's own events: created, changed and deleted as before ----
req "$CB" POST /openadr3/events "$(oadr grid-1 CREATE)"; expect_code 200 "webhook CREATE grid-1"
contains "$T/body" '"result":"applied"'
wait_for 30 "grid-1 active" 'ev_is grid-1 active'
req "$CB" POST /openadr3/events "$(oadr grid-1 DELETE)"; expect_code 200 "webhook DELETE grid-1"
wait_for 30 "grid-1 cancelled" 'ev_is grid-1 cancelled'
# the grid's events are recorded as the grid's (the callback token is no operator)
curl -s -m 5 "$URL/v1/events/grid-1" >"$T/ev"
contains "$T/ev" '"created_by":"grid","changed_by":null,"cancelled_by":"grid"'
contains "$T/ctl.log" "OpenADR event grid-1 (webhook): 1 interval scheduled or updated by grid"
contains "$T/ctl.log" "OpenADR event grid-1 (webhook) deleted by grid"
# ... and the operator may still cancel one through the API
req "$CB" POST /openadr3/events "$(oadr grid-2 CREATE "$LATER" PT1H 2)"; expect_code 200 "webhook CREATE grid-2"
req "$CTOK" DELETE /v1/events/grid-2; expect_code 200 "the operator cancels grid-2"
ev_is grid-2 cancelled || fail "grid-2 not cancelled"; ok
# token_file's operator, "operator"
contains "$T/body" '"created_by":"grid","changed_by":null,"cancelled_by":"operator"'

# ---- the callback token reaches none of the operator's endpoints ----
req "$CB" POST /v1/events '{"id":"cb-1","start":"'$LATER'","duration_s":60,"level":1}'; expect_code 401 "callback token: POST /v1/events"
req "$CB" DELETE /v1/events/op-1; expect_code 401 "callback token: DELETE /v1/events/op-1"
req "$CB" POST /v1/trigger '{"level":3}'; expect_code 401 "callback token: POST /v1/trigger"
req "$CB" PUT /v1/events/op-1 '{}'; expect_code 401 "callback token: PUT /v1/events/op-1"
operator_kept op-1 api active '"reduction_pct":10'
done_ok
