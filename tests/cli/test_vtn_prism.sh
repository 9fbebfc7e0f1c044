#!/bin/sh
# test_vtn_prism.sh — pfi-controller as an OpenADR 3 VEN against the
# specification itself: Stoplight Prism (scripts/prism.sh) serves the
# vendored openadr3.yaml (tests/openadr3/spec/, 3.1.1 then 3.0.1) in mock
# mode on a kernel-chosen loopback port and validates every request. The
# controller fetches a token (client credentials, form-encoded, from the
# spec's own /auth/token), registers its VEN (GET /vens, POST /vens),
# subscribes to EVENT (GET /subscriptions, POST /subscriptions with its
# callback URL and its own bearer token, made in a 0600 file), polls
# GET /events with the program and target filters, and reports an event it
# got through the webhook once it has run (POST /reports: DEMAND, BASELINE,
# DELTA_USAGE per interval); with the VTN out of reach (3.1.1) the report
# stays in SQLite, is tried again and goes to the VTN after a restart. The
# test waits for each step in the controller's log, then fails on every "Violation: request"
# finding Prism logged (findings about Prism's own mock answers, e.g. an
# example event whose objectType is PROGRAM, are not ours). The webhook
# accepts the callback token and the controller's token, and refuses any
# other. Token renewal and the 401 retry: tests/runtime/test_vtn_client.c.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
# installed on first use (the npm registry must be reachable then): without it the
# contract cannot be checked, which is a failure, not a skip
PRISM=$(sh "$SRC/scripts/prism.sh" "$BUILD/prism" 2>"$T/prism-install.err") ||
  fail "Prism could not be installed: $(cat "$T/prism-install.err")"
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
printf 'pfi-ven-client\n' >"$T/cid"
printf 'pfi-ven-s3cret&=x\n' >"$T/csecret"
chmod 600 "$T/cid" "$T/csecret"
kill_daemons_on_exit
# one simulated node, for an event that runs and is reported
start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 0.5 --log "$T/a.log"
AP=$DPORT

# start_prism: Prism serving version $V's specification, logging to $T/prism.log; $VTN
start_prism() {
  : >"$T/prism.log"
  start_daemon "prism $V" "$T/prism.log" "" "$PRISM" mock -h 127.0.0.1 -p 0 "$SRC/tests/openadr3/spec/$V/openadr3.yaml"
  PRISM_PID=$DPID
  wait_for 60 "Prism to listen ($V)" 'grep -q "Prism is listening on http://127.0.0.1:[0-9]" "$T/prism.log"'
  PP=$(sed -n 's|.*Prism is listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$T/prism.log" | head -1)
  VTN=http://127.0.0.1:$PP
}
# stop_prism: stop it; fail on every request it found against the contract
stop_prism() {
  stop_daemon "$PRISM_PID"
  if grep -F "Violation: request" "$T/prism.log" >"$T/violations"; then
    cat "$T/violations" >&2; fail "Prism found requests against the OpenADR $V contract"
  fi
  ok
  # a 401 from Prism (a request without the bearer token) would show as such
  ! grep -q "Responding with \"401\"" "$T/prism.log" || { grep "security\|401" "$T/prism.log" | head >&2; fail "Prism refused our credentials ($V)"; }
  ok
}
# start_ctl: the controller as a VEN of $VTN; $URL, $CPID
start_ctl() {
  cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5,
 "baseline_window_s": 2, "tiers": {"j1": 3},
 "openadr": {"version": "$CFGV", "vtn_url": "$VTN", "token_url": "$VTN/auth/token",
             "client_id_file": "$T/cid", "client_secret_file": "$T/csecret",
             "ven_name": "pfi-test-ven", "program_id": "program-1", "targets": ["group-1", "site 2"],
             "callback_url": "http://127.0.0.1:9/openadr3/events", "callback_token_file": "$T/cbtok",
             "poll_s": 1, "report_interval_s": 2},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$AP", "token_file": "$T/atok"}]}
EOF
  start_daemon "controller ($V)" "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
  CPID=$DPID URL=http://127.0.0.1:$DPORT
}
# post_event ID: an OpenADR event through the webhook (the callback token), 3 s from 2 s on
post_event() {
  S=$(date -u -d "@$(( $(date +%s) + 2 ))" +%Y-%m-%dT%H:%M:%SZ)
  c=$(curl -s -o "$T/body" -w '%{http_code}' -m 5 -X POST -H "Authorization: Bearer $CB" -H 'Content-Type: application/json' \
    --data-binary '{"id":"'$1'","intervalPeriod":{"start":"'$S'","duration":"PT3S"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[1.5]}]}]}' \
    "$URL/openadr3/events")
  [ "$c" = 200 ] || [ "$c" = 201 ] || { cat "$T/body" >&2; fail "webhook event $1 ($V): HTTP $c"; }; ok
}
# post_multi ID: a two-interval event (interval ids 3 and 5, PT2S each, the
# second at "now" = the first's end) whose REPORTs must carry the VTN's id
# ID and those interval ids (issue 29 item 6: "ID.0" broke the schema)
post_multi() {
  S=$(date -u -d "@$(( $(date +%s) + 2 ))" +%Y-%m-%dT%H:%M:%SZ)
  c=$(curl -s -o "$T/body" -w '%{http_code}' -m 5 -X POST -H "Authorization: Bearer $CB" -H 'Content-Type: application/json' \
    --data-binary '{"id":"'$1'","intervalPeriod":{"start":"'$S'","duration":"P0Y0M0DT0H0M2S"},"intervals":[{"id":3,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[1.5]}]},{"id":5,"intervalPeriod":{"start":"0001-01-01T00:00:00Z"},"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[1.4]}]}]}' \
    "$URL/openadr3/events")
  [ "$c" = 200 ] || { cat "$T/body" >&2; fail "webhook event $1 ($V): HTTP $c"; }; ok
}

for V in 3.1.1 3.0.1; do
  CFGV=$([ $V = 3.1.1 ] && echo 3.1 || echo 3.0.1)
  rm -f "$T/cbtok" "$T/ctl.db"
  : >"$T/ctl.log"
  start_prism
  start_ctl
  for step in "VTN: access token fetched from $VTN/auth/token" "VTN: registered as VEN pfi-test-ven (id " \
    "VTN: subscribed to EVENT (subscription " "VTN: polled events: "; do
    wait_for 30 "$step ($V)" 'grep -qF "$step" "$T/ctl.log"'; ok
  done
  # a second poll: the token is reused
  wait_for 10 "a second poll ($V)" '[ "$(grep -c "HTTP SERVER\] get /events " "$T/prism.log")" -ge 2 ]'
  [ "$(grep -c "VTN: access token fetched" "$T/ctl.log")" = 1 ] || fail "a token per request ($V)"; ok
  [ "$(grep -c "HTTP SERVER\] post /auth/token " "$T/prism.log")" = 1 ] || fail "more than one token request ($V)"; ok
  # the callback token: made once, 0600, 64 hex characters
  [ "$(stat -c %a "$T/cbtok")" = 600 ] || fail "callback token file mode $(stat -c %a "$T/cbtok")"; ok
  grep -qE '^[0-9a-f]{64}$' "$T/cbtok" || fail "callback token: $(cat "$T/cbtok")"; ok
  CB=$(cat "$T/cbtok")
  # the webhook: the callback token and the controller's token pass the check, others do not
  hook() { curl -s -o /dev/null -w '%{http_code}' -m 5 -X POST ${1:+-H "Authorization: Bearer $1"} \
    -H 'Content-Type: application/json' --data-binary '{}' "$URL/openadr3/events"; }
  c=$(hook "$CB"); [ "$c" != 401 ] && [ "$c" != 000 ] || fail "webhook refused the callback token ($c)"; ok
  c=$(hook "$CTOK"); [ "$c" != 401 ] && [ "$c" != 000 ] || fail "webhook refused the controller token ($c)"; ok
  [ "$(hook "x$CB")" = 401 ] || fail "webhook took a wrong token"; ok
  [ "$(hook "")" = 401 ] || fail "webhook took no token"; ok
  # the callback token is no control token
  c=$(curl -s -o /dev/null -w '%{http_code}' -m 5 -X POST -H "Authorization: Bearer $CB" --data-binary '{}' "$URL/v1/events")
  [ "$c" = 401 ] || fail "the callback token was taken by POST /v1/events ($c)"; ok
  # once an event has run, its REPORT (DEMAND, BASELINE, DELTA_USAGE per 2 s) goes to the VTN
  EV=rep-$(echo $V | tr . -)
  post_event "$EV"
  wait_for 30 "the report of $EV ($V)" 'grep -qF "VTN: report for event $EV#0 accepted (report " "$T/ctl.log"'; ok
  # a multi-interval event: each interval's REPORT accepted by the contract
  post_multi "$EV-m"
  for k in 0 1; do
    wait_for 30 "the report of interval $k of $EV-m ($V)" 'grep -qF "VTN: report for event $EV-m.$k#0 accepted (report " "$T/ctl.log"'; ok
  done
  lacks "$T/ctl.log" "fails the OpenADR schema"
  # every request Prism saw
  for r in "post /auth/token" "get /vens" "post /vens" "get /subscriptions" "post /subscriptions" "get /events" "post /reports"; do
    grep -qF "[HTTP SERVER] $r " "$T/prism.log" || { tail -40 "$T/prism.log" >&2; fail "Prism saw no $r ($V)"; }; ok
  done
  if [ $V = 3.1.1 ]; then
    # the VTN out of reach: the report is kept in SQLite, tried again, and sent
    # by the next controller once a VTN answers
    post_event rep-kept
    stop_prism
    wait_for 30 "a failed report" 'grep -qF "warning: VTN POST /reports for event rep-kept#0: " "$T/ctl.log"'
    wait_for 30 "a second try" '[ "$(grep -cF "warning: VTN POST /reports for event rep-kept#0: " "$T/ctl.log")" -ge 2 ]'
    stop_daemon "$CPID"
    start_prism
    start_ctl
    wait_for 30 "the kept report sent after a restart" 'grep -qF "VTN: report for event rep-kept#0 accepted (report " "$T/ctl.log"'; ok
    [ "$(grep -c "VTN: report for event $EV#0 accepted" "$T/ctl.log")" = 1 ] || fail "an accepted report was sent again"; ok
  fi
  stop_daemon "$CPID"
  stop_prism
done
done_ok
