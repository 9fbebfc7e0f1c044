#!/bin/sh
# test_vtn_config.sh — the controller's OpenADR 3 VTN settings without a VTN
# (test_vtn_prism.sh talks to one): the configuration refuses what it cannot
# use (a bad version, the VTN's keys without vtn_url, missing credentials or
# ven_name, credentials or the callback token (callback_url) over plain
# http to another host, a 3.0.1
# subscription without program_id, a callback without its token file); a
# credential or callback token file others can read stops the start; an
# existing callback token is used as it is, and the webhook
# POST /openadr3/events accepts it (and the controller's own token) while
# every other POST still needs the controller's token; a VTN out of reach is
# retried, logged as a warning, and changes nothing else.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
new_token "$T/atok" "$T/ctok" "$T/cbtok"
CTOK=$(cat "$T/ctok") CB=$(cat "$T/cbtok")
printf 'ven-1\n' >"$T/cid"
printf 'secret\n' >"$T/csecret"
chmod 600 "$T/cid" "$T/csecret"
kill_daemons_on_exit

# cfg OPENADR-KEYS: a configuration whose "openadr" object has these keys
cfg() {
  cat >"$T/c.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db",
 "openadr": {$1},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:9", "token_file": "$T/atok"}]}
EOF
}
VTN='"vtn_url": "http://127.0.0.1:9", "client_id_file": "'$T/cid'", "client_secret_file": "'$T/csecret'", "ven_name": "v1"'

# ---- configuration errors (exit 2, one line naming the key) ----
cfg '"version": "3.2"'
expect_error 2 'openadr.version: expected "3.1" or "3.0.1"' "$CTL" --config "$T/c.json"
cfg '"program_id": "p1"' # ven_name alone is the event model's: no VTN needed
expect_error 2 "openadr: the VTN's keys need vtn_url" "$CTL" --config "$T/c.json"
cfg '"vtn_url": "http://127.0.0.1:9", "ven_name": "v1"'
expect_error 2 "openadr: vtn_url needs client_id_file and client_secret_file" "$CTL" --config "$T/c.json"
cfg '"vtn_url": "http://127.0.0.1:9", "client_id_file": "x", "client_secret_file": "y"'
expect_error 2 "openadr.ven_name: missing" "$CTL" --config "$T/c.json"
cfg '"vtn_url": "ftp://vtn.example", "client_id_file": "x", "client_secret_file": "y", "ven_name": "v"'
expect_error 2 "openadr.vtn_url: expected http:// or https://" "$CTL" --config "$T/c.json"
cfg '"vtn_url": "http://vtn.example", "client_id_file": "x", "client_secret_file": "y", "ven_name": "v"'
expect_error 2 "openadr.vtn_url: plain http to a non-loopback host" "$CTL" --config "$T/c.json"
cfg "$VTN"', "token_url": "http://auth.example/token"'
expect_error 2 "openadr.token_url: plain http to a non-loopback host" "$CTL" --config "$T/c.json"
cfg "$VTN"', "callback_url": "https://ctl.example/openadr3/events"'
expect_error 2 "openadr.callback_url: needs callback_token_file" "$CTL" --config "$T/c.json"
# the VTN sends the callback token to callback_url: the same rule
cfg "$VTN"', "callback_url": "http://ctl.example/openadr3/events", "callback_token_file": "'$T/cbtok'"'
expect_error 2 "openadr.callback_url: plain http to a non-loopback host would send the callback token in cleartext" "$CTL" --config "$T/c.json"
cfg "$VTN"', "callback_url": "http://127.0.0.1@ctl.example/openadr3/events", "callback_token_file": "'$T/cbtok'"'
expect_error 2 "openadr.callback_url: plain http to a non-loopback host" "$CTL" --config "$T/c.json"
cfg "$VTN"', "version": "3.0.1", "callback_url": "https://ctl.example/openadr3/events", "callback_token_file": "'$T/cbtok'"'
expect_error 2 "openadr.callback_url: a 3.0.1 subscription needs program_id" "$CTL" --config "$T/c.json"
cfg "$VTN"', "targets": ["a", 3]'
expect_error 2 "openadr.targets[1]: expected a string" "$CTL" --config "$T/c.json"
cfg "$(echo "$VTN" | sed "s/\"v1\"/\"$(head -c 129 /dev/zero | tr '\0' v)\"/")"
expect_status 2 "$CTL" --config "$T/c.json"
contains "$T/err" "openadr.ven_name"

# ---- secret files others can read stop the start ----
chmod 640 "$T/csecret"
cfg "$VTN"
expect_status 1 "$CTL" --config "$T/c.json"
contains "$T/err" "error: openadr.client_secret_file: $T/csecret: mode 0640 lets others read the token"
chmod 600 "$T/csecret"
chmod 644 "$T/cbtok"
cfg "$VTN"', "callback_url": "https://ctl.example/openadr3/events", "callback_token_file": "'$T/cbtok'"'
expect_status 1 "$CTL" --config "$T/c.json"
contains "$T/err" "error: openadr.callback_token_file: $T/cbtok: mode 0644"
chmod 600 "$T/cbtok"

# ---- the webhook takes the callback token; the VTN out of reach is retried ----
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/c.json" --port-file "$T/c.port"
URL=http://127.0.0.1:$DPORT
post() { curl -s -o "$T/body" -w '%{http_code}' -m 5 -X POST ${2:+-H "Authorization: Bearer $2"} \
  -H 'Content-Type: application/json' --data-binary '{}' "$URL$1"; }
c=$(post /openadr3/events "$CB"); [ "$c" != 401 ] && [ "$c" != 000 ] || fail "webhook refused the callback token ($c)"; ok
c=$(post /openadr3/events "$CTOK"); [ "$c" != 401 ] && [ "$c" != 000 ] || fail "webhook refused the controller's token ($c)"; ok
[ "$(post /openadr3/events "${CB}x")" = 401 ] || fail "webhook took a wrong token"; ok
[ "$(post /openadr3/events)" = 401 ] || fail "webhook took no token"; ok
[ "$(post /v1/events "$CB")" = 401 ] || fail "the callback token was taken by POST /v1/events"; ok
[ "$(cat "$T/cbtok")" = "$CB" ] || fail "an existing callback token was replaced"; ok
wait_for 20 "a warning about the VTN" 'grep -q "warning: VTN registration: .*; again in" "$T/ctl.log"'
wait_for 20 "a second try" '[ "$(grep -c "warning: VTN registration" "$T/ctl.log")" -ge 2 ]'
curl -s -m 5 "$URL/healthz" | grep -q "\"ok\":true" || fail "healthz while the VTN is out of reach"; ok
done_ok
