#!/bin/sh
# test_operators.sh — named operators on pfi-controller (issue 30 item 7,
# docs/controller.md "Operators"): three operators of different scopes
# (alice: events; bob: events, control; carol: control). alice creates an
# event, bob changes and cancels it, carol's trigger is hers and she may
# cancel it but no one else's event (403 naming the scope events); alice's
# trigger is a 403 naming control; a wrong token is a 401; reads stay open.
# Who created, changed and cancelled each event is in GET /v1/events and
# /v1/events/ID, the report, the log, `pfi event ls` (column by) and, after
# a restart, the same from SQLite. An OpenADR event through the webhook
# with an operator's token is that operator's. require_read_scope: reads
# need the scope read (401 without a token, 403 with an operator without
# it), the status page's files and /healthz stay open. The old token_file
# alone is the operator "operator" with every scope; a schedule file's
# event is the schedule's. Configuration errors
# are one line naming the key: an unknown scope, a duplicate name, a
# reserved or badly formed name, one token file for two operators, the same
# token in two files (at start), token_file's name taken, the VTN's
# callback token an operator's.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
unset PFI_CONTROLLER PFI_TOKEN_FILE
export PFI_CONF="$T/none.conf"
new_token "$T/atok" "$T/alice" "$T/bob" "$T/carol" "$T/dave" "$T/legacy" "$T/wrong"
ALICE=$(cat "$T/alice") BOB=$(cat "$T/bob") CAROL=$(cat "$T/carol") DAVE=$(cat "$T/dave")
LEGACY=$(cat "$T/legacy")
kill_daemons_on_exit

start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 0.5 --log "$T/a.log"
AGENTS="\"agents\": [{\"name\": \"n1\", \"url\": \"http://127.0.0.1:$(cat "$T/a.port")\", \"token_file\": \"$T/atok\"}]"
op() { printf '{"name": "%s", "token_file": "%s", "scopes": [%s]}' "$1" "$2" "$3"; }
OPS="$(op alice "$T/alice" '"events"'), $(op bob "$T/bob" '"events", "control"'), $(op carol "$T/carol" '"control"')"
cfg() { # FILE extra-json (after the agents)
  cat >"$1" <<EOF
{"listen": "127.0.0.1:0", "db": "$T/ctl.db", "control_period_s": 0.5, "baseline_window_s": 1, $AGENTS$2}
EOF
}

# ---- configuration errors: one line naming the key, exit 2 ----
cfg "$T/c.json" ", \"operators\": [$(op alice "$T/alice" '"events", "admin"')]"
expect_error 2 "operators[0].scopes[1]: unknown scope (expected read, events or control)" "$CTL" --config "$T/c.json"
cfg "$T/c.json" ", \"operators\": [$(op alice "$T/alice" '"events"'), $(op alice "$T/bob" '"control"')]"
expect_error 2 "operators[1].name: alice is also operators[0]'s" "$CTL" --config "$T/c.json"
cfg "$T/c.json" ", \"operators\": [$(op 'al ice' "$T/alice" '"events"')]"
expect_error 2 "operators[0].name: expected 1..32 characters of A-Z a-z 0-9 . _ -" "$CTL" --config "$T/c.json"
cfg "$T/c.json" ", \"operators\": [$(op grid "$T/alice" '"events"')]"
expect_error 2 "operators[0].name: grid is reserved" "$CTL" --config "$T/c.json"
cfg "$T/c.json" ", \"operators\": [$(op alice "$T/alice" '"events"'), $(op bob "$T/alice" '"control"')]"
expect_error 2 "operators[1].token_file: the same file as operators[0] (alice)" "$CTL" --config "$T/c.json"
cfg "$T/c.json" ", \"operators\": [$(op alice "$T/alice" '')]"
expect_error 2 "operators[0].scopes: expected a list of 1 or more" "$CTL" --config "$T/c.json"
cfg "$T/c.json" ", \"operators\": [{\"name\": \"alice\", \"scopes\": [\"events\"]}]"
expect_error 2 "operators[0].token_file: missing" "$CTL" --config "$T/c.json"
cfg "$T/c.json" ", \"token_file\": \"$T/legacy\", \"operators\": [$(op operator "$T/alice" '"events"')]"
expect_error 2 "operators[0].name: operator is token_file's operator" "$CTL" --config "$T/c.json"
cfg "$T/c.json" ", \"require_read_scope\": true"
expect_error 2 "require_read_scope: needs operators" "$CTL" --config "$T/c.json"
# the same token in two files: at start, exit 1
cp "$T/alice" "$T/alice2"
cfg "$T/c.json" ", \"operators\": [$(op alice "$T/alice" '"events"'), $(op bob "$T/alice2" '"control"')]"
expect_error 1 "operators[1].token_file: the same token as operators[0].token_file (operator alice)" "$CTL" --config "$T/c.json"
chmod 644 "$T/alice2"
cfg "$T/c.json" ", \"operators\": [$(op alice "$T/alice2" '"events"')]"
expect_error 1 "operators[0].token_file: $T/alice2: mode 0644" "$CTL" --config "$T/c.json"
# a FIFO in a token file's place: refused at once, never a hang (opened non-blocking)
mkfifo "$T/fifo"
cfg "$T/c.json" ", \"operators\": [$(op alice "$T/fifo" '"events"')]"
expect_error 1 "operators[0].token_file: $T/fifo: not a regular file" timeout 20 "$CTL" --config "$T/c.json"
# as root, a token file another user owns is refused (that user could swap the token)
if [ "$(id -u)" = 0 ]; then
  cp "$T/alice" "$T/alice3"; chown 65534 "$T/alice3"
  cfg "$T/c.json" ", \"operators\": [$(op alice "$T/alice3" '"events"')]"
  expect_error 1 "operators[0].token_file: $T/alice3: owned by uid 65534: a token file read as root must be root's" "$CTL" --config "$T/c.json"
fi
# the VTN's callback token is not an operator's
printf 'ven-1\n' >"$T/cid"; printf 'secret\n' >"$T/csecret"; chmod 600 "$T/cid" "$T/csecret"
cfg "$T/c.json" ", \"operators\": [$(op alice "$T/alice" '"events"')], \"openadr\": {\"vtn_url\": \"http://127.0.0.1:9\",
 \"client_id_file\": \"$T/cid\", \"client_secret_file\": \"$T/csecret\", \"ven_name\": \"v1\",
 \"callback_url\": \"http://127.0.0.1:9/cb\", \"callback_token_file\": \"$T/alice\"}"
expect_status 1 "$CTL" --config "$T/c.json"
contains "$T/err" "error: openadr.callback_token_file: the same token as operators[0].token_file (operator alice)"
[ "$(grep -c 'error:' "$T/err")" = 1 ] || { cat "$T/err" >&2; fail "not one error line"; }; ok

# ---- three operators ----
cfg "$T/ctl.json" ", \"operators\": [$OPS]"
start_ctl() { # CONFIG
  start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$1" --port-file "$T/c.port"
  CP=$DPID; URL=http://127.0.0.1:$DPORT
}
start_ctl "$T/ctl.json"
req() { # TOKEN METHOD PATH [BODY]: the answer in $T/body, the status in $CODE
  CODE=$(curl -s -m 10 -o "$T/body" -w '%{http_code}' -X "$2" ${1:+-H "Authorization: Bearer $1"} \
    ${4:+--data-binary "$4"} "$URL$3")
}
expect_code() { [ "$CODE" = "$1" ] || { cat "$T/body" >&2; fail "$2: HTTP $CODE, expected $1"; }; ok; }
LATER=$(date -u -d "@$(($(date +%s) + 7200))" +%Y-%m-%dT%H:%M:%SZ)
EV="{\"id\":\"ev-a\",\"start\":\"$LATER\",\"duration_s\":600,\"reduction_pct\":20}"
req "$ALICE" POST /v1/events "$EV"; expect_code 201 "alice creates ev-a"
contains "$T/body" '"created_by":"alice","changed_by":null,"cancelled_by":null'
req "$(cat "$T/wrong")" POST /v1/events "$EV"; expect_code 401 "a wrong token"
contains "$T/body" "missing or wrong bearer token"
req "" POST /v1/events "$EV"; expect_code 401 "no token"
req "$ALICE" POST /v1/trigger '{"reduction_pct": 10}'; expect_code 403 "alice triggers"
contains "$T/body" "operator alice lacks the scope control (POST /v1/trigger needs it)"
req "$CAROL" POST /v1/events "$EV"; expect_code 403 "carol changes ev-a"
contains "$T/body" "operator carol lacks the scope events (POST /v1/events needs it)"
req "$BOB" POST /v1/events "$EV"; expect_code 200 "bob changes ev-a"
contains "$T/body" '"created_by":"alice","changed_by":"bob"'
req "$CAROL" DELETE /v1/events/ev-a; expect_code 403 "carol cancels alice's event"
contains "$T/body" "operator carol lacks the scope events"
req "" GET /v1/events/ev-a; contains "$T/body" '"status":"scheduled"'
req "$BOB" DELETE /v1/events/ev-a; expect_code 200 "bob cancels ev-a"
contains "$T/body" '"cancelled_by":"bob"'
# carol's trigger: hers, and she may cancel it
req "$CAROL" POST /v1/trigger '{"reduction_pct": 10, "id": "trig-c"}'; expect_code 201 "carol triggers"
contains "$T/body" '"created_by":"carol"'
req "$CAROL" DELETE /v1/events/trig-c; expect_code 200 "carol cancels her trigger"
contains "$T/body" '"cancelled_by":"carol"'
# an OpenADR event through the webhook with alice's token is hers; carol's is refused
OS=$(date -u -d "@$(($(date +%s) + 9000))" +%Y-%m-%dT%H:%M:%SZ)
ADR="{\"objectType\":\"EVENT\",\"operation\":\"POST\",\"object\":{\"id\":\"adr-1\",\"intervalPeriod\":{\"start\":\"$OS\",\"duration\":\"PT1H\"},\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[20]}]}]}}"
req "$CAROL" POST /openadr3/events "$ADR"; expect_code 403 "carol posts an OpenADR event"
contains "$T/body" "operator carol lacks the scope events (POST /openadr3/events needs it)"
req "$ALICE" POST /openadr3/events "$ADR"; expect_code 200 "alice posts an OpenADR event"
contains "$T/body" '"created_by":"alice"'
# ---- ids and scopes by source (issue 41) ----
EVB="{\"id\":\"ev-b\",\"start\":\"$LATER\",\"duration_s\":600,\"reduction_pct\":20}"
req "$ALICE" POST /v1/events "$EVB"; expect_code 201 "alice creates ev-b"
# a control operator's trigger naming it: 409, and it stays alice's (it replaced it before)
req "$CAROL" POST /v1/trigger '{"id": "ev-b", "reduction_pct": 1}'; expect_code 409 "carol's trigger naming ev-b"
contains "$T/body" "event ev-b already exists (source api, scheduled)"
req "" GET /v1/events/ev-b
contains "$T/body" '"source":"api"'
contains "$T/body" '"created_by":"alice","changed_by":null'
req "$CAROL" DELETE /v1/events/ev-b; expect_code 403 "carol cancels ev-b"
# a trigger never reuses an id, its own included; POST /v1/events changes no trigger's or grid's event
req "$CAROL" POST /v1/trigger '{"id": "trig-c", "reduction_pct": 1}'; expect_code 409 "a trigger reusing trig-c"
req "$ALICE" POST /openadr3/events "$(echo "$ADR" | sed 's/"adr-1"/"adr-2"/')"; expect_code 200 "alice posts adr-2"
req "$BOB" POST /v1/events "{\"id\":\"adr-2\",\"start\":\"$LATER\",\"duration_s\":600,\"reduction_pct\":5}"
expect_code 409 "bob's POST naming the grid's event"
contains "$T/body" "event adr-2 already exists (source openadr, scheduled)"
# an events operator may cancel the grid's event: an override, logged
req "$BOB" DELETE /v1/events/adr-2; expect_code 200 "bob cancels the grid's event"
contains "$T/ctl.log" "warning: operator bob overrides the grid: cancels OpenADR event adr-2"
# a method the controller does not serve: 405 with Allow before any token is looked at (a
# lowercase name is another method); /metrics answers GET and HEAD only
for m in PATCH FOO OPTIONS TRACE get; do
  for p in /metrics /v1/status /v1/events /v1/events/ev-b /v1/trigger /openadr3/events /healthz /; do
    for tok in "" "$BOB" "$DAVE"; do
      code=$(curl -s -m 10 -o "$T/body" -D "$T/hdr" -w '%{http_code}' -X "$m" ${tok:+-H "Authorization: Bearer $tok"} "$URL$p")
      [ "$code" = 405 ] || { cat "$T/body" >&2; fail "$m $p: HTTP $code, expected 405"; }
      grep -qi '^Allow: GET, HEAD, POST, PUT, DELETE' "$T/hdr" || fail "$m $p: no Allow header"
    done
  done
done
ok
for m in POST PUT DELETE; do req "$BOB" "$m" /metrics; expect_code 405 "$m /metrics by bob"; done
req "" POST /metrics; expect_code 401 "POST /metrics without a token"
# each refusal counted by reason, and logged with the operator and the path
n=$(metric "$URL" 'pfi_ctl_http_refused_total{reason="method"}')
num "$n" ">=" 123 || fail "pfi_ctl_http_refused_total{reason=\"method\"} is $n, expected >= 123"; ok
num "$(metric "$URL" 'pfi_ctl_http_refused_total{reason="conflict"}')" ">=" 3 || fail "conflicts not counted"; ok
num "$(metric "$URL" 'pfi_ctl_http_refused_total{reason="forbidden"}')" ">=" 5 || fail "403s not counted"; ok
contains "$T/ctl.log" "refused 409 (conflict): POST /v1/trigger by carol: event ev-b already exists"
contains "$T/ctl.log" "refused 403 (forbidden): DELETE /v1/events/ev-b by carol:"
# 123 refused methods in well under 10 s: at most 10 lines (an unauthenticated flood cannot fill the log)
n=$(grep -c "refused 405" "$T/ctl.log"); [ "$n" -le 10 ] || fail "$n lines of refused 405"; ok
# reads stay open
req "" GET /v1/events; expect_code 200 "GET /v1/events without a token"
names_of() { # ID: "created changed cancelled" of ID in $T/body (GET /v1/events)
  tr -d '\n' <"$T/body" | sed 's/},{/}\n{/g' | grep -F "\"id\":\"$1\"" |
    sed 's/.*"created_by":\([^,]*\),"changed_by":\([^,]*\),"cancelled_by":\([^,}]*\).*/\1 \2 \3/' | tr -d '"'
}
check_names() { # the three operators' records in GET /v1/events
  req "" GET /v1/events
  [ "$(names_of ev-a)" = "alice bob bob" ] || { cat "$T/body" >&2; fail "ev-a's operators: '$(names_of ev-a)'"; }; ok
  [ "$(names_of trig-c)" = "carol null carol" ] || fail "trig-c's operators: '$(names_of trig-c)'"; ok
  [ "$(names_of adr-1)" = "alice null null" ] || fail "adr-1's operators: '$(names_of adr-1)'"; ok
}
check_names
# the report
req "" GET /v1/events/ev-a/report; expect_code 200 "ev-a's report"
contains "$T/body" '"created_by": "alice"'
contains "$T/body" '"changed_by": "bob"'
contains "$T/body" '"cancelled_by": "bob"'
req "" GET /v1/events/trig-c/report
contains "$T/body" '"created_by": "carol"'
# the log
contains "$T/ctl.log" "event ev-a (api) received from alice: "
contains "$T/ctl.log" "event ev-a (api) updated by bob: "
contains "$T/ctl.log" "event ev-a cancelled by bob"
contains "$T/ctl.log" "event trig-c (trigger) received from carol: "
contains "$T/ctl.log" "event trig-c cancelled by carol"
contains "$T/ctl.log" "OpenADR event adr-1 (webhook): 1 interval scheduled or updated by alice"
# pfi event ls: who made each
expect_status 0 "$PFI" event ls --controller "$URL" --format csv
contains "$T/out" "id,source,status,start,end,target,by,cancelled_by,verdict"
# who cancelled, and an event cancelled before its start reads "cancelled"
# (issue 41: it read "pending" here and "nothing to shed" in its report)
grep -q '^ev-a,api,cancelled,.*,alice,bob,cancelled$' "$T/out" || { cat "$T/out" >&2; fail "pfi event ls: ev-a not by alice, cancelled by bob"; }; ok
grep -q '^trig-c,trigger,.*,carol,carol,[a-z ]*$' "$T/out" || { cat "$T/out" >&2; fail "pfi event ls: trig-c not by carol"; }; ok
req "" GET /v1/events/ev-a/report
contains "$T/body" '"verdict": "cancelled"'

# ---- a restart: the names from SQLite ----
stop_daemon "$CP" TERM
start_ctl "$T/ctl.json"
check_names
req "" GET /v1/events/ev-a/report
contains "$T/body" '"cancelled_by": "bob"'

# ---- require_read_scope: reads need the scope read ----
stop_daemon "$CP" TERM
cfg "$T/ctl.json" ", \"require_read_scope\": true, \"operators\": [$OPS, $(op dave "$T/dave" '"read"')]"
start_ctl "$T/ctl.json"
req "" GET /v1/events; expect_code 401 "a read without a token"
# every scope includes read: who may create events may list them
req "$ALICE" GET /v1/events; expect_code 200 "a read by alice (scope events)"
# the CLI's reads send the configured token (issue 41: they sent none and got 401)
PFI_TOKEN_FILE=$T/alice expect_status 0 "$PFI" event ls --controller "$URL" --format csv
contains "$T/out" "ev-a,api,cancelled"
PFI_TOKEN_FILE=$T/alice expect_status 0 "$PFI" status --controller "$URL" --format json
PFI_TOKEN_FILE=$T/alice expect_status 0 "$PFI" event show ev-a --controller "$URL"
contains "$T/out" '"cancelled_by": "bob"'
PFI_CONF=/nonexistent PFI_TOKEN_FILE= expect_status 1 "$PFI" event ls --controller "$URL"
contains "$T/err" "HTTP 401"
req "$DAVE" GET /v1/events; expect_code 200 "a read by dave"
contains "$T/body" '"created_by":"alice"'
req "$DAVE" GET /metrics; expect_code 200 "metrics by dave"
req "" GET /metrics; expect_code 401 "metrics without a token"
for m in FOO PATCH OPTIONS TRACE get; do req "" "$m" /metrics; expect_code 405 "$m /metrics without a token"; done
# (the fourth refusal of this controller: within the 10 lines a window logs)
contains "$T/ctl.log" "refused 405 (method): FOO /metrics by an unknown caller: method FOO is not allowed"
for p in / /page.js /page.css /healthz; do req "" GET "$p"; expect_code 200 "GET $p without a token"; done
# the webhook's echo challenge is open too (the VTN holds no operator token;
# issue 42), both forms, and answers only an unreserved value
for p in "/openadr3/events?echo=v-1" "/openadr3/events/echo?echo=v-1"; do
  req "" GET "$p"; expect_code 200 "GET $p without a token"
  [ "$(cat "$T/body")" = "v-1" ] || fail "GET $p answered $(cat "$T/body")"; ok
done
req "" GET "/openadr3/events?echo=%3Cb%3E"; expect_code 400 "an echo of markup"
req "" POST /openadr3/events "{}"; expect_code 401 "the webhook's POST without a token"
stop_daemon "$CP" TERM

# ---- the old token_file alone: the operator "operator", every scope (and a schedule file's event) ----
printf '[{"id": "planned", "start": "%s", "duration_s": 600, "level": 2}]\n' "$LATER" >"$T/sched.json"
cfg "$T/ctl.json" ", \"token_file\": \"$T/legacy\", \"schedule\": \"$T/sched.json\""
start_ctl "$T/ctl.json"
req "" GET /v1/events/planned; contains "$T/body" '"created_by":"schedule"'
contains "$T/ctl.log" "event planned (schedule) received from schedule: "
EV2="{\"id\":\"ev-l\",\"start\":\"$LATER\",\"duration_s\":600,\"level\":1}"
req "$LEGACY" POST /v1/events "$EV2"; expect_code 201 "token_file creates"
contains "$T/body" '"created_by":"operator"'
req "$ALICE" POST /v1/events "$EV2"; expect_code 401 "alice is no operator now"
req "$LEGACY" DELETE /v1/events/ev-l; expect_code 200 "token_file cancels"
contains "$T/body" '"cancelled_by":"operator"'
req "$LEGACY" POST /v1/trigger '{"level": 1, "id": "trig-l", "duration_s": 60}'; expect_code 201 "token_file triggers"
contains "$T/body" '"created_by":"operator"'
req "$LEGACY" POST /openadr3/events '{"objectType":"EVENT","operation":"DELETE","object":{"id":"adr-1"}}'
expect_code 200 "token_file deletes an OpenADR event"
contains "$T/ctl.log" "OpenADR event adr-1 (webhook) deleted by operator"
req "" GET /v1/events/adr-1; contains "$T/body" '"cancelled_by":"operator"'
req "" GET /v1/status; expect_code 200 "reads open"
stop_daemon "$CP" TERM
done_ok
