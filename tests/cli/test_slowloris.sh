#!/bin/sh
# test_slowloris.sh — slow clients cannot lock out legitimate ones (issue 14
# item 4). A bounded slowloris (tests/tools/slowloris: 600 connections from
# 127.0.0.2, one header byte every 2 s, for 25 s) runs against the agent and
# then against the controller while the test, from 127.0.0.1, scrapes
# /metrics, pushes caps on the agent's control listener and reads the
# controller's status. Asserted: every legitimate request is answered (with
# a generous deadline, not a timing threshold; the latencies are printed),
# the per-address limit kept the attacker to a few connections, and the
# request deadline shut a connection that kept trickling bytes. Talks to
# 127.0.0.1/127.0.0.2 only; bounded in count and time; stops what it started.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}" "${TOOLS:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
SL=$TOOLS/slowloris
command -v curl >/dev/null || fail "curl is needed (scripts/bootstrap.sh test)"
kill_daemons_on_exit

ms() { date +%s%3N; }

new_token "$T/atok" "$T/ctok"
TOKEN=$(cat "$T/atok")
start_daemon agent "$T/agent.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=8,load=0,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --control-listen 127.0.0.1:0 --control-port-file "$T/a.cport" \
  --token-file "$T/atok" --state-file "$T/state.json" --interval 0.2 --log "$T/agent.log"
AP=$DPID
wait_for 30 "the agent's control port file" '[ -s "$T/a.cport" ]'
AURL=http://127.0.0.1:$(cat "$T/a.port")
CURL=http://127.0.0.1:$(cat "$T/a.cport")

# the control API lives on the control listener only
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 -X PUT -H "Authorization: Bearer $TOKEN" \
  --data-binary '{"lease_s":60,"controller":"t","generation":1,"gpus":[{"index":0,"cap_w":400}]}' "$AURL/v1/caps")
[ "$code" = 404 ] || fail "PUT /v1/caps on the main listener answered $code, expected 404 with --control-listen"; ok
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$CURL/metrics")
[ "$code" = 404 ] || fail "GET /metrics on the control listener answered $code, expected 404"; ok

# legit ROUND: one scrape and one push, each must be answered; prints latencies
gen=1
legit_agent() {
  t0=$(ms)
  code=$(curl -s -o "$T/m" -w '%{http_code}' --max-time 25 "$AURL/metrics")
  t1=$(ms)
  [ "$code" = 200 ] && grep -q '^pfi_gpu_power_cap_watts' "$T/m" || fail "scrape under attack: HTTP $code"
  gen=$((gen + 1))
  code=$(curl -s -o "$T/p" -w '%{http_code}' --max-time 25 -X PUT -H "Authorization: Bearer $TOKEN" \
    --data-binary "{\"lease_s\":60,\"controller\":\"t\",\"generation\":$gen,\"gpus\":[{\"index\":0,\"cap_w\":$((400 + gen))}]}" "$CURL/v1/caps")
  t2=$(ms)
  [ "$code" = 200 ] || { cat "$T/p" >&2; fail "push under attack: HTTP $code"; }
  echo "agent under slowloris: scrape $((t1 - t0)) ms, push $((t2 - t1)) ms"
  ok
}

# ---- attack on the agent's main port and its control port at once ----
AMAIN=$(cat "$T/a.port"); ACTL=$(cat "$T/a.cport")
"$SL" 127.0.0.1 "$AMAIN" 127.0.0.2 600 25 2 >"$T/sl1.out" 2>&1 &
S1=$!
"$SL" 127.0.0.1 "$ACTL" 127.0.0.3 300 25 2 >"$T/sl2.out" 2>&1 &
S2=$!
PIDS="$PIDS $S1 $S2"
# legitimate traffic throughout the attack (bounded: 6 rounds)
for r in 1 2 3 4 5 6; do legit_agent; sleep 2; done
# by now (> 10 s) the request deadline has shut trickling connections
n=$(curl -s --max-time 25 "$AURL/metrics" | awk '$1=="pfi_agent_slow_connections_closed_total"{print $2}')
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "no slow connection was shut down by the request deadline (counter '$n')"; ok
echo "agent: slow connections shut by the request deadline so far: $n"
wait $S1 $S2
cat "$T/sl1.out" "$T/sl2.out"
# the per-address limit held the attacker to a handful of simultaneous connections
mo=$(awk '{print $8}' "$T/sl1.out")
[ -n "$mo" ] || fail "no slowloris report"
cl=$(awk '{print $6}' "$T/sl1.out")
[ "$cl" -gt 0 ] || fail "the agent closed none of the attacker's connections"; ok
kill -0 $AP || fail "the agent died under the attack"; ok

# ---- attack on the controller ----
P1=$AMAIN
cat >"$T/ctl.json" <<EOF
{"listen": "127.0.0.1:0", "token_file": "$T/ctok", "db": "$T/ctl.db", "control_period_s": 1, "baseline_window_s": 5,
 "lease_s": 30, "agents": [{"name": "n1", "url": "http://127.0.0.1:$ACTL", "token_file": "$T/atok"}]}
EOF
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
CPID=$DPID
CURLC=http://127.0.0.1:$(cat "$T/c.port")
"$SL" 127.0.0.1 "$(cat "$T/c.port")" 127.0.0.2 600 20 2 >"$T/sl3.out" 2>&1 &
S3=$!; PIDS="$PIDS $S3"
for r in 1 2 3 4 5; do
  t0=$(ms)
  code=$(curl -s -o "$T/s" -w '%{http_code}' --max-time 25 "$CURLC/v1/status")
  t1=$(ms)
  [ "$code" = 200 ] || fail "controller status under attack: HTTP $code"
  echo "controller under slowloris: status $((t1 - t0)) ms"
  ok
  sleep 2
done
wait $S3
cat "$T/sl3.out"
kill -0 $CPID || fail "the controller died under the attack"; ok
done_ok
