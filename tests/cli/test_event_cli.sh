#!/bin/sh
# test_event_cli.sh — pfi event and pfi status against a controller with one
# simulated agent (issue 16 item 3): create with each target kind (listed
# with its target), --dry-run prints the JSON and creates nothing, show,
# cancel (listed as cancelled), report (JSON and a PNG), status; a wrong
# token is a one-line error with the controller's reason (exit 1); the token
# goes over plain http only to loopback unless --allow-insecure-http; no
# controller configured names where it looked; a configuration file with an
# unknown key names the file and the key; the canonical API takes "duration"
# in ISO 8601, and refuses it beside duration_s.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
unset PFI_CONTROLLER PFI_TOKEN_FILE # the controller URL and token come from the options or pfi.conf here
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s) PFI_CONF="$T/none.conf"
new_token "$T/atok" "$T/ctok" "$T/wrong"
CTOK=$(cat "$T/ctok")
kill_daemons_on_exit

start_daemon agent "$T/a.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --state-file "$T/a.state" --interval 1 --log "$T/a.log"
cat >"$T/ctl.json" <<EOF2
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 5, "baseline_window_s": 20,
 "lease_s": 30, "tiers": {"j1": 3}, "non_gpu_offset_kw": 10,
 "agents": [{"name": "n1", "url": "http://127.0.0.1:$(cat "$T/a.port")", "token_file": "$T/atok"}]}
EOF2
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
CP=$DPID; URL=http://127.0.0.1:$DPORT
NOW=$(awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.0f", e + (w - e) * 20}')
LATER=$(date -u -d "@$((NOW + 7200))" +%Y-%m-%dT%H:%M:%SZ)

# ---- the configuration: none, an unknown key, then the file in use ----
expect_error 1 "$T/none.conf" "$PFI" event ls
contains "$T/err" "no controller"
printf '{"controller": "%s", "token_file": "%s", "tokenfile": "x"}\n' "$URL" "$T/ctok" >"$T/bad.conf"
PFI_CONF="$T/bad.conf" expect_error 1 "$T/bad.conf: key 'tokenfile'" "$PFI" event ls
printf '{"controller": "%s", "token_file": "%s"}\n' "$URL" "$T/ctok" >"$T/pfi.conf"
export PFI_CONF="$T/pfi.conf"

# ---- pfi status outside events: the jobs' measured power, not "-" (issue 30) ----
wait_for 30 "job j1 in pfi status" '"$PFI" status 2>/dev/null | grep -q "^j1 "'
expect_status 0 "$PFI" status
contains "$T/out" "event        none"
contains "$T/out" "target       none (no event)"
mw=$(sed -n 's/^measured  *\([0-9][0-9]*\) W (the jobs. GPUs; no event)$/\1/p' "$T/out")
[ -n "$mw" ] || { cat "$T/out" >&2; fail "pfi status outside an event: no measured power"; }; ok
num "$mw" ">" 0 || fail "measured $mw W outside an event"; ok

# ---- --dry-run: the JSON, and nothing created ----
expect_status 0 "$PFI" event create --reduction 30 --start now --duration 1h30m --ramp 5m --id dry --dry-run
contains "$T/out" '"duration_s":5400'
contains "$T/out" '"reduction_pct":30'
contains "$T/out" '"ramp_s":300'
contains "$T/out" '"id":"dry"'
expect_status 0 "$PFI" event ls --format json
lacks "$T/out" '"dry"'
expect_error 2 "give exactly one of --reduction, --target-kw, --level" "$PFI" event create --level 1 --reduction 5 --start now --duration 1h
expect_error 2 "--duration: '1x' is not a duration" "$PFI" event create --level 1 --start now --duration 1x
expect_error 2 "--png does not apply to 'event ls'" "$PFI" event ls --png "$T/x.png"

# listed ID KEY VALUE: in $T/out (pfi event ls --format json), ID's KEY is VALUE
listed() {
  tr -d '\n' <"$T/out" | sed 's/}/}\n/g' | grep -F "\"id\": \"$1\"" | grep -qF "\"$2\": \"$3\"" ||
    { cat "$T/out" >&2; fail "$1's $2 is not $3"; }
  ok
}

# ---- create with each target kind; listed with its target ----
expect_status 0 "$PFI" event create --target-kw 2 --start "$LATER" --duration PT1H --id tkw
contains "$T/out" "tkw"
expect_status 0 "$PFI" event create --level 2 --start "$LATER" --duration P1D --id lvl
expect_status 0 "$PFI" event create --reduction 30 --start now --duration 1h --ramp 0s --id red
expect_status 0 "$PFI" event ls --format json
contains "$T/out" '"id": "tkw"'
listed tkw target "2 kW"
listed lvl target "level 2"
listed red target "30%"
listed red source "api"
expect_status 0 "$PFI" event ls --format csv
contains "$T/out" "id,source,status,start,end,target"
contains "$T/out" "lvl,api,scheduled,$LATER,"
# without --id: the controller names it, and pfi prints the name
expect_status 0 "$PFI" event create --level 1 --start "$LATER" --duration 10m
ID=$(cat "$T/out")
[ -n "$ID" ] || fail "no id printed"; ok
expect_status 0 "$PFI" event show "$ID"
contains "$T/out" "\"id\": \"$ID\""

# ---- show, status, cancel, report ----
status_is() { "$PFI" event show "$1" 2>/dev/null | grep -q "\"status\": \"$2\""; }
wait_for 30 "the event red active" 'status_is red active'
expect_status 0 "$PFI" event show red
contains "$T/out" '"reduction_pct": 30'
expect_status 0 "$PFI" status
contains "$T/out" "controller   $URL"
contains "$T/out" "event        active"
contains "$T/out" "red active"
contains "$T/out" "measured"
contains "$T/out" "j1"
expect_status 0 "$PFI" status --format json
contains "$T/out" '"budget_w"'
expect_status 0 "$PFI" status -o "$T/jobs.csv"
contains "$T/jobs.csv" "job_id,tier,gpus,power_w"
contains "$T/jobs.csv" "j1,3,4,"
# a chart needs two samples of the event
wait_for 30 "two samples of red" '[ "$(curl -s -o /dev/null -w "%{http_code}" "$URL/v1/events/red/report.png")" = 200 ]'
expect_status 0 "$PFI" event cancel red
# a running event ends with its ramp down: said so, never "active" (issue 30)
[ "$(cat "$T/out")" = "red cancelled: ending (ramp down)" ] || fail "cancel red printed '$(cat "$T/out")'"; ok
wait_for 30 "the event red cancelled" 'status_is red cancelled'
expect_status 0 "$PFI" event ls --format json
listed red status "cancelled"
expect_status 0 "$PFI" event report red
contains "$T/out" '"id"'
expect_status 0 "$PFI" event report red --png "$T/red.png"
[ "$(head -c 8 "$T/red.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "not a PNG"; ok
expect_error 1 "no event nosuch" "$PFI" event show nosuch

# ---- a wrong token: the controller's reason on one line ----
expect_error 1 "missing or wrong bearer token" "$PFI" event cancel tkw --token-file "$T/wrong"
contains "$T/err" "HTTP 401"
chmod 644 "$T/wrong"
expect_error 1 "chmod 600" "$PFI" event cancel tkw --token-file "$T/wrong"

# ---- the token over plain http only to loopback (pfi_url_secret_ok, the
# daemons' rule): 127.1 reaches this controller but is not written as
# loopback, so create and cancel refuse it before the token is read, unless
# --allow-insecure-http or $PFI_ALLOW_INSECURE_HTTP=1 says so; reads carry no token ----
ALT=http://127.1:${URL##*:}
expect_error 1 "controller $ALT: plain http to a non-loopback host would send the token in cleartext" \
  "$PFI" event create --level 1 --start "$LATER" --duration 1h --id insecure --controller "$ALT"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/events/insecure")" = 404 ] || fail "created over refused plain http"; ok
PFI_ALLOW_INSECURE_HTTP=0 expect_error 1 "would send the token in cleartext" "$PFI" event cancel tkw --controller "$ALT"
expect_error 1 "controller ctl.example:9480: expected http:// or https://" "$PFI" event cancel tkw --controller ctl.example:9480
expect_status 0 "$PFI" event create --level 1 --start "$LATER" --duration 1h --id insecure --controller "$ALT" --allow-insecure-http
PFI_ALLOW_INSECURE_HTTP=1 expect_status 0 "$PFI" event cancel insecure --controller "$ALT"
# a scheduled event is cancelled at once
[ "$(cat "$T/out")" = "insecure cancelled" ] || fail "cancel insecure printed '$(cat "$T/out")'"; ok
expect_status 0 "$PFI" event ls --controller "$ALT"
contains "$T/out" "insecure"
expect_error 2 "--allow-insecure-http does not apply to 'event ls'" "$PFI" event ls --allow-insecure-http

# ---- the canonical API: "duration" in ISO 8601, not beside duration_s ----
req() { CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" --data-binary "$1" "$URL/v1/events"); }
req "{\"id\":\"iso\",\"start\":\"$LATER\",\"duration\":\"PT1H\",\"level\":1}"
[ "$CODE" = 201 ] || { cat "$T/body" >&2; fail "ISO duration: HTTP $CODE"; }; ok
contains "$T/body" '"duration_s":3600'
req "{\"id\":\"both\",\"start\":\"$LATER\",\"duration\":\"PT1H\",\"duration_s\":3600,\"level\":1}"
[ "$CODE" = 400 ] || { cat "$T/body" >&2; fail "both durations: HTTP $CODE"; }; ok
contains "$T/body" "duration, duration_s"

# ---- an https controller: its CA from ca_file in the configuration ----
command -v openssl >/dev/null || fail "openssl is needed (scripts/bootstrap.sh test)"
P=$T/pki; mkdir -p "$P"
ossl() { openssl "$@" >>"$P/openssl.log" 2>&1 || { cat "$P/openssl.log" >&2; fail "openssl $1 failed"; }; }
ossl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.pem" -days 2 -subj "/CN=pfi test CA"
ossl req -newkey rsa:2048 -nodes -keyout "$P/ctl.key" -out "$P/ctl.csr" -subj "/CN=127.0.0.1"
printf 'subjectAltName=IP:127.0.0.1\n' >"$P/san.ext"
ossl x509 -req -in "$P/ctl.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -out "$P/ctl.pem" -days 2 -extfile "$P/san.ext"
stop_daemon "$CP" TERM
sed "s|^{|{\"tls_cert\": \"$P/ctl.pem\", \"tls_key\": \"$P/ctl.key\", |" "$T/ctl.json" >"$T/ctls.json"
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctls.json" --port-file "$T/c.port"
SURL=https://127.0.0.1:$DPORT
printf '{"controller": "%s", "token_file": "%s", "ca_file": "%s"}\n' "$SURL" "$T/ctok" "$P/ca.pem" >"$T/tls.conf"
PFI_CONF="$T/tls.conf" expect_status 0 "$PFI" event ls --format csv
contains "$T/out" "tkw,api,scheduled"
PFI_CONF="$T/tls.conf" expect_status 0 "$PFI" event cancel tkw
PFI_CONF="$T/tls.conf" expect_status 0 "$PFI" status --controller "$SURL"
contains "$T/out" "controller   $SURL"
# without the CA: the certificate is not trusted, one line, exit 1
expect_error 1 "$SURL/v1/status" "$PFI" event ls --controller "$SURL"
done_ok
