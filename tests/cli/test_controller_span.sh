#!/bin/sh
# test_controller_span.sh — a job that spans two nodes is one job across
# their agents (GPUs and power summed, one allocation, the same per-GPU cap
# on both), and the controller's API over TLS: HTTPS with the bundled test
# certificate, the token still required, plain HTTP on that port refused;
# the OpenADR 3 poller (a VTN's event list served by a fixture: a site
# IMPORT_CAPACITY_LIMIT becomes a GPU target less the non-GPU offset).
# Shared clock 20x faster.
. "$SRC/tests/cli/lib.sh"
: "${PFI_AGENT:?}"
CTL=${PFI_CONTROLLER_BIN:-$(dirname "$PFI_AGENT")/pfi-controller}
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
CERT=$SRC/tests/data/tls/cert.pem
KEY=$SRC/tests/data/tls/key.pem

# two nodes: "big" on GPUs 0-3 of each, one single-node job on each
for n in 1 2; do
  other=$([ $n = 1 ] && echo dense-pt-llama70b-x8-compile || echo moe-pt-gptoss20b-x8-ep1-nocompile)
  start_daemon "agent $n" "$T/a$n.log" "$T/a$n.port" "$PFI_AGENT" \
    --backend "sim:gpus=8,job=big:moe-ft-qwen30ba3b-x8@0-3,job=n$n:$other@4-7,load=0,seed=$n,state=$T/hw$n.json" \
    --listen 127.0.0.1:0 --port-file "$T/a$n.port" --token-file "$T/atok" --state-file "$T/a$n.state" --interval 1 \
    --log "$T/a$n.log"
done
P1=$(cat "$T/a1.port"); P2=$(cat "$T/a2.port")
# a VTN: one planned IMPORT_CAPACITY_LIMIT event of 25 kW (site), a day ahead
OS=$(date -u -d "@$(( $(date +%s) + 86400 * 20 ))" +%Y-%m-%dT%H:%M:%SZ)
printf '[{"id":"vtn-1","intervalPeriod":{"start":"%s","duration":"PT2H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[25]}]}]},
  {"id":"vtn-2","intervalPeriod":{"start":"%s","duration":"PT1H"},"intervals":[{"id":0,"payloads":[{"type":"PRICE","values":[0.3]}]}]}]\n' "$OS" "$OS" >"$T/vtn.json"
start_daemon "VTN fixture" "$T/f.log" "$T/f.port" "$TOOLS/http_fixture" "$T/f.port" "$T/vtn.json"
FP=$DPORT
printf '{"listen": "127.0.0.1:0", "token_file": "%s/ctok", "db": "%s/ctl.db", "control_period_s": 20, "baseline_window_s": 30,
 "lease_s": 60, "default_tier": 3, "tls_cert": "%s", "tls_key": "%s",
 "non_gpu_offset_kw": 4, "openadr": {"poll_url": "http://127.0.0.1:%s/file", "poll_s": 20},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"},
            {"name": "n2", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"}]}\n' \
  "$T" "$T" "$CERT" "$KEY" "$FP" "$P1" "$T" "$P2" "$T" >"$T/ctl.json"
start_daemon controller "$T/ctl.log" "$T/c.port" "$CTL" --config "$T/ctl.json" --port-file "$T/c.port"
CP=$DPORT
URL=https://127.0.0.1:$CP
tget() { curl -s -m 5 --cacert "$CERT" "$@"; }
# control periods (20 clock s = 1 s) passed: a positive signal of time
cycles() { tget "$URL/metrics" | awk '$1 == "pfi_ctl_cycles_total" {print $2}'; }

# ---- TLS ----
[ "$(tget -o "$T/body" -w '%{http_code}' "$URL/healthz")" = 200 ] || fail "HTTPS /healthz"; ok
if curl -s -m 3 -o /dev/null "http://127.0.0.1:$CP/healthz"; then fail "plain HTTP answered on the TLS port"; fi
ok
# the client verifies the certificate: without the CA it refuses
if curl -s -m 3 -o /dev/null "$URL/healthz"; then fail "the test certificate was accepted without --cacert"; fi
ok

# ---- the OpenADR poller ----
wait_for 30 "the polled event vtn-1" 'tget "$URL/v1/events/vtn-1" | grep -q "\"status\":\"scheduled\""'
tget "$URL/v1/events/vtn-1" >"$T/ev"
contains "$T/ev" '"source":"openadr"'
contains "$T/ev" '"target_kw":21'
contains "$T/ev" '"duration_s":7200'
[ "$(tget -o /dev/null -w '%{http_code}' "$URL/v1/events/vtn-2")" = 404 ] || fail "an event without a capacity payload was taken"; ok

# ---- one job across two agents ----
# baselines: 30 clock s = two periods of 20 s, with both agents and job big seen
wait_for 30 "baselines (3 periods)" 'num "$(cycles)" ">=" 3'
wait_for 30 "job big on both agents" 'tget "$URL/v1/status" >"$T/st"; grep -qF "\"job_id\":\"big\",\"tier\":3,\"gpus\":8" "$T/st" && grep -qF "\"agents_up\":2" "$T/st"'
contains "$T/st" '"job_id":"big","tier":3,"gpus":8'
contains "$T/st" '"agents_up":2'
NOW() { awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.0f", e + (w - e) * 20}'; }
S=$(date -u -d "@$(NOW)" +%Y-%m-%dT%H:%M:%SZ)
EV="{\"id\":\"span30\",\"start\":\"$S\",\"duration_s\":200,\"reduction_pct\":30}"
[ "$(tget -o "$T/body" -w '%{http_code}' -X POST --data-binary "$EV" "$URL/v1/events")" = 401 ] || fail "POST without token over TLS"; ok
[ "$(tget -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" --data-binary "$EV" "$URL/v1/events")" = 201 ] \
  || { cat "$T/body" >&2; fail "POST /v1/events over TLS"; }
ok
k0=$(cycles)
acap() { curl -s -m 5 "http://127.0.0.1:$1/metrics" | awk -F'[ {}]' -v g="$2" '$1=="pfi_gpu_power_cap_watts" && index($0, "gpu=\"" g "\""){print $NF}'; }
# caps move every period (1 s here): compare both agents between two pushes
same() {
  for g in 0 1 2 3; do num "$(acap $P1 $g)" "<" 700 && [ "$(acap $P1 $g)" = "$(acap $P2 $g)" ] || return 1; done
}
wait_for 30 "job big capped alike on both agents" same
ok
echo "job big across two agents: $(acap $P1 0) W per GPU on both"
# one allocation for the job, for all 8 GPUs: allocation ~ per-GPU cap x 8
# (within the learned power/cap ratio); read between two pushes
one_alloc() {
  tget "$URL/metrics" >"$T/m"
  n=$(grep -c "^pfi_ctl_job_allocation_watts{hpc_job=\"big\"," "$T/m")
  alloc=$(awk '/^pfi_ctl_job_allocation_watts\{hpc_job="big",/{print $2}' "$T/m")
  c0=$(acap $P1 0)
  [ "$n" -eq 1 ] && awk -v a="$alloc" -v c="$c0" 'BEGIN{r = a / (8 * c); exit !(r > 0.8 && r <= 1.01)}'
}
wait_for 30 "one allocation for big, about its cap x 8" one_alloc
[ "$n" -eq 1 ] || fail "big allocated $n times"; ok
echo "job big: allocation $alloc W, cap $c0 W x 8"
# and the cluster is at its target, counted in control periods after the start
at_target() {
  tget "$URL/v1/status" >"$T/st"
  B=$(sed -n 's/.*"budget_w":\([-0-9.e+]*\).*/\1/p' "$T/st"); M=$(sed -n 's/.*"measured_w":\([-0-9.e+]*\).*/\1/p' "$T/st")
  [ -n "$B" ] && num "$M" "<=" "$(awk -v b="$B" 'BEGIN{print b * 1.02}')"
}
wait_for 30 "measured power within target + 2%" at_target
k=$(( $(cycles) - k0 ))
[ "$k" -le 6 ] || fail "target + 2% reached only $k periods after the start"; ok
echo "at target ($M W, target $B W) $k periods after the start"
# the end: every GPU back at its baseline on both nodes
wait_for 60 "event span30 to end" 'tget "$URL/v1/events/span30" | grep -q "\"status\":\"done\""'
wait_for 30 "caps restored on both nodes" '[ "$(acap $P1 0)" = 700 ] && [ "$(acap $P2 0)" = 700 ]'
ok
done_ok
