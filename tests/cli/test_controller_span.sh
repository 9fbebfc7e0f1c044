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
CTL=${PFI_CONTROLLER:-$(dirname "$PFI_AGENT")/pfi-controller}
export PFI_TIME_SCALE=20 PFI_EPOCH=$(date +%s)
new_token "$T/atok" "$T/ctok"
CTOK=$(cat "$T/ctok")
kill_daemons_on_exit
CERT=$SRC/tests/data/tls/cert.pem
KEY=$SRC/tests/data/tls/key.pem

# two nodes: "big" on GPUs 0-3 of each, one single-node job on each
for n in 1 2; do
  other=$([ $n = 1 ] && echo dense-pt-llama70b-x8-compile || echo moe-pt-gptoss20b-x8-ep1-nocompile)
  "$PFI_AGENT" --backend "sim:gpus=8,job=big:moe-ft-qwen30ba3b-x8@0-3,job=n$n:$other@4-7,load=0,seed=$n,state=$T/hw$n.json" \
    --listen 127.0.0.1:0 --port-file "$T/a$n.port" --token-file "$T/atok" --state-file "$T/a$n.state" --interval 1 \
    --log "$T/a$n.log" &
  PIDS="$PIDS $!"
done
for n in 1 2; do i=0; while [ ! -s "$T/a$n.port" ]; do i=$((i+1)); [ $i -lt 200 ] || fail "agent $n did not start"; sleep 0.05; done; done
P1=$(cat "$T/a1.port"); P2=$(cat "$T/a2.port")
# a VTN: one planned IMPORT_CAPACITY_LIMIT event of 25 kW (site), a day ahead
OS=$(date -u -d "@$(( $(date +%s) + 86400 * 20 ))" +%Y-%m-%dT%H:%M:%SZ)
printf '[{"id":"vtn-1","intervalPeriod":{"start":"%s","duration":"PT2H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[25]}]}]},
  {"id":"vtn-2","intervalPeriod":{"start":"%s","duration":"PT1H"},"intervals":[{"id":0,"payloads":[{"type":"PRICE","values":[0.3]}]}]}]\n' "$OS" "$OS" >"$T/vtn.json"
"$TOOLS/http_fixture" "$T/f.port" "$T/vtn.json" &
PIDS="$PIDS $!"
i=0; while [ ! -s "$T/f.port" ]; do i=$((i+1)); [ $i -lt 200 ] || fail "fixture did not start"; sleep 0.05; done
FP=$(cat "$T/f.port")
printf '{"listen": "127.0.0.1:0", "token_file": "%s/ctok", "db": "%s/ctl.db", "control_period_s": 20, "baseline_window_s": 30,
 "lease_s": 60, "default_tier": 3, "tls_cert": "%s", "tls_key": "%s",
 "non_gpu_offset_kw": 4, "openadr": {"poll_url": "http://127.0.0.1:%s/file", "poll_s": 20},
 "agents": [{"name": "n1", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"},
            {"name": "n2", "url": "http://127.0.0.1:%s", "token_file": "%s/atok"}]}\n' \
  "$T" "$T" "$CERT" "$KEY" "$FP" "$P1" "$T" "$P2" "$T" >"$T/ctl.json"
"$CTL" --config "$T/ctl.json" --port-file "$T/c.port" 2>"$T/ctl.log" &
PIDS="$PIDS $!"
i=0; while [ ! -s "$T/c.port" ]; do i=$((i+1)); [ $i -lt 200 ] || { cat "$T/ctl.log" >&2; fail "controller did not start"; }; sleep 0.05; done
CP=$(cat "$T/c.port")
URL=https://127.0.0.1:$CP
tget() { curl -s --cacert "$CERT" "$@"; }

# ---- TLS ----
[ "$(tget -o "$T/body" -w '%{http_code}' "$URL/healthz")" = 200 ] || fail "HTTPS /healthz"; ok
if curl -s -m 3 -o /dev/null "http://127.0.0.1:$CP/healthz"; then fail "plain HTTP answered on the TLS port"; fi
ok
# the client verifies the certificate: without the CA it refuses
if curl -s -m 3 -o /dev/null "$URL/healthz"; then fail "the test certificate was accepted without --cacert"; fi
ok

# ---- the OpenADR poller ----
i=0; until tget "$URL/v1/events/vtn-1" | grep -q '"status":"scheduled"'; do i=$((i+1)); [ $i -lt 100 ] || fail "polled event never appeared"; sleep 0.05; done
tget "$URL/v1/events/vtn-1" >"$T/ev"
contains "$T/ev" '"source":"openadr"'
contains "$T/ev" '"target_kw":21'
contains "$T/ev" '"duration_s":7200'
[ "$(tget -o /dev/null -w '%{http_code}' "$URL/v1/events/vtn-2")" = 404 ] || fail "an event without a capacity payload was taken"; ok

# ---- one job across two agents ----
sleep 3 # baselines (30 clock s)
tget "$URL/v1/status" >"$T/st"
contains "$T/st" '"job_id":"big","tier":3,"gpus":8'
contains "$T/st" '"agents_up":2'
NOW() { awk -v e="$PFI_EPOCH" -v w="$(date +%s.%N)" 'BEGIN{printf "%.0f", e + (w - e) * 20}'; }
S=$(date -u -d "@$(NOW)" +%Y-%m-%dT%H:%M:%SZ)
EV="{\"id\":\"span30\",\"start\":\"$S\",\"duration_s\":200,\"reduction_pct\":30}"
[ "$(tget -o "$T/body" -w '%{http_code}' -X POST --data-binary "$EV" "$URL/v1/events")" = 401 ] || fail "POST without token over TLS"; ok
[ "$(tget -o "$T/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $CTOK" --data-binary "$EV" "$URL/v1/events")" = 201 ] \
  || { cat "$T/body" >&2; fail "POST /v1/events over TLS"; }
ok
acap() { curl -s "http://127.0.0.1:$1/metrics" | awk -F'[ {}]' -v g="$2" '$1=="pfi_gpu_power_cap_watts" && index($0, "gpu=\"" g "\""){print $NF}'; }
# caps move every period (1 s here): compare both agents between two pushes
same() {
  for g in 0 1 2 3; do [ -n "$(acap $P1 $g)" ] && [ "$(acap $P1 $g)" = "$(acap $P2 $g)" ] || return 1; done
}
sleep 1.5
i=0; until same; do i=$((i+1)); [ $i -lt 20 ] || fail "job big: caps differ between its agents ($(acap $P1 0) vs $(acap $P2 0) W)"; sleep 0.1; done
ok
for g in 0 1 2 3; do a=$(acap $P1 $g); awk -v c="$a" 'BEGIN{exit !(c < 700)}' || fail "job big not capped ($a W)"; ok; done
echo "job big across two agents: $(acap $P1 0) W per GPU on both"
# one allocation for the job, for all 8 GPUs: allocation ~ per-GPU cap x 8 (within the learned power/cap ratio)
tget "$URL/metrics" >"$T/m"
n=$(grep -c "^pfi_ctl_job_allocation_watts{job=\"big\"," "$T/m")
[ "$n" -eq 1 ] || fail "big allocated $n times"; ok
alloc=$(awk '/^pfi_ctl_job_allocation_watts\{job="big",/{print $2}' "$T/m")
c0=$(acap $P1 0)
awk -v a="$alloc" -v c="$c0" 'BEGIN{r = a / (8 * c); exit !(r > 0.8 && r <= 1.01)}' || fail "allocation $alloc W vs cap $c0 W x 8"; ok
# and the cluster is at its target (two periods after the start)
tget "$URL/v1/status" >"$T/st"
B=$(sed -n 's/.*"budget_w":\([-0-9.e+]*\).*/\1/p' "$T/st"); M=$(sed -n 's/.*"measured_w":\([-0-9.e+]*\).*/\1/p' "$T/st")
awk -v b="$B" -v m="$M" 'BEGIN{exit !(m <= b * 1.02)}' || fail "measured $M W over target $B W + 2%"; ok
# the end: every GPU back at its baseline on both nodes
i=0; until tget "$URL/v1/events/span30" | grep -q '"status":"done"'; do i=$((i+1)); [ $i -lt 600 ] || fail "event did not end"; sleep 0.05; done
i=0; until [ "$(acap $P1 0)" = 700 ] && [ "$(acap $P2 0)" = 700 ]; do i=$((i+1)); [ $i -lt 200 ] || fail "caps not restored"; sleep 0.05; done
ok
done_ok
