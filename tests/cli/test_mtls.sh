#!/bin/sh
# test_mtls.sh — tokens never in cleartext, and scoped (issue 14 item 7).
# A private CA made here with openssl signs the agent's server certificate
# (for 127.0.0.1) and the controller's client certificate; a second,
# self-signed "rogue" client certificate is not trusted. Checked:
#   - the agent with --tls-client-ca refuses a client without a certificate
#     or with one the CA did not sign (403), and serves one it signed;
#   - --read-token-file: reads need the read (or control) token, the read
#     token cannot set caps, /healthz stays open;
#   - the controller refuses a config that would send a token over plain
#     http to a non-loopback host, or that mixes https options with http;
#   - a controller given the agent's CA, its client certificate and both
#     tokens collects and caps the agent over mTLS (an event's caps arrive);
#     without the CA it cannot (the agent stays unreachable);
#   - TLS without client certificates: no fast trigger datagrams (they are
#     authenticated, not encrypted) unless fast_path_cleartext: true; the
#     trigger's caps go by HTTPS, its push latency printed.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
command -v openssl >/dev/null || fail "openssl is needed (scripts/bootstrap.sh test)"
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"
kill_daemons_on_exit
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
NOW() { awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.3f", e + (w - e) * 20}'; }
ISO() { date -u -d "@$(printf '%.0f' "$1")" +%Y-%m-%dT%H:%M:%SZ; }

# ---- a private CA, the agent's server certificate, the controller's client certificate
P=$T/pki; mkdir -p "$P"
ossl() { openssl "$@" >>"$P/openssl.log" 2>&1 || { cat "$P/openssl.log" >&2; fail "openssl $1 failed"; }; }
ossl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.pem" -days 2 -subj "/CN=pfi test CA"
ossl req -newkey rsa:2048 -nodes -keyout "$P/agent.key" -out "$P/agent.csr" -subj "/CN=127.0.0.1"
printf 'subjectAltName=IP:127.0.0.1\n' >"$P/san.ext"
ossl x509 -req -in "$P/agent.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -out "$P/agent.pem" -days 2 -extfile "$P/san.ext"
ossl req -newkey rsa:2048 -nodes -keyout "$P/ctl.key" -out "$P/ctl.csr" -subj "/CN=pfi-controller"
ossl x509 -req -in "$P/ctl.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -out "$P/ctl.pem" -days 2
ossl req -x509 -newkey rsa:2048 -nodes -keyout "$P/rogue.key" -out "$P/rogue.pem" -days 2 -subj "/CN=rogue"
# a certificate the CA issued for a server (extended key usage serverAuth only)
printf 'extendedKeyUsage=serverAuth\n' >"$P/srv.ext"
ossl req -newkey rsa:2048 -nodes -keyout "$P/srv.key" -out "$P/srv.csr" -subj "/CN=some server"
ossl x509 -req -in "$P/srv.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -out "$P/srv.pem" -days 2 -extfile "$P/srv.ext"

new_token "$T/atok" "$T/rtok" "$T/ctok"
TOK=$(cat "$T/atok"); RTOK=$(cat "$T/rtok")
start_daemon agent "$T/agent.log" "$T/a.port" "$PFI_AGENT" \
  --backend "sim:gpus=4,job=j1:moe-ft-qwen30ba3b-x8@0-3,load=0,steplogs=$T,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --read-token-file "$T/rtok" \
  --tls-cert "$P/agent.pem" --tls-key "$P/agent.key" --tls-client-ca "$P/ca.pem" \
  --state-file "$T/state.json" --interval 0.2 --log "$T/agent.log"
AURL=https://127.0.0.1:$DPORT

# code CURL-ARGS... -> HTTP code (000: TLS refused)
code() { curl -s -o "$T/body" -w '%{http_code}' --max-time 20 --cacert "$P/ca.pem" "$@"; }
c=$(code "$AURL/healthz"); [ "$c" = 403 ] || [ "$c" = 000 ] || fail "no client certificate: HTTP $c, expected 403 (or a refused handshake)"; ok
c=$(code --cert "$P/srv.pem" --key "$P/srv.key" "$AURL/healthz")
[ "$c" = 403 ] || [ "$c" = 000 ] || fail "a server certificate of the same CA used as a client's: HTTP $c, expected 403"; ok
c=$(code --cert "$P/rogue.pem" --key "$P/rogue.key" "$AURL/healthz")
[ "$c" = 403 ] || [ "$c" = 000 ] || fail "an unsigned client certificate: HTTP $c, expected 403"; ok
M="--cert $P/ctl.pem --key $P/ctl.key"
c=$(code $M "$AURL/healthz"); [ "$c" = 200 ] || fail "the CA's client certificate: /healthz HTTP $c"; ok
c=$(code $M "$AURL/metrics"); [ "$c" = 401 ] || fail "metrics without the read token: HTTP $c, expected 401"; ok
c=$(code $M -H "Authorization: Bearer $RTOK" "$AURL/metrics"); [ "$c" = 200 ] || fail "metrics with the read token: HTTP $c"; ok
c=$(code $M -H "Authorization: Bearer $TOK" "$AURL/v1/node"); [ "$c" = 200 ] || fail "node view with the control token: HTTP $c"; ok
B='{"lease_s":30,"controller":"t","generation":1,"gpus":[{"index":0,"cap_w":400}]}'
c=$(code $M -X PUT -H "Authorization: Bearer $RTOK" --data-binary "$B" "$AURL/v1/caps")
[ "$c" = 401 ] || fail "the read token set caps: HTTP $c, expected 401"; ok
# client certificates required: no fast trigger datagrams (a datagram,
# keyed by the bearer token alone, set 700 -> 200 W without a certificate)
contains "$T/agent.log" "fast trigger datagrams: off: --tls-client-ca requires a client certificate"
c=$(code $M -H "Authorization: Bearer $TOK" "$AURL/v1/control"); [ "$c" = 200 ] || fail "GET /v1/control: HTTP $c"; ok
lacks "$T/body" "fast_trigger_port"

# ---- controller configuration: no token in cleartext to another host
cfg() { # FILE AGENT-JSON
  cat >"$1" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5, "baseline_window_s": 2,
 "lease_s": 30, "agents": [$2]}
EOF
}
cfg "$T/bad1.json" "{\"name\": \"n1\", \"url\": \"http://node1.invalid:9477\", \"token_file\": \"$T/atok\"}"
expect_error 2 "cleartext" "$CTL" --config "$T/bad1.json"
for u in "http://127.0.0.1@node1.invalid:9477" "http://127.example.invalid:9477" "http://localhost.invalid:9477" "http://[::2]:9477"; do
  cfg "$T/bad1.json" "{\"name\": \"n1\", \"url\": \"$u\", \"token_file\": \"$T/atok\"}"
  expect_error 2 "cleartext" "$CTL" --config "$T/bad1.json"
done
cfg "$T/bad2.json" "{\"name\": \"n1\", \"url\": \"http://127.0.0.1:1\", \"token_file\": \"$T/atok\", \"ca_file\": \"$P/ca.pem\"}"
expect_error 2 "need an https:// url" "$CTL" --config "$T/bad2.json"
cfg "$T/bad3.json" "{\"name\": \"n1\", \"url\": \"https://127.0.0.1:1\", \"token_file\": \"$T/atok\", \"client_cert\": \"$P/ctl.pem\"}"
expect_error 2 "go together" "$CTL" --config "$T/bad3.json"
cfg "$T/bad4.json" "{\"name\": \"n1\", \"url\": \"https://127.0.0.1:1\", \"token_file\": \"$T/atok\", \"colour\": 1}"
expect_error 2 "agents[0].colour: unknown key" "$CTL" --config "$T/bad4.json"

# ---- without the agent's CA the controller cannot reach it
cfg "$T/noca.json" "{\"name\": \"n1\", \"url\": \"$AURL\", \"token_file\": \"$T/atok\", \"read_token_file\": \"$T/rtok\", \"client_cert\": \"$P/ctl.pem\", \"client_key\": \"$P/ctl.key\"}"
start_daemon "controller without the CA" "$T/ctl0.log" "$T/c0.port" "$CTL" --config "$T/noca.json" --port-file "$T/c0.port"
C0=$DPID; C0URL=http://127.0.0.1:$DPORT
wait_for 30 "the controller to report a certificate error without the agent's CA" \
  'curl -s -m 5 "$C0URL/v1/status" | grep -q "\"up\":false,\"error\":\"[^\"]*[Cc]ertificate"'
curl -s -m 5 "$C0URL/v1/status" | grep -q '"job_id":"j1"' && fail "the controller read the agent without trusting its certificate"; ok
stop_daemon $C0 TERM
rm -f "$T/ctl.db"

# ---- with CA, client certificate and both tokens: collects and caps over mTLS
cfg "$T/ctl.json" "{\"name\": \"n1\", \"url\": \"$AURL\", \"token_file\": \"$T/atok\", \"read_token_file\": \"$T/rtok\", \"ca_file\": \"$P/ca.pem\", \"client_cert\": \"$P/ctl.pem\", \"client_key\": \"$P/ctl.key\"}"
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
CURL=http://127.0.0.1:$DPORT CPID=$DPID
wait_for 30 "the controller to see job j1 over mTLS" 'curl -s -m 5 "$CURL/v1/status" | grep -q "\"job_id\":\"j1\""'
CT=$(cat "$T/ctok")
# an event starting 10 clock seconds from now, after the baseline window
S=$(ISO $(awk -v n="$(NOW)" 'BEGIN{printf "%.0f", n + 10}'))
curl -s -m 20 -o "$T/ev" -X POST -H "Authorization: Bearer $CT" -H 'Content-Type: application/json' \
  --data-binary "{\"id\":\"m30\",\"start\":\"$S\",\"duration_s\":600,\"reduction_pct\":30}" "$CURL/v1/events" >/dev/null
grep -q '"id":"m30"' "$T/ev" || { cat "$T/ev" >&2; fail "event not accepted"; }; ok
capw() { curl -s -m 5 --cacert "$P/ca.pem" $M -H "Authorization: Bearer $RTOK" "$AURL/metrics" |
  awk -F'[ {}]' '$1=="pfi_gpu_power_cap_watts" && index($0, "gpu=\"0\""){print $NF}'; }
wait_for 40 "the event's cap on GPU 0 over mTLS" 'num "$(capw)" "<" 690'
echo "cap on GPU 0 under the event, set over mTLS: $(capw) W"
stop_daemon "$CPID" TERM

# ---- TLS without client certificates (issue 41): datagrams would cross in clear, so none
# unless fast_path_cleartext; the trigger's caps go by HTTPS (its latency printed)
start_daemon agent2 "$T/agent2.log" "$T/a2.port" "$PFI_AGENT" \
  --backend "sim:gpus=4,job=j2:moe-ft-qwen30ba3b-x8@0-3,load=0,state=$T/hw2.json" \
  --listen 127.0.0.1:0 --port-file "$T/a2.port" --token-file "$T/atok" \
  --tls-cert "$P/agent.pem" --tls-key "$P/agent.key" --state-file "$T/state2.json" --interval 0.2 --log "$T/agent2.log"
A2URL=https://127.0.0.1:$DPORT
c=$(code -H "Authorization: Bearer $TOK" "$A2URL/v1/control"); [ "$c" = 200 ] || fail "agent2 /v1/control: HTTP $c"; ok
contains "$T/body" "fast_trigger_port" # the agent offers datagrams; the controller decides
tls_trigger() { # NAME EXTRA-CONFIG: a controller on agent2, a 20% trigger; its log in $T/NAME.log
  TLOG=$T/$1.log
  rm -f "$T/ctl.db"
  cat >"$T/$1.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 0.5, "baseline_window_s": 2,
 "lease_s": 30$2, "agents": [{"name": "n2", "url": "$A2URL", "token_file": "$T/atok", "ca_file": "$P/ca.pem"}]}
EOF
  start_daemon "$1" "$T/$1.log" "$T/$1.port" "$CTL" --config "$T/$1.json" --port-file "$T/$1.port"
  TPID=$DPID; TURL=http://127.0.0.1:$DPORT
  wait_counter 30 "$TURL" pfi_ctl_cycles_total 6
  c=$(curl -s -m 20 -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CT" \
    --data-binary '{"reduction_pct": 20, "id": "tt"}' "$TURL/v1/trigger")
  [ "$c" = 201 ] || { cat "$T/body" >&2; fail "$1: trigger HTTP $c"; }; ok
  wait_for 30 "$1: the trigger's caps pushed" 'grep -q "trigger tt: caps pushed" "$TLOG"'
  echo "figure ($1): $(grep -o 'trigger tt: caps pushed[^;]*' "$TLOG")"
  stop_daemon "$TPID" TERM
}
tls_trigger tls ""
contains "$T/tls.log" "agent n2: https: no fast trigger datagrams (they are authenticated, not encrypted); fast_path_cleartext: true allows them"
contains "$T/tls.log" "(0 by datagram; 0 failed)"
tls_trigger tlsclear ', "fast_path_cleartext": true'
contains "$T/tlsclear.log" "(1 by datagram; 0 failed)"
lacks "$T/tlsclear.log" "no fast trigger datagrams"
done_ok
